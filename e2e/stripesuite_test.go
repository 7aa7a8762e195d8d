package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// stripeGo is the module path of stripe-go, whose own test suite runs
// through toolguard.
const stripeGo = "github.com/stripe/stripe-go/v82"

// stripeSuiteCI is the part of the stripe-go suite CI runs: the generated
// examples (one test per API method, 1,292 tests, 684 writes), the root
// package, and the packages with the most writes of their own, refunds
// among them (the hold). Together they make 804 of the suite's 859 writes
// in 1,728 of its 1,994 tests. Measured on 2 cores with a warm build
// cache: this subset runs in ~25s (~70s more to build it cold), the
// examples and the root package alone in ~6s, the whole suite ("all",
// ~130 packages to build and link) in ~60s (~2.5 minutes cold).
var stripeSuiteCI = []string{
	"example", ".", "invoice", "bankaccount", "token", "paymentintent", "subscription",
	"account", "customer", "paymentmethod", "paymentsource", "payout", "setupintent", "source",
	"subscriptionschedule", "card", "charge", "coupon", "creditnote", "identity/verificationsession",
	"invoiceitem", "issuing/authorization", "issuing/dispute", "person", "plan", "product", "quote",
	"radar/valuelist", "subscriptionitem", "refund",
}

// stripeSuitePackages is the packages TOOLGUARD_STRIPE_SUITE names: "all"
// (the whole suite), a comma-separated list of package paths, absolute or
// relative to the module ("." is the root package), or, unset, the CI
// subset.
func stripeSuitePackages() []string {
	names := stripeSuiteCI
	switch v := strings.TrimSpace(os.Getenv("TOOLGUARD_STRIPE_SUITE")); v {
	case "":
	case "all":
		return []string{stripeGo + "/..."}
	default:
		names = strings.Split(v, ",")
	}
	var pkgs []string
	for _, p := range names {
		switch p = strings.TrimSpace(p); {
		case p == "":
		case p == ".":
			pkgs = append(pkgs, stripeGo)
		case strings.HasPrefix(p, stripeGo):
			pkgs = append(pkgs, p)
		default:
			pkgs = append(pkgs, stripeGo+"/"+p)
		}
	}
	return pkgs
}

// suiteCall is one request the SDK made, as the relay saw it answered.
type suiteCall struct {
	method, path string
	status       int
	key, outcome string // Toolguard-Key, Toolguard-Outcome
	refusal      string // toolguard's error code, e.g. toolguard_invalid_body
}

func (c suiteCall) write() bool { return isWriteRoute(c.method + " " + c.path) }

// suiteRelay is what stripe-go's test suite takes for stripe-mock: a TLS
// server on localhost (the suite skips certificate checks and uses no
// proxy) that sends every request on through toolguard, as an HTTPS proxy
// trusted by its CA, to the front before stripe-mock, and records how
// toolguard answered.
type suiteRelay struct {
	*httptest.Server
	mu    sync.Mutex
	calls []suiteCall
}

func newSuiteRelay(t *testing.T, p *proc, front *mockFront) *suiteRelay {
	target, err := url.Parse(front.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := &suiteRelay{}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: p.client(t).Transport,
		ModifyResponse: func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			c := suiteCall{method: resp.Request.Method, path: resp.Request.URL.Path, status: resp.StatusCode,
				key: resp.Header.Get("Toolguard-Key"), outcome: resp.Header.Get("Toolguard-Outcome")}
			var stripeErr struct {
				Error struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(body, &stripeErr) == nil && strings.HasPrefix(stripeErr.Error.Code, "toolguard_") {
				c.refusal = stripeErr.Error.Code
			}
			r.mu.Lock()
			r.calls = append(r.calls, c)
			r.mu.Unlock()
			return nil
		},
	}
	r.Server = httptest.NewTLSServer(rp)
	t.Cleanup(r.Close)
	return r
}

func (r *suiteRelay) port() string {
	_, port, _ := strings.Cut(r.Listener.Addr().String(), ":")
	return port
}

func (r *suiteRelay) recorded() []suiteCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]suiteCall(nil), r.calls...)
}

