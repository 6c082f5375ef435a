// windsock-smoke makes the calls a consumer's first program makes with the Go client and prints
// what it saw as JSON (test/sdk/go.test.ts runs it against a live Windsock and asserts on it):
// list pipelines, create a build, page through builds, list flaky tests, and the typed errors of
// a refused build and an unknown pipeline. With WINDSOCK_BURST_ORG it also lists that
// organization's pipelines WINDSOCK_BURST times, to meet the rate limit and back off.
//
//	WINDSOCK_URL=http://127.0.0.1:3000 WINDSOCK_TOKEN=... WINDSOCK_ORG=acme \
//	WINDSOCK_PIPELINE=app WINDSOCK_SUITE=unit WINDSOCK_PER_PAGE=2 go run ./cmd/windsock-smoke
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	windsock "windsock.dev/client"
)

type report struct {
	Pipelines []string        `json:"pipelines"`
	Created   *windsock.Build `json:"created"`
	// Pages holds each page's build numbers, in the order the pager read them.
	Pages      [][]int64 `json:"pages"`
	Flaky      []flaky   `json:"flaky"`
	Validation *apiError `json:"validation"`
	NotFound   *apiError `json:"not_found"`
	Burst      *burst    `json:"burst,omitempty"`
}

type flaky struct {
	Name      string `json:"name"`
	Instances int64  `json:"instances"`
}

type apiError struct {
	Status  int                   `json:"status"`
	Message string                `json:"message"`
	Errors  []windsock.FieldError `json:"errors"`
}

type burst struct {
	Calls   int   `json:"calls"`
	Retries []int `json:"retries"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "windsock-smoke:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	org, pipeline, suite := os.Getenv("WINDSOCK_ORG"), os.Getenv("WINDSOCK_PIPELINE"), os.Getenv("WINDSOCK_SUITE")
	perPage, _ := strconv.Atoi(os.Getenv("WINDSOCK_PER_PAGE"))
	client := windsock.NewClient(os.Getenv("WINDSOCK_URL"), os.Getenv("WINDSOCK_TOKEN"))
	var out report

	pipelines, err := client.ListPipelines(org, windsock.ListOptions{PerPage: perPage}).All(ctx)
	if err != nil {
		return fmt.Errorf("list pipelines: %w", err)
	}
	for _, p := range pipelines {
		out.Pipelines = append(out.Pipelines, p.Slug)
	}

	message := "Built by the Go client"
	out.Created, err = client.CreateBuild(ctx, org, pipeline, windsock.CreateBuildRequest{
		Commit:   "HEAD",
		Branch:   "main",
		Message:  &message,
		Env:      map[string]string{"FROM": "go"},
		MetaData: map[string]string{"client": "go"},
	})
	if err != nil {
		return fmt.Errorf("create build: %w", err)
	}

	pager := client.ListBuilds(org, pipeline, windsock.ListBuildsOptions{ListOptions: windsock.ListOptions{PerPage: perPage}, Branch: "main"})
	for pager.More() {
		builds, err := pager.Next(ctx)
		if err != nil {
			return fmt.Errorf("list builds: %w", err)
		}
		numbers := []int64{}
		for _, b := range builds {
			numbers = append(numbers, b.Number)
		}
		out.Pages = append(out.Pages, numbers)
	}

	tests, err := client.ListFlakyTests(org, suite, windsock.ListFlakyTestsOptions{}).All(ctx)
	if err != nil {
		return fmt.Errorf("list flaky tests: %w", err)
	}
	for _, t := range tests {
		out.Flaky = append(out.Flaky, flaky{Name: t.Name, Instances: t.Instances})
	}

	_, err = client.CreateBuild(ctx, org, pipeline, windsock.CreateBuildRequest{Commit: "HEAD", Branch: ""})
	if out.Validation, err = expectAPIError(err); err != nil {
		return fmt.Errorf("a build without a branch: %w", err)
	}
	_, err = client.CreateBuild(ctx, org, pipeline+"-missing", windsock.CreateBuildRequest{Commit: "HEAD", Branch: "main"})
	if out.NotFound, err = expectAPIError(err); err != nil {
		return fmt.Errorf("a build of an unknown pipeline: %w", err)
	}

	if burstOrg := os.Getenv("WINDSOCK_BURST_ORG"); burstOrg != "" {
		calls, _ := strconv.Atoi(os.Getenv("WINDSOCK_BURST"))
		out.Burst = &burst{Calls: calls, Retries: []int{}}
		client.MaxBackoff = 50 * time.Millisecond
		client.OnRetry = func(e *windsock.ResponseError, _ time.Duration) {
			out.Burst.Retries = append(out.Burst.Retries, e.StatusCode)
		}
		for i := 0; i < calls; i++ {
			if _, err := client.ListPipelines(burstOrg, windsock.ListOptions{}).Next(ctx); err != nil {
				return fmt.Errorf("burst call %d: %w", i+1, err)
			}
		}
	}

	return json.NewEncoder(os.Stdout).Encode(out)
}

func expectAPIError(err error) (*apiError, error) {
	var e *windsock.ResponseError
	if !errors.As(err, &e) {
		return nil, fmt.Errorf("expected an API error, got %v", err)
	}
	return &apiError{Status: e.StatusCode, Message: e.Message, Errors: e.Errors}, nil
}
