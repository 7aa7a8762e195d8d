package e2e

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/internal/skipped"
)

// echoAPI is a provider whose every POST is an effect, answered with what
// it received and nothing else (no counter, no time), so that an answer
// through the proxy can be compared with a direct one byte for byte.
// Direct calls carry X-Direct and are not counted as the agent's effects.
type echoAPI struct {
	*httptest.Server
	mu      sync.Mutex
	effects map[string]int // by path and body
}

func newEchoAPI(t *testing.T, useTLS bool) *echoAPI {
	t.Helper()
	e := &echoAPI{effects: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		if r.Header.Get("X-Direct") == "" {
			e.mu.Lock()
			e.effects[r.URL.Path+" "+string(body)]++
			e.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=provider")
		w.Header().Set("X-Request-Id", "req_"+hex.EncodeToString(sum[:6]))
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"id": "obj_" + hex.EncodeToString(sum[:6]), "path": r.URL.Path,
			"idempotency_key": r.Header.Get("Idempotency-Key"), "workflow": r.Header.Get("Toolguard-Workflow")})
	})
	if useTLS {
		e.Server = httptest.NewTLSServer(h)
	} else {
		e.Server = httptest.NewServer(h)
	}
	t.Cleanup(e.Close)
	return e
}

func (e *echoAPI) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(e.URL, "http://"), "https://")
}

func (e *echoAPI) effectsOf(path, body string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.effects[path+" "+body]
}

