package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/hijack"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// metricSample returns the value of one sample of m's metrics page (""
// when it is absent).
func metricSample(t *testing.T, m *metrics.Metrics, sample string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			return v
		}
	}
	return ""
}

// blockedBeforeARoute is the request counter of refusals made before any
// route was known.
const blockedBeforeARoute = `toolguard_requests_total{api="",outcome="blocked",route=""}`

// Regression: the refusal was copied at each site and had drifted: a
// refused CONNECT carried no Toolguard-Outcome (unmatched: reject without a
// CA) and no CONNECT was counted in toolguard_requests_total. Every
// refusal before a route, plain and CONNECT, is now answered by one
// function: a problem with Toolguard-Outcome: blocked, counted as a
// blocked request (and under its reason), and one decision line.
func TestEveryRefusalIsAnsweredAlike(t *testing.T) {
	connect := func(target string) func(t *testing.T, p *netProxy) *http.Response {
		return func(t *testing.T, p *netProxy) *http.Response {
			resp, _, _ := p.connect(t, target)
			return resp
		}
	}
	tests := []struct {
		name   string
		opts   Options
		mitm   bool
		send   func(t *testing.T, p *netProxy) *http.Response
		status int
		reason string // toolguard_rejected_total's reason; "" counts none
	}{
		{name: "CONNECT to a port not allowed", send: connect("tools.test:22"), status: http.StatusForbidden, reason: "egress"},
		{name: "CONNECT to a host not allowed", opts: Options{AllowHosts: []string{"a.example"}}, send: connect("tools.test:443"), status: http.StatusForbidden, reason: "egress"},
		{name: "CONNECT to an own listener", send: func(t *testing.T, p *netProxy) *http.Response {
			resp, _, _ := p.connect(t, p.url.Host)
			return resp
		}, status: http.StatusForbidden, reason: "egress"},
		{name: "CONNECT to a denied address", send: connect("169.254.169.254:443"), status: http.StatusForbidden, reason: "egress"},
		{name: "CONNECT to a name of a denied address", opts: Options{Resolver: fakeResolver{"metadata.test": {netip.MustParseAddr("169.254.169.254")}}},
			send: connect("metadata.test:443"), status: http.StatusForbidden, reason: "egress"},
		{name: "CONNECT under unmatched reject without a CA", opts: Options{Unmatched: policy.UnmatchedReject}, send: connect("tools.test:443"),
			status: http.StatusForbidden, reason: "unmatched"},
		{name: "CONNECT inside a tunnel", opts: Options{Unmatched: policy.UnmatchedGuard}, mitm: true, send: func(t *testing.T, p *netProxy) *http.Response {
			resp, conn, br := p.connect(t, "tools.test:443")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("outer CONNECT: %d", resp.StatusCode)
			}
			tc := tls.Client(hijack.WithReader(conn, br), &tls.Config{ServerName: "tools.test", RootCAs: p.roots})
			fmt.Fprintf(tc, "CONNECT inner.test:443 HTTP/1.1\r\nHost: inner.test:443\r\n\r\n")
			inner, err := http.ReadResponse(bufio.NewReader(tc), &http.Request{Method: http.MethodConnect})
			if err != nil {
				t.Fatal(err)
			}
			return inner
		}, status: http.StatusMethodNotAllowed},
		{name: "plain request to a host not allowed", opts: Options{AllowHosts: []string{"a.example"}}, send: func(t *testing.T, p *netProxy) *http.Response {
			resp, err := p.client().Get("http://tools.test/v1/ping")
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}, status: http.StatusForbidden, reason: "egress"},
		{name: "plain request to a name of a denied address", opts: Options{Resolver: fakeResolver{"metadata.test": {netip.MustParseAddr("169.254.169.254")}}},
			send: func(t *testing.T, p *netProxy) *http.Response {
				resp, err := p.client().Get("http://metadata.test/latest/meta-data/")
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}, status: http.StatusForbidden, reason: "egress"},
		{name: "request that is not a proxy request", send: func(t *testing.T, p *netProxy) *http.Response {
			resp, err := http.Get(p.url.String() + "/v1/steps")
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}, status: http.StatusForbidden},
		{name: "request to an MCP server not configured", send: func(t *testing.T, p *netProxy) *http.Response {
			resp, err := http.Post(p.url.String()+"/mcp/nowhere", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}, status: http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Metrics = metrics.New()
			p := startNetProxy(t, tc.opts, "", tc.mitm)
			resp := tc.send(t, p)
			if resp.StatusCode != tc.status || resp.Header.Get(HeaderOutcome) != OutcomeBlocked {
				t.Errorf("status %d, %s %q; want %d, %s blocked", resp.StatusCode, HeaderOutcome, resp.Header.Get(HeaderOutcome), tc.status, HeaderOutcome)
			}
			if pr := problemOf(t, resp); pr.Type != problem.Rejected || pr.Status != tc.status {
				t.Errorf("problem %+v, want %s", pr, problem.Rejected)
			}
			if got := metricSample(t, tc.opts.Metrics, blockedBeforeARoute); got != "1" {
				t.Errorf("%s = %q, want 1", blockedBeforeARoute, got)
			}
			for _, reason := range metrics.RejectReasons() {
				want := "0"
				if reason == tc.reason {
					want = "1"
				}
				sample := `toolguard_rejected_total{reason="` + reason + `"}`
				if got := metricSample(t, tc.opts.Metrics, sample); got != want {
					t.Errorf("%s = %q, want %s", sample, got, want)
				}
			}
			blocked := 0
			for _, line := range p.decisionLines(t, "proxied request") {
				if line["outcome"] == OutcomeBlocked && line["why"] != "" {
					blocked++
				}
			}
			if blocked != 1 {
				t.Errorf("%d blocked decision lines with a why, want 1:\n%s", blocked, p.logs.String())
			}
		})
	}
}
