package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// The client the CLI uses, against a served admin API: every call gets
// the API's answer in its wire type, abbreviated keys are expanded before
// a decision, and a refusal is a *StatusError with the problem's detail.
func TestClient(t *testing.T) {
	j := openJournal(t)
	approveKey, reviewKey := "aa01"+strings.Repeat("0", 60), "bb01"+strings.Repeat("0", 60)
	putHeld(t, j, approveKey, "wf-1", "", journal.HoldAwaitingApproval)
	putHeld(t, j, reviewKey, "wf-1", "", journal.HoldNeedsReview)
	p := testProxy{next: map[string]string{reviewKey: "operator review needed: create_invoice outcome unknown"}}
	srv := httptest.NewServer(New(Options{Journal: j, Maintainer: j, Proxy: p, Token: "op"}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Token: "op"}
	ctx := context.Background()

	steps, err := c.Steps(ctx, journal.Filter{Hold: journal.HoldAwaitingApproval, HoldSet: true})
	if err != nil || len(steps) != 1 || steps[0].Key != approveKey || steps[0].Target != "https://billing.example.com/v1/invoices" {
		t.Fatalf("Steps(awaiting approval) = %+v, %v; want the approval's step", steps, err)
	}
	if st, err := c.Step(ctx, "bb01"); err != nil || st.Key != reviewKey {
		t.Fatalf("Step(bb01) = %+v, %v; want %s", st, err, reviewKey)
	}
	if st, err := c.Approve(ctx, "aa01", "ok"); err != nil || st.Key != approveKey || st.Decision != DecisionApproved {
		t.Fatalf("Approve(aa01) = %+v, %v", st, err)
	}
	if st, err := c.Resolve(ctx, reviewKey, Resolution{Outcome: "committed", OperationID: "inv_1", Note: "seen"}); err != nil ||
		st.Status != "committed" || st.OperationID != "inv_1" {
		t.Fatalf("Resolve = %+v, %v", st, err)
	}
	evs, err := c.Events(ctx, 0, 100)
	if err != nil || len(evs) < 5 || evs[len(evs)-1].Type != journal.EventResolved {
		t.Fatalf("Events = %+v, %v; want every change, the resolution last", evs, err)
	}
	if later, err := c.Events(ctx, evs[len(evs)-2].Seq, 100); err != nil || len(later) != 1 {
		t.Fatalf("Events after the next-to-last = %+v, %v; want the last only", later, err)
	}
	if wfs, err := c.Workflows(ctx); err != nil || len(wfs) != 1 || wfs[0].ID != "wf-1" {
		t.Fatalf("Workflows = %+v, %v", wfs, err)
	}
	if w, err := c.Workflow(ctx, "wf-1"); err != nil || w.ID != "wf-1" || w.Steps != 2 {
		t.Fatalf("Workflow = %+v, %v", w, err)
	}
	raw, err := c.Resume(ctx, "wf-1")
	var packet ResumePacket
	if err == nil {
		err = json.Unmarshal(raw, &packet)
	}
	if err != nil || len(packet.Steps) != 2 || packet.NextSafeAction != p.next[reviewKey] {
		t.Fatalf("Resume = %s, %v", raw, err)
	}
	if report, err := c.Check(ctx); err != nil || !report.OK {
		t.Fatalf("Check = %+v, %v", report, err)
	}
	body, err := c.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, body)
	body.Close()
	if n == 0 {
		t.Fatal("Backup streamed nothing")
	}
	if body, err = c.Export(ctx); err != nil {
		t.Fatal(err)
	}
	lines := 0
	for sc := bufio.NewScanner(body); sc.Scan(); lines++ {
	}
	body.Close()
	if lines != 2 {
		t.Fatalf("Export: %d lines, want one a step", lines)
	}
}

func TestClientErrors(t *testing.T) {
	j := openJournal(t)
	srv := httptest.NewServer(New(Options{Journal: j, Token: "op"}))
	defer srv.Close()
	ctx := context.Background()
	tests := []struct {
		name   string
		client *Client
		call   func(c *Client) error
		status int    // of the *StatusError; 0: another error
		detail string // substring of the error
	}{
		{name: "no token", client: &Client{BaseURL: srv.URL, UnauthorizedHint: " (set a token)"},
			call: func(c *Client) error { _, err := c.Step(ctx, "k"); return err }, status: 401, detail: "bearer token is required (set a token)"},
		{name: "no step", client: &Client{BaseURL: srv.URL, Token: "op"},
			call: func(c *Client) error { _, err := c.Step(ctx, "nope"); return err }, status: 404, detail: "no step has that key"},
		{name: "decision on a missing abbreviation", client: &Client{BaseURL: srv.URL, Token: "op"},
			call: func(c *Client) error { _, err := c.Approve(ctx, "dead", ""); return err }, status: 404},
		{name: "stream without a token", client: &Client{BaseURL: srv.URL},
			call: func(c *Client) error { _, err := c.Export(ctx); return err }, status: 401},
		{name: "backup without a file", client: &Client{BaseURL: srv.URL, Token: "op"},
			call: func(c *Client) error { _, err := c.Backup(ctx); return err }, status: 501, detail: "pg_dump"},
		{name: "unreachable", client: &Client{BaseURL: "http://127.0.0.1:1"},
			call: func(c *Client) error { _, err := c.Workflows(ctx); return err }, detail: "reach admin API at http://127.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(tc.client)
			status := 0
			if se := (*StatusError)(nil); errors.As(err, &se) {
				status = se.Status
			}
			if err == nil || status != tc.status || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("err = %v (status %d), want status %d and %q", err, status, tc.status, tc.detail)
			}
		})
	}
}
