package admin

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

	"github.com/toolguard/toolguard/journal"
)

// Client calls the admin API of a running toolguard: what the CLI's
// inspection and review commands use.
type Client struct {
	// BaseURL is the admin API's address, e.g. http://127.0.0.1:8481.
	BaseURL string
	// Token is sent as the bearer token; empty sends none.
	Token string
	// HTTP sends the requests; nil means a client with a 30s timeout that
	// ignores HTTP_PROXY (the admin API is never reached through a proxy).
	HTTP *http.Client
	// UnauthorizedHint is added to the detail of a 401 answer: where the
	// caller looks for the token. Empty adds nothing.
	UnauthorizedHint string
}

// fullKeyLen is the length of a key: sha256 in hex.
const fullKeyLen = 64

// defaultHTTP is the HTTP client of a Client without one.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

// StatusError is a non-2xx admin answer; Detail is its problem's detail,
// or its body when it is no problem.
type StatusError struct {
	Status int
	Detail string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.Status, http.StatusText(e.Status), e.Detail)
}

// Steps lists the steps f selects (GET /v1/steps). An answer holds at
// most MaxListLimit steps: Steps follows its next cursor until f.Limit
// steps are here (0: all of them).
func (c *Client) Steps(ctx context.Context, f journal.Filter) ([]StepView, error) {
	q := url.Values{}
	if f.Status != journal.StatusUnknown {
		q.Set("status", f.Status.String())
	}
	if f.HoldSet {
		h := f.Hold.String()
		if f.Hold == journal.HoldNone {
			h = "none"
		}
		q.Set("hold", h)
	}
	if f.Workflow != "" {
		q.Set("workflow", f.Workflow)
	}
	var steps []StepView
	for {
		var out struct {
			Steps []StepView `json:"steps"`
			Next  string     `json:"next"`
		}
		if f.Limit > 0 {
			q.Set("limit", strconv.Itoa(f.Limit-len(steps)))
		}
		if err := c.do(ctx, http.MethodGet, "/v1/steps?"+q.Encode(), nil, &out); err != nil {
			return steps, err
		}
		steps = append(steps, out.Steps...)
		if out.Next == "" || (f.Limit > 0 && len(steps) >= f.Limit) {
			return steps, nil
		}
		q.Set("cursor", out.Next)
	}
}

// Step reads one step (GET /v1/steps/{key}); key may be abbreviated.
func (c *Client) Step(ctx context.Context, key string) (StepView, error) {
	var v StepView
	err := c.do(ctx, http.MethodGet, "/v1/steps/"+url.PathEscape(key), nil, &v)
	return v, err
}

// Events reads up to limit events after seq (GET /v1/events).
func (c *Client) Events(ctx context.Context, after uint64, limit int) ([]journal.Event, error) {
	var out struct {
		Events []journal.Event `json:"events"`
	}
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/events?after=%d&limit=%d", after, limit), nil, &out)
	return out.Events, err
}

// Observations reads the report of the observations of observe mode made
// in the last window (GET /v1/observations?since=).
func (c *Client) Observations(ctx context.Context, window time.Duration) (ObservationReport, error) {
	var rep ObservationReport
	err := c.do(ctx, http.MethodGet, "/v1/observations?since="+url.QueryEscape(window.String()), nil, &rep)
	return rep, err
}

// Approve approves the step of key, which may be abbreviated, with an
// operator's note (POST /v1/steps/{key}/approve).
func (c *Client) Approve(ctx context.Context, key, note string) (StepView, error) {
	var st StepView
	err := c.decide(ctx, key, "approve", map[string]string{"note": note}, &st)
	return st, err
}

// Resolve ends the hold of the step of key, which may be abbreviated, with
// an operator's finding (POST /v1/steps/{key}/resolve).
func (c *Client) Resolve(ctx context.Context, key string, res Resolution) (StepView, error) {
	var st StepView
	err := c.decide(ctx, key, "resolve", res, &st)
	return st, err
}

// Workflows lists the workflows, without their checkpoints (GET
// /v1/workflows).
func (c *Client) Workflows(ctx context.Context) ([]journal.Workflow, error) {
	var out struct {
		Workflows []journal.Workflow `json:"workflows"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/workflows", nil, &out)
	return out.Workflows, err
}

// Workflow reads the record of workflow id (GET /v1/workflows/{id}).
func (c *Client) Workflow(ctx context.Context, id string) (journal.Workflow, error) {
	var w journal.Workflow
	err := c.do(ctx, http.MethodGet, "/v1/workflows/"+url.PathEscape(id), nil, &w)
	return w, err
}

// Resume reads the resume packet of workflow id as the API sent it (GET
// /v1/workflows/{id}/resume; see ResumePacket).
func (c *Client) Resume(ctx context.Context, id string) (json.RawMessage, error) {
	var packet json.RawMessage
	err := c.do(ctx, http.MethodGet, "/v1/workflows/"+url.PathEscape(id)+"/resume", nil, &packet)
	return packet, err
}

// Check runs the journal's consistency check (GET /v1/journal/check).
func (c *Client) Check(ctx context.Context) (CheckReport, error) {
	var report CheckReport
	err := c.do(ctx, http.MethodGet, "/v1/journal/check", nil, &report)
	return report, err
}

// Backup streams a consistent copy of the journal file (GET
// /v1/journal/backup); the caller closes it.
func (c *Client) Backup(ctx context.Context) (io.ReadCloser, error) {
	return c.stream(ctx, "/v1/journal/backup")
}

// Export streams every step as a JSON line (GET /v1/journal/export); the
// caller closes it.
func (c *Client) Export(ctx context.Context) (io.ReadCloser, error) {
	return c.stream(ctx, "/v1/journal/export")
}

// decide sends an operator decision (approve, resolve) about the step of
// key, which may be abbreviated: a key shorter than a full one is expanded
// by GET /v1/steps/{key} first, and the decision names the full key.
func (c *Client) decide(ctx context.Context, key, verb string, body, out any) error {
	if len(key) < fullKeyLen {
		st, err := c.Step(ctx, key)
		if err != nil {
			return err
		}
		key = st.Key
	}
	return c.do(ctx, http.MethodPost, "/v1/steps/"+url.PathEscape(key)+"/"+verb, body, out)
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// request builds an admin request with the bearer token.
func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return nil, fmt.Errorf("admin request: %w", err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// do sends one admin request and decodes its JSON answer into out. A
// problem answer becomes a *StatusError carrying its detail.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := c.request(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("reach admin API at %s: %w (is toolguard serve running? or use --journal FILE)", c.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read admin answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var p Problem
		if json.Unmarshal(data, &p) == nil && p.Detail != "" {
			if resp.StatusCode == http.StatusUnauthorized {
				p.Detail += c.UnauthorizedHint
			}
			return &StatusError{Status: resp.StatusCode, Detail: p.Detail}
		}
		return &StatusError{Status: resp.StatusCode, Detail: strings.TrimSpace(string(data))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode admin answer: %w", err)
	}
	return nil
}

// stream GETs a large admin answer (a backup, an export) without the
// client's timeout; the caller closes the body.
func (c *Client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	hc := *c.httpClient()
	hc.Timeout = 0 // a large journal takes a while
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach admin API at %s: %w", c.BaseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &StatusError{Status: resp.StatusCode, Detail: strings.TrimSpace(string(b))}
	}
	return resp.Body, nil
}
