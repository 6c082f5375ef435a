// Package windsock is a Go client for Windsock's REST API (the Buildkite REST API v2 dialect).
//
// The request and response types (types.go) are generated from the spec's component schemas
// by quicktype (`npm run generate`); this file is the hand-written transport they travel
// through: Bearer auth, JSON bodies, typed errors (*ResponseError), pages that follow `Link: rel="next"`,
// and a back-off on 429 that waits as long as the server says. Standard library only.
package windsock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one Windsock installation with one API access token.
type Client struct {
	// BaseURL is where Windsock listens, e.g. http://127.0.0.1:3000.
	BaseURL string
	// Token is an API access token, sent as `Authorization: Bearer <Token>`.
	Token string
	// HTTP sends the requests (nil: http.DefaultClient).
	HTTP *http.Client
	// MaxRetries is how many times a request answered 429 is sent again (0: never).
	MaxRetries int
	// MaxBackoff caps one wait after a 429 (0: no cap); the wait is the server's
	// Retry-After or RateLimit-Reset, else 1 s doubling each time.
	MaxBackoff time.Duration
	// OnRetry, when set, is told of each 429 before the client waits and tries again.
	OnRetry func(err *ResponseError, wait time.Duration)
}

// NewClient returns a client that retries a rate-limited request up to 3 times.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: baseURL, Token: token, MaxRetries: 3}
}

// ResponseError is an answer with a status of 400 or more: its status and its body, the spec's
// ApiError (`message`, and for a validation failure the field errors in `errors`).
type ResponseError struct {
	StatusCode int
	APIError
	// RetryAfter is how long the server asked the caller to wait (429, 503), else 0.
	RetryAfter time.Duration
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("windsock: %d %s", e.StatusCode, e.Message)
	for _, f := range e.Errors {
		msg += fmt.Sprintf("; %s: %s", f.Field, f.Code)
	}
	return msg
}

// ListOptions selects one page; zero values leave the server's defaults.
type ListOptions struct {
	Page    int
	PerPage int
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Page > 0 {
		q.Set("page", strconv.Itoa(o.Page))
	}
	if o.PerPage > 0 {
		q.Set("per_page", strconv.Itoa(o.PerPage))
	}
	return q
}

// ListBuildsOptions filters a pipeline's builds.
type ListBuildsOptions struct {
	ListOptions
	Branch string
	Commit string
	State  string
}

// ListFlakyTestsOptions filters a suite's flaky tests (Period: 1hour ... 28days).
type ListFlakyTestsOptions struct {
	ListOptions
	Search string
	Branch string
	Period string
}

func setIf(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// ListPipelines pages through an organization's pipelines.
func (c *Client) ListPipelines(org string, opts ListOptions) *Pager[Pipeline] {
	return newPager[Pipeline](c, "/v2/organizations/"+url.PathEscape(org)+"/pipelines", opts.query())
}

// CreateBuild starts a build of a pipeline.
func (c *Client) CreateBuild(ctx context.Context, org, pipeline string, req CreateBuildRequest) (*Build, error) {
	var build Build
	path := "/v2/organizations/" + url.PathEscape(org) + "/pipelines/" + url.PathEscape(pipeline) + "/builds"
	if _, err := c.do(ctx, http.MethodPost, c.BaseURL+path, req, &build); err != nil {
		return nil, err
	}
	return &build, nil
}

// ListBuilds pages through a pipeline's builds, newest first.
func (c *Client) ListBuilds(org, pipeline string, opts ListBuildsOptions) *Pager[Build] {
	q := opts.query()
	setIf(q, "branch", opts.Branch)
	setIf(q, "commit", opts.Commit)
	setIf(q, "state", opts.State)
	return newPager[Build](c, "/v2/organizations/"+url.PathEscape(org)+"/pipelines/"+url.PathEscape(pipeline)+"/builds", q)
}

// ListFlakyTests pages through a test suite's flaky tests, most recently flaky first.
func (c *Client) ListFlakyTests(org, suite string, opts ListFlakyTestsOptions) *Pager[FlakyTest] {
	q := opts.query()
	setIf(q, "search", opts.Search)
	setIf(q, "branch", opts.Branch)
	setIf(q, "period", opts.Period)
	return newPager[FlakyTest](c, "/v2/analytics/organizations/"+url.PathEscape(org)+"/suites/"+url.PathEscape(suite)+"/flaky-tests", q)
}

// Pager walks a list one page at a time, following each answer's `Link: rel="next"`.
type Pager[T any] struct {
	client *Client
	next   string
}

func newPager[T any](c *Client, path string, q url.Values) *Pager[T] {
	first := c.BaseURL + path
	if len(q) > 0 {
		first += "?" + q.Encode()
	}
	return &Pager[T]{client: c, next: first}
}

// More reports whether another page is to be read.
func (p *Pager[T]) More() bool { return p.next != "" }

// Next reads the next page.
func (p *Pager[T]) Next(ctx context.Context) ([]T, error) {
	if p.next == "" {
		return nil, io.EOF
	}
	var items []T
	header, err := p.client.do(ctx, http.MethodGet, p.next, nil, &items)
	if err != nil {
		return nil, err
	}
	p.next, err = nextLink(p.next, header.Get("Link"))
	return items, err
}

// All reads every remaining page.
func (p *Pager[T]) All(ctx context.Context) ([]T, error) {
	var all []T
	for p.More() {
		items, err := p.Next(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
	}
	return all, nil
}

// nextLink finds rel="next" in a Link header (RFC 8288), resolved against the request's URL.
func nextLink(requestURL, header string) (string, error) {
	for _, link := range strings.Split(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, param := range strings.Split(params, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
			if name != "rel" || !containsWord(strings.Trim(value, `"`), "next") {
				continue
			}
			base, err := url.Parse(requestURL)
			if err != nil {
				return "", err
			}
			ref, err := url.Parse(target[1 : len(target)-1])
			if err != nil {
				return "", fmt.Errorf("windsock: a bad Link target: %w", err)
			}
			return base.ResolveReference(ref).String(), nil
		}
	}
	return "", nil
}

func containsWord(list, word string) bool {
	for _, w := range strings.Fields(list) {
		if w == word {
			return true
		}
	}
	return false
}

// do sends one request (again after a 429, up to MaxRetries times) and decodes a 2xx body into out.
func (c *Client) do(ctx context.Context, method, target string, in, out any) (http.Header, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.Token)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := httpClient.Do(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if res.StatusCode < 400 {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return nil, fmt.Errorf("windsock: %s %s: decoding the answer: %w", method, target, err)
				}
			}
			return res.Header, nil
		}
		apiErr := newResponseError(res, data)
		if res.StatusCode != http.StatusTooManyRequests || attempt >= c.MaxRetries {
			return nil, apiErr
		}
		wait := apiErr.RetryAfter
		if wait <= 0 {
			wait = time.Second << attempt
		}
		if c.MaxBackoff > 0 && wait > c.MaxBackoff {
			wait = c.MaxBackoff
		}
		if c.OnRetry != nil {
			c.OnRetry(apiErr, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func newResponseError(res *http.Response, data []byte) *ResponseError {
	e := &ResponseError{StatusCode: res.StatusCode}
	if json.Unmarshal(data, &e.APIError) != nil || e.Message == "" {
		e.APIError = APIError{Message: http.StatusText(res.StatusCode)}
	}
	for _, h := range []string{"Retry-After", "RateLimit-Reset"} {
		if s, err := strconv.Atoi(res.Header.Get(h)); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
			break
		}
	}
	return e
}