// goTestEvent is one line of go test -json.
type goTestEvent struct {
	Action, Package, Test, Output string
}

// suiteResult is the outcome of a go test -json run, by test.
type suiteResult struct {
	passed, skipped int
	failed          map[string]string // "package TestName" → its output
	brokenPackages  map[string]string // packages that failed outside any test (build errors)
}

// parseSuite reads go test -json output.
func parseSuite(r io.Reader) suiteResult {
	res := suiteResult{failed: map[string]string{}, brokenPackages: map[string]string{}}
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e goTestEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		id := e.Package + " " + e.Test
		if output[id] == nil {
			output[id] = &strings.Builder{}
		}
		switch e.Action {
		case "output":
			output[id].WriteString(e.Output)
		case "pass":
			if e.Test != "" {
				res.passed++
			}
		case "skip":
			if e.Test != "" {
				res.skipped++
			}
		case "fail":
			if e.Test != "" {
				res.failed[id] = output[id].String()
			} else if !strings.Contains(output[id].String(), "--- FAIL") && !packageHasFailure(res.failed, e.Package) {
				res.brokenPackages[e.Package] = output[id].String()
			}
		}
	}
	return res
}

func packageHasFailure(failed map[string]string, pkg string) bool {
	for id := range failed {
		if strings.HasPrefix(id, pkg+" ") {
			return true
		}
	}
	return false
}

// heldByDesign says whether a failed test's output shows a hold for
// approval that reached stripe-go as the *stripe.Error it decodes:
// testify prints the error with %#v.
func heldByDesign(output string) bool {
	return strings.Contains(output, "stripe.Error{") && strings.Contains(output, `"toolguard_awaiting_approval"`) &&
		strings.Contains(output, "HTTPStatusCode:409")
}

// requireApproval puts route of a rule file on hold for approval, as an
// operator does who wants a human to approve each such call.
func requireApproval(t *testing.T, rulesYAML, route string) string {
	t.Helper()
	at := "  - name: " + route + "\n"
	if !strings.Contains(rulesYAML, at) {
		t.Fatalf("no route %s in the rule file; update this test", route)
	}
	return strings.Replace(rulesYAML, at, at+"    approval: required\n", 1)
}

