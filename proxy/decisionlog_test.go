package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/problem"
)

// Regression: 431 answers and refused CONNECTs wrote no decision line.
// Every request path now writes exactly one.
func TestOneDecisionLinePerRequest(t *testing.T) {
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	open := "127.0.0.1:" + strconv.Itoa(tools.port())
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	closedPort, _ := strconv.Atoi(closed[strings.LastIndex(closed, ":")+1:])

	tests := []struct {
		name    string
		send    func(t *testing.T, p *netProxy) int // returns the status
		outcome string
		status  int
	}{
		{name: "headers too large", outcome: OutcomeBlocked, status: http.StatusRequestHeaderFieldsTooLarge,
			send: func(t *testing.T, p *netProxy) int {
				req, _ := http.NewRequest(http.MethodGet, "http://"+open+"/x", nil)
				req.Header.Set("X-Big", strings.Repeat("a", 4096))
				return do(t, p, req)
			}},
		{name: "CONNECT to a port not allowed", outcome: OutcomeBlocked, status: http.StatusForbidden,
			send: func(t *testing.T, p *netProxy) int {
				resp, _, _ := p.connect(t, "127.0.0.1:25")
				return resp.StatusCode
			}},
		{name: "CONNECT to own listener", outcome: OutcomeBlocked, status: http.StatusForbidden,
			send: func(t *testing.T, p *netProxy) int {
				resp, _, _ := p.connect(t, p.url.Host)
				return resp.StatusCode
			}},
		{name: "tunnel opened", outcome: outcomeTunnel, status: http.StatusOK,
			send: func(t *testing.T, p *netProxy) int {
				resp, _, _ := p.connect(t, open)
				return resp.StatusCode
			}},
		{name: "tunnel dial failed", outcome: OutcomePassthrough, status: http.StatusBadGateway,
			send: func(t *testing.T, p *netProxy) int {
				resp, _, _ := p.connect(t, closed)
				if pr := problemOf(t, resp); pr.Type != problem.UpstreamUnreachable {
					t.Errorf("problem %+v, want %s", pr, problem.UpstreamUnreachable)
				}
				return resp.StatusCode
			}},
		{name: "passthrough", outcome: OutcomePassthrough, status: http.StatusCreated,
			send: func(t *testing.T, p *netProxy) int {
				req, _ := http.NewRequest(http.MethodGet, "http://"+open+"/x", nil)
				return do(t, p, req)
			}},
		{name: "not a proxy request", outcome: OutcomeBlocked, status: http.StatusForbidden,
			send: func(t *testing.T, p *netProxy) int {
				resp, err := http.Get(p.url.String() + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startNetProxy(t, Options{MaxHeaderBytes: 2048, ConnectPorts: []int{tools.port(), closedPort}}, "", false)
			if got := tc.send(t, p); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
			lines := p.decisionLines(t, "proxied request")
			if len(lines) != 1 {
				t.Fatalf("%d decision lines, want 1:\n%s", len(lines), p.logs.String())
			}
			if l := lines[0]; l["outcome"] != tc.outcome || l["status"] != float64(tc.status) || l["why"] == "" {
				t.Errorf("decision line %v, want outcome %s, status %d and a reason", l, tc.outcome, tc.status)
			}
		})
	}
}

func do(t *testing.T, p *netProxy, req *http.Request) int {
	t.Helper()
	resp, err := p.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
