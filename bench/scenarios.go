//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario names.
const (
	scDirect      = "direct"
	scBare        = "bare"
	scPassthrough = "passthrough"
	scGuarded     = "guarded"
	scReplay      = "replay"
	scHTTPS       = "https"
)

var allScenarios = []string{scDirect, scBare, scPassthrough, scGuarded, scReplay, scHTTPS, scMCPDirect, scMCPGuarded, scMCPReplay}

// scenarioInfo describes each scenario for the report.
var scenarioInfo = map[string]string{
	scDirect:      "GET /v1/ping straight to the upstream",
	scBare:        "GET /v1/ping through a bare tuned goproxy (subprocess)",
	scPassthrough: "GET /v1/ping through toolguard, no rule matches (streamed, not journaled)",
	scGuarded:     "POST /v1/invoices through toolguard, a new intent per call (two durable journal writes, shared by group commit)",
	scReplay:      "POST /v1/invoices of committed intents, cycled (answered from the journal)",
	scHTTPS:       "GET /v1/ping to the TLS upstream, intercepted by toolguard (CONNECT + its CA, keep-alive)",
	scMCPDirect:   "MCP tools/call straight to the MCP server (the Go SDK's own cost: a new intent per call)",
	scMCPGuarded:  "MCP tools/call to toolguard's gateway endpoint /mcp/{name}, a new intent per call (an MCP server of the Go SDK, stateless, JSON answers)",
	scMCPReplay:   "MCP tools/call of committed intents through the gateway, new ids, cycled (answered from the journal)",
}

func parseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if _, ok := scenarioInfo[name]; !ok {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(allScenarios, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// env is what the scenarios reach: the upstreams and the proxies.
type env struct {
	up *upstreams
	// toolguard is the proxy under test, roots trusts its CA, and replay
	// holds bodies of intents it has committed.
	toolguard *url.URL
	roots     *x509.CertPool
	replay    [][]byte
	// mcpCalls mints tools/call intents; mcpReplay holds committed ones.
	mcpCalls  *mcpCalls
	mcpReplay [][]byte
	// bare is the reference goproxy.
	bare    *url.URL
	intents *intents
}

// load returns the load of scenario name at concurrency conc.
func (e *env) load(name string, conc int) load {
	ping := func(base string) func(int, int) *http.Request {
		u := base + "/v1/ping"
		return func(int, int) *http.Request {
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			return req
		}
	}
	switch name {
	case scDirect:
		return newLoad(conc, nil, nil, ping(e.up.plain.URL), expect(200, ""))
	case scBare:
		return newLoad(conc, e.bare, nil, ping(e.up.plain.URL), expect(200, ""))
	case scPassthrough:
		return newLoad(conc, e.toolguard, nil, ping(e.up.plain.URL), expect(200, "passthrough"))
	case scHTTPS:
		return newLoad(conc, e.toolguard, e.roots, ping(e.up.tls.URL), expect(200, "passthrough"))
	case scGuarded:
		return e.guardedLoad(conc, 0)
	case scMCPDirect, scMCPGuarded, scMCPReplay:
		return e.mcpLoad(name, conc)
	case scReplay:
		u := e.up.plain.URL + "/v1/invoices"
		set := e.replay
		return newLoad(conc, e.toolguard, nil, func(w, i int) *http.Request { return newPost(u, set[(w+i*conc)%len(set)]) }, expect(201, "replayed"))
	}
	panic("unknown scenario " + name)
}

// guardedLoad posts a new intent per call; pad adds a field of that many
// bytes to every body.
func (e *env) guardedLoad(conc, pad int) load {
	u := e.up.plain.URL + "/v1/invoices"
	return newLoad(conc, e.toolguard, nil, func(int, int) *http.Request { return newPost(u, e.intents.body(pad)) }, expect(201, "forwarded"))
}

// seedReplay commits n new intents through toolguard and keeps their
// bodies for the replay scenario.
func (e *env) seedReplay(ctx context.Context, n int) error {
	const conc = 16
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = e.intents.body(0)
	}
	var next atomic.Int64
	client, check := newClient(conc, e.toolguard, nil, nil), expect(201, "forwarded")
	errs := make(chan error, conc)
	for range conc {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				req := newPost(e.up.plain.URL+"/v1/invoices", bodies[i]).WithContext(ctx)
				if err := send(client, req, check); err != nil {
					errs <- fmt.Errorf("seed intent %d: %w", i, err)
					return
				}
			}
		}()
	}
	var first error
	for range conc {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	client.CloseIdleConnections()
	e.replay = bodies
	return first
}

// intents mints bodies of distinct intents: a counter in the key fields,
// and a trace_id that the rule ignores.
type intents struct {
	nonce string
	n     atomic.Int64
	pads  sync.Map // size → string of that many bytes
}

func newIntents() *intents {
	return &intents{nonce: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

func (g *intents) body(pad int) []byte {
	n := g.n.Add(1)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"customer":"cus_%d","amount":%d,"currency":"eur","reference":"%s-%d","trace_id":"t-%d"`,
		n%1000, 100+n, g.nonce, n, n)
	if pad > 0 {
		b.WriteString(`,"note":"`)
		b.WriteString(g.pad(pad))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// pad returns a string of n bytes, built once per size.
func (g *intents) pad(n int) string {
	if s, ok := g.pads.Load(n); ok {
		return s.(string)
	}
	s, _ := g.pads.LoadOrStore(n, strings.Repeat("p", n))
	return s.(string)
}

func newPost(u string, body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	return req
}

var errUnexpected = errors.New("unexpected answer")

// expect checks the status and, when outcome is not empty, the
// Toolguard-Outcome header.
func expect(status int, outcome string) func(*http.Response) error {
	return func(resp *http.Response) error {
		if resp.StatusCode != status {
			return fmt.Errorf("%w: status %d, want %d (Toolguard-Outcome %q)", errUnexpected, resp.StatusCode, status, resp.Header.Get("Toolguard-Outcome"))
		}
		if outcome != "" && resp.Header.Get("Toolguard-Outcome") != outcome {
			return fmt.Errorf("%w: Toolguard-Outcome %q, want %q", errUnexpected, resp.Header.Get("Toolguard-Outcome"), outcome)
		}
		return nil
	}
}