// stripe-go's own test suite (stripe-go v82, unchanged) through toolguard
// serving the shipped Stripe pack, its hosts pointed at a TLS front before
// stripe-mock, with one operator choice: refunds need approval. Every test
// passes except those that create a refund, which fail with the hold
// decoded by stripe-go as a *stripe.Error; at least 90% of the writes the
// suite makes are guarded (answered with a Toolguard-Key).
//
// TOOLGUARD_STRIPE_SUITE picks the packages (see stripeSuitePackages); CI
// runs the generated examples and the root package.
func TestStripeGoSuite(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the go command is needed to run stripe-go's suite")
		}
		t.Skip("no go command")
	}
	mock := startStripeMock(t)
	front := newMockFront(t, mock, true)
	pack := packAt(t, "stripe", "https", map[string]string{"api.stripe.com": front.host(), "files.stripe.com": front.host()})
	s := newSetup(t, map[string]string{"stripe.yaml": requireApproval(t, pack, "create_refund")})
	s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+(&upstream{Server: front.Server}).caPEM(t, s.dir)+"\n"))
	s.args = append(s.args, "--log-level", "warn") // not a decision line for each of the suite's calls
	p := s.start(t)
	relay := newSuiteRelay(t, p, front)

	pkgs := stripeSuitePackages()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	args := append([]string{"test", "-count=1", "-json", "-vet=off", "-timeout", "10m"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "STRIPE_MOCK_PORT="+relay.port())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	took := time.Since(start).Round(time.Second)
	if ctx.Err() != nil {
		t.Fatalf("go test %s did not finish in time", strings.Join(pkgs, " "))
	}
	if path := os.Getenv("TOOLGUARD_STRIPE_SUITE_JSON"); path != "" {
		if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
	res := parseSuite(&stdout)
	for pkg, out := range res.brokenPackages {
		t.Errorf("package %s failed outside its tests:\n%s", pkg, tail(out, 40))
	}
	if len(res.brokenPackages) > 0 {
		t.Logf("go test's stderr:\n%s", tail(stderr.String(), 40))
	}
	if res.passed == 0 {
		t.Fatalf("go test %s ran no test (%v):\n%s", strings.Join(pkgs, " "), runErr, tail(stderr.String(), 40))
	}

	var held, other []string
	for id, out := range res.failed {
		if heldByDesign(out) {
			held = append(held, id)
		} else {
			other = append(other, id)
		}
	}
	sort.Strings(held)
	sort.Strings(other)
	calls := relay.recorded()
	st := summarizeSuite(calls, front)
	t.Logf("stripe-go suite (%d packages) in %s: %d tests passed, %d failed, of which %d held for approval, %d skipped",
		len(pkgs), took, res.passed, len(res.failed), len(held), res.skipped)
	t.Logf("the suite's writes: %d, guarded %d (%.1f%%), answered from the journal %d, refused by toolguard %d %v; stripe-mock saw %d writes, %d on a toolguard key",
		st.writes, st.guarded, st.percent(), st.replayed, st.refused, st.refusals, st.frontWrites, st.frontGuarded)
	if len(st.unguarded) > 0 {
		t.Logf("unguarded writes by route (%d routes): %s", len(st.unguarded), topRoutes(st.unguarded, 40))
	}

	for i, id := range other {
		if i == 20 {
			t.Errorf("... and %d more failed tests", len(other)-20)
			break
		}
		t.Errorf("%s failed:\n%s", id, tail(res.failed[id], 12))
	}
	if len(held) == 0 {
		t.Errorf("no test was held for approval: the suite's refunds did not reach stripe-go as a decoded hold")
	}
	if st.writes == 0 || st.percent() < 90 {
		t.Errorf("guarded writes: %d of %d (%.1f%%), want >= 90%%", st.guarded, st.writes, st.percent())
	}
}

// suiteStats counts the suite's writes: at the SDK (the relay) and at
// stripe-mock (the front).
type suiteStats struct {
	writes, guarded, replayed, refused int
	refusals                           map[string]int
	unguarded                          map[string]int // "METHOD /path" with ids folded → writes
	frontWrites, frontGuarded          int
}

func (s suiteStats) percent() float64 {
	if s.writes == 0 {
		return 0
	}
	return 100 * float64(s.guarded) / float64(s.writes)
}

func summarizeSuite(calls []suiteCall, front *mockFront) suiteStats {
	st := suiteStats{refusals: map[string]int{}, unguarded: map[string]int{}}
	keys := map[string]bool{}
	for _, c := range calls {
		if !c.write() {
			continue
		}
		st.writes++
		switch {
		case c.refusal != "" && c.refusal != "toolguard_awaiting_approval":
			st.refused++
			st.refusals[c.refusal]++
			st.unguarded[c.method+" "+foldIDs(c.path)]++
		case c.key != "":
			st.guarded++
			keys[c.key] = true
			if c.outcome == "replayed" {
				st.replayed++
			}
		default:
			st.unguarded[c.method+" "+foldIDs(c.path)]++
		}
	}
	for _, w := range front.writes() {
		st.frontWrites++
		if keys[w.idempotencyKey] {
			st.frontGuarded++
		}
	}
	return st
}

// foldIDs replaces the ids in a path (segments with a digit) with {id}.
func foldIDs(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, "0123456789") && i > 1 {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// topRoutes renders the n routes with most writes, most first.
func topRoutes(byRoute map[string]int, n int) string {
	routes := make([]string, 0, len(byRoute))
	for r := range byRoute {
		routes = append(routes, r)
	}
	sort.Slice(routes, func(i, j int) bool {
		if byRoute[routes[i]] != byRoute[routes[j]] {
			return byRoute[routes[i]] > byRoute[routes[j]]
		}
		return routes[i] < routes[j]
	})
	var b strings.Builder
	for i, r := range routes {
		if i == n {
			fmt.Fprintf(&b, "; ... %d more", len(routes)-n)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s ×%d", r, byRoute[r])
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
