// The smoke scenario with OpenAPI Generator 4.3.1's go client (package windsock), generated from
// the served 3.0 rendering. Prints the report test/generators/scenarios/common.ts describes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"

	"github.com/antihax/optional"

	"windsock"
)

const missingBuild = 999999

var nextLink = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

func setting(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "%s is not set\n", name)
		os.Exit(1)
	}
	return v
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

// refused reads a refused call's status and typed error body.
func refused(err error, status int) map[string]interface{} {
	var apiErr windsock.GenericOpenAPIError
	if !errors.As(err, &apiErr) {
		must(fmt.Errorf("not an API error: %v", err), "refused")
	}
	model, ok := apiErr.Model().(windsock.ApiError)
	if !ok {
		must(fmt.Errorf("no typed body: %s", apiErr.Body()), "refused")
	}
	fields := []string{}
	for _, e := range model.Errors {
		fields = append(fields, e.Field)
	}
	return map[string]interface{}{"status": status, "message": model.Message, "fields": fields}
}

func main() {
	cfg := windsock.NewConfiguration()
	cfg.BasePath = setting("WINDSOCK_URL")
	client := windsock.NewAPIClient(cfg)
	ctx := context.WithValue(context.Background(), windsock.ContextAccessToken, setting("WINDSOCK_TOKEN"))
	org := setting("WINDSOCK_ORG")

	listed, _, err := client.PipelinesApi.ListPipelines(ctx, org, nil)
	must(err, "listPipelines")
	created, _, err := client.PipelinesApi.CreatePipeline(ctx, org, windsock.CreatePipelineRequest{
		Name: setting("WINDSOCK_NEW_PIPELINE"), Repository: "git@github.com:acme/app.git", Configuration: "steps:\n  - command: make test\n",
	})
	must(err, "createPipeline")
	message := "From a generated client"
	request := func(branch string) windsock.CreateBuildRequest {
		// message is nullable in the contract: the client models it as a pointer.
		return windsock.CreateBuildRequest{Commit: "HEAD", Branch: branch, Message: &message}
	}
	build, _, err := client.BuildsApi.CreateBuild(ctx, org, created.Slug, request("main"))
	must(err, "createBuild")
	got, _, err := client.BuildsApi.GetBuild(ctx, org, created.Slug, build.Number, nil)
	must(err, "getBuild")

	pages := [][]int64{}
	for page := int32(1); page != 0; {
		list, res, err := client.BuildsApi.ListPipelineBuilds(ctx, org, setting("WINDSOCK_PIPELINE"), &windsock.ListPipelineBuildsOpts{Page: optional.NewInt32(page), PerPage: optional.NewInt32(2)})
		must(err, "listPipelineBuilds")
		numbers := []int64{}
		for _, b := range list {
			numbers = append(numbers, int64(b.Number))
		}
		pages = append(pages, numbers)
		page = 0
		if m := nextLink.FindStringSubmatch(res.Header.Get("Link")); m != nil {
			u, err := url.Parse(m[1])
			must(err, "Link")
			n, err := strconv.Atoi(u.Query().Get("page"))
			must(err, "Link page")
			page = int32(n)
		}
	}

	_, res, err := client.BuildsApi.CreateBuild(ctx, org, created.Slug, request(""))
	invalid := refused(err, res.StatusCode)
	_, res, err = client.BuildsApi.GetBuild(ctx, org, created.Slug, missingBuild, nil)
	missing := refused(err, res.StatusCode)
	delete(missing, "fields")

	slugs := []string{}
	for _, p := range listed {
		slugs = append(slugs, p.Slug)
	}
	out, err := json.Marshal(map[string]interface{}{
		"listed":  slugs,
		"created": created.Slug,
		"build":   map[string]interface{}{"number": build.Number, "state": build.State},
		"got":     got.Number,
		"pages":   pages,
		"invalid": invalid,
		"missing": missing,
	})
	must(err, "report")
	os.Stdout.Write(out)
}