// pemFile writes srv's certificate as PEM into dir.
func pemFile(t *testing.T, dir string, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(dir, "provider-ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// observeRules describe both providers: invoices keyed on the customer
// with the provider's idempotency header, payouts that need approval.
func observeRules(hosts ...string) string {
	return fmt.Sprintf(`version: v1
api: billing
hosts: [%q, %q]
credential: {header: Authorization}
routes:
  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [customer]}
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
  - name: payout
    match: POST /v1/payouts
    effect: irreversible
    key: {fields: [amount]}
    approval: required
`, hosts[0], hosts[1])
}

// rawAnswer is an answer with all its headers.
type rawAnswer struct {
	status int
	header http.Header
	body   string
}

// client sends one POST; direct clients go to the provider without the
// proxy and mark their calls X-Direct.
type client func(t *testing.T, url, body string, direct bool) rawAnswer

// goClient is Go's http client, through p or direct.
func goClient(p *proc, providerCA string) client {
	return func(t *testing.T, url, body string, direct bool) rawAnswer {
		t.Helper()
		pool := x509.NewCertPool()
		caFile := p.caFile
		if direct {
			caFile = providerCA
		}
		pemData, err := os.ReadFile(caFile)
		if err != nil || !pool.AppendCertsFromPEM(pemData) {
			t.Fatalf("read CA %s: %v", caFile, err)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		if !direct {
			tr.Proxy = http.ProxyURL(p.proxyURL)
		}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k1")
		if direct {
			req.Header.Set("X-Direct", "1")
		}
		resp, b := do(t, &http.Client{Transport: tr}, req)
		return rawAnswer{status: resp.StatusCode, header: resp.Header, body: b}
	}
}

// curlClient is curl, through p (from its proxy variables) or direct.
func curlClient(p *proc, providerCA string) client {
	return func(t *testing.T, url, body string, direct bool) rawAnswer {
		t.Helper()
		args := []string{"-sS", "-i", "--suppress-connect-headers", "--max-time", "30", "-H", "Content-Type: application/json",
			"-H", "Authorization: Bearer k1", "--data-binary", body, url}
		env := clientEnv(t, "http_proxy="+p.proxyURL.String(), "HTTPS_PROXY="+p.proxyURL.String())
		if direct {
			args = append(args, "-H", "X-Direct: 1", "--cacert", providerCA)
			env = clientEnv(t)
		} else {
			args = append(args, "--cacert", p.caFile)
		}
		cmd := exec.Command("curl", args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", url, err, stderrOf(err))
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
		if err != nil {
			t.Fatalf("curl %s: read its answer: %v\n%s", url, err, out)
		}
		b, _ := io.ReadAll(resp.Body)
		return rawAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
}

// sameRaw fails t unless both answers have the same status, body and
// headers, Date aside.
func sameRaw(t *testing.T, name string, got, want rawAnswer) {
	t.Helper()
	g, w := got.header.Clone(), want.header.Clone()
	g.Del("Date")
	w.Del("Date")
	if got.status != want.status || got.body != want.body || fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s: through toolguard\n%d %v %s\ndirect\n%d %v %s", name, got.status, g, got.body, want.status, w, want.body)
	}
}

// report runs toolguard report --json against p.
func report(t *testing.T, p *proc) admin.ObservationReport {
	t.Helper()
	out, err := p.cli("report", "--json", "--admin", p.adminURL).Output()
	if err != nil {
		t.Fatalf("toolguard report: %v\n%s", err, stderrOf(err))
	}
	var rep admin.ObservationReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("toolguard report: %v\n%s", err, out)
	}
	return rep
}

// TestObserveMode runs toolguard in observe mode with real clients, curl
// and Go's, over HTTP and HTTPS: the same intent twice, an invalid body
// and a call that needs approval. Every answer is the one a direct call
// gets, the provider sees every call, and toolguard report counts the
// duplicate it would have stopped and the hold and refusal it would have
// made. Restarted in enforce mode on the same journal, toolguard sends the
// next identical call (an observation is never replayed) and replays its
// duplicate.
func TestObserveMode(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		skipped.Skip(t, "curl", "curl is not installed")
	}
	plain, secure := newEchoAPI(t, false), newEchoAPI(t, true)
	s := newSetup(t, map[string]string{"billing.yaml": observeRules(plain.host(), secure.host())})
	providerCA := pemFile(t, s.dir, secure.Server)
	s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+providerCA+"\n"))
	s.env = append(s.env, "TOOLGUARD_GUARD_MODE=observe")
	p := s.start(t)

	clients := map[string]client{"go": goClient(p, providerCA), "curl": curlClient(p, providerCA)}
	providers := map[string]*echoAPI{"http": plain, "https": secure}
	n := 0
	for _, cn := range []string{"go", "curl"} {
		for _, pn := range []string{"http", "https"} {
			n++
			name, c, up := cn+" "+pn, clients[cn], providers[pn]
			intent := fmt.Sprintf(`{"customer":"c-%s-%s","amount":%d}`, cn, pn, n)
			calls := []struct{ what, path, body string }{
				{"new intent", "/v1/invoices", intent},
				{"duplicate", "/v1/invoices", intent},
				{"invalid body", "/v1/invoices", fmt.Sprintf(`{"amount":%d}`, n)},
				{"approval", "/v1/payouts", fmt.Sprintf(`{"amount":%d}`, n)},
			}
			for _, call := range calls {
				got := c(t, up.URL+call.path, call.body, false)
				want := c(t, up.URL+call.path, call.body, true)
				sameRaw(t, name+", "+call.what, got, want)
			}
			if got := up.effectsOf("/v1/invoices", intent); got != 2 {
				t.Errorf("%s: the provider saw the intent %d times, want 2", name, got)
			}
		}
	}

	var rep admin.ObservationReport
	eventually(t, "the report counts every observation", func() bool { // journaled after each answer
		rep = report(t, p)
		return rep.Observed == 16
	})
	if rep.Stopped != 4 || rep.Held != 4 || rep.Refused != 4 || rep.Would["forward"] != 4 || rep.Would["replay"] != 4 {
		t.Errorf("report: %+v; want 4 duplicates stopped (replay), 4 holds, 4 refusals, 4 forwards", rep)
	}
	for _, r := range rep.Routes {
		if r.Route == "create_invoice" && len(r.Examples["replay"]) == 0 {
			t.Errorf("create_invoice: no example key of a replay: %+v", r)
		}
	}
	out, err := p.cli("report", "--admin", p.adminURL).Output()
	if err != nil || !strings.Contains(string(out), "Enforcement would have stopped 4 duplicates, held 4 calls and refused 4 calls.") {
		t.Errorf("toolguard report: %v\n%s", err, out)
	}
	metrics, err := p.adminGet("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	if !strings.Contains(string(page), `toolguard_observed_total{api="billing",route="create_invoice",would="replay"} 4`) {
		t.Errorf("metrics lack 4 observed replays")
	}
	if logs := p.logs.String(); !strings.Contains(logs, `"mode":"observe","would":"replay"`) {
		t.Errorf("no decision line says mode=observe would=replay")
	}

	// Enforce, on the same journal: the observed intent is sent, then replayed.
	p.kill()
	s.env = append(s.env, "TOOLGUARD_GUARD_MODE=enforce")
	p = s.start(t)
	c := p.client(t)
	intent := `{"customer":"c-go-http","amount":1}`
	first, _ := post(t, c, plain.URL+"/v1/invoices", intent)
	second, _ := post(t, c, plain.URL+"/v1/invoices", intent)
	if got := first.Header.Get("Toolguard-Outcome"); got != "forwarded" {
		t.Errorf("first enforced call of an observed intent: %q, want forwarded (an observation is never replayed)", got)
	}
	if got := second.Header.Get("Toolguard-Outcome"); got != "replayed" {
		t.Errorf("its duplicate: %q, want replayed", got)
	}
	if got := plain.effectsOf("/v1/invoices", intent); got != 3 {
		t.Errorf("the provider saw the intent %d times, want 3: two observed, one enforced", got)
	}
}
