package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// binary is the toolguard binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolguard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "toolguard")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/toolguard")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build toolguard:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	skipped.Print()
	os.Exit(code)
}

// proc is a running toolguard serve.
type proc struct {
	t        *testing.T
	cmd      *exec.Cmd
	dir      string
	proxyURL *url.URL
	adminURL string
	caFile   string
	// token is the operator token: the configured TOOLGUARD_ADMIN_TOKEN, or
	// the one serve generated beside the journal.
	token   string
	logs    *syncBuffer
	exited  chan struct{}
	exitErr error
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// setup is a toolguard working directory: rules, journal and CA.
type setup struct {
	dir   string
	rules string
	env   []string
	args  []string
}

func newSetup(t *testing.T, ruleFiles map[string]string) *setup {
	t.Helper()
	dir := t.TempDir()
	rulesDir := filepath.Join(dir, "rules")
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range ruleFiles {
		if err := os.WriteFile(filepath.Join(rulesDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &setup{dir: dir, rules: rulesDir}
}

// start runs toolguard serve on free ports and waits until it listens.
func (s *setup) start(t *testing.T) *proc {
	t.Helper()
	args := append([]string{"serve",
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--rules", s.rules, "--journal", filepath.Join(s.dir, "toolguard.db"),
		"--ca-dir", filepath.Join(s.dir, "ca"), "--log-format", "json", "--log-level", "debug"}, s.args...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir}, s.env...)
	p := &proc{t: t, cmd: cmd, dir: s.dir, logs: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if strings.Contains(p.logs.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector reported a data race in toolguard")
		}
		if t.Failed() {
			t.Logf("toolguard log:\n%s", p.logs.String())
		}
	})
	p.readAddresses(stdout)
	p.token = servedToken(t, s.env, s.dir)
	return p
}

// servedToken is the operator token of a serve started with env in dir:
// TOOLGUARD_ADMIN_TOKEN when env sets it, else the generated admin-token
// file ("" when there is none, e.g. with insecure_no_auth).
func servedToken(t *testing.T, env []string, dir string) string {
	t.Helper()
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TOOLGUARD_ADMIN_TOKEN="); ok {
			return v
		}
	}
	// Beside the bbolt journal, or in the CA directory (postgres backend).
	for _, path := range []string{filepath.Join(dir, "admin-token"), filepath.Join(dir, "ca", "admin-token")} {
		b, err := os.ReadFile(path)
		if err == nil {
			return strings.TrimSpace(string(b))
		}
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return ""
}

// cliEnv is what the CLI needs to talk to p's admin API as an operator: it
// finds the generated token beside the journal that TOOLGUARD_JOURNAL_PATH
// names, as an operator's shell would, or gets the configured token.
func (p *proc) cliEnv() []string {
	if b, err := os.ReadFile(filepath.Join(p.dir, "admin-token")); err == nil && strings.TrimSpace(string(b)) == p.token {
		return []string{"TOOLGUARD_JOURNAL_PATH=" + filepath.Join(p.dir, "toolguard.db")}
	}
	return []string{"TOOLGUARD_ADMIN_TOKEN=" + p.token}
}

// adminGet GETs path from p's admin API as its operator, without the proxy.
func (p *proc) adminGet(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, p.adminURL+path, nil)
	if err != nil {
		return nil, err
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	return (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
}

// cli is the toolguard command line args, run as p's operator.
func (p *proc) cli(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), p.cliEnv()...)
	return cmd
}

// readAddresses parses the three lines serve prints when it listens.
func (p *proc) readAddresses(stdout io.Reader) {
	p.t.Helper()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for p.proxyURL == nil || p.adminURL == "" || p.caFile == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				p.t.Fatalf("toolguard exited before listening: %v\n%s", p.exitErr, p.logs.String())
			}
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "proxy":
				p.proxyURL, _ = url.Parse(v)
			case "admin":
				p.adminURL = v
			case "ca":
				p.caFile = v
			}
		case <-deadline:
			p.t.Fatalf("toolguard did not start:\n%s", p.logs.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// client returns an HTTP client that uses the proxy and trusts its CA.
func (p *proc) client(t *testing.T) *http.Client {
	t.Helper()
	pemData, err := os.ReadFile(p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatal("no CA certificate in", p.caFile)
	}
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: credentialed{&http.Transport{
			Proxy:           http.ProxyURL(p.proxyURL),
			TLSClientConfig: &tls.Config{RootCAs: pool},
		}},
	}
}

// credentialed adds a caller's credential (Authorization: Bearer k1) to
// requests that carry none, as a real agent does: a guarded call without
// one is refused. A test that sends none on purpose sets Authorization to
// "", which is removed before sending.
type credentialed struct{ rt http.RoundTripper }

func (c credentialed) RoundTrip(req *http.Request) (*http.Response, error) {
	vs, ok := req.Header["Authorization"]
	switch {
	case !ok:
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer k1")
	case len(vs) == 1 && vs[0] == "":
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return c.rt.RoundTrip(req)
}

// admin sends an admin API request and decodes the JSON answer.
func (p *proc) admin(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.adminURL+path, rd)
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("decode %s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// upstream is a real API on 127.0.0.1 that counts the effects it commits.
type upstream struct {
	*httptest.Server
	effects atomic.Int64
	mu      sync.Mutex
	byRef   map[string]string
	byIdem  map[string]string // Idempotency-Key → stored answer (native dedupe)
	perRef  map[string]int    // effects by the body's "reference"
	hidden  map[string]bool   // invoice ids not yet visible to GET
	// hook, when set, runs for every effectful request before (stage
	// "before") and after (stage "after") its effect is committed. A false
	// answer at "before" aborts the request with no effect.
	hookMu sync.Mutex
	hook   func(stage string, r *http.Request) bool
	// status overrides the answer's status code when set.
	status atomic.Int64
	// hide makes new invoices invisible to GET until show is called.
	hide atomic.Bool
	// noEcho keeps request headers out of answers (secret-grep tests).
	noEcho atomic.Bool
	// requireAuth makes GET /v1/invoices/{id} answer 401 without an
	// Authorization header.
	requireAuth atomic.Bool
}

func newUpstream(t *testing.T, tlsServer bool) *upstream {
	u := &upstream{byRef: map[string]string{}, byIdem: map[string]string{}, hidden: map[string]bool{}, perRef: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", u.create)
	mux.HandleFunc("POST /v1/emails", u.create)
	mux.HandleFunc("PUT /v1/things/{id}", u.create)
	mux.HandleFunc("GET /v1/invoices", u.lookup)
	mux.HandleFunc("GET /v1/invoices/{id}", u.get)
	mux.HandleFunc("GET /v1/stream", u.stream)
	mux.HandleFunc("POST /v1/big", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.effects.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, io.LimitReader(&patternReader{n: bigResponse}, bigResponse))
	})
	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") })
	if tlsServer {
		u.Server = httptest.NewTLSServer(mux)
	} else {
		u.Server = httptest.NewServer(mux)
	}
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) create(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	hook := u.getHook()
	if hook != nil && !hook("before", r) {
		panic(http.ErrAbortHandler) // the connection drops; no effect
	}
	answer, replayed := u.commit(r, body)
	if replayed { // the provider dedupes: the original answer, no effect
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, answer)
		return
	}
	if hook != nil {
		hook("after", r)
	}
	status := http.StatusCreated
	if s := u.status.Load(); s != 0 {
		status = int(s)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Set-Cookie", "session=upstream-secret")
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

// commit applies one effect atomically, as a provider would: a request
// whose Idempotency-Key was seen gets the stored answer and no effect.
func (u *upstream) commit(r *http.Request, body []byte) (answer string, replayed bool) {
	idem := r.Header.Get("Idempotency-Key")
	u.mu.Lock()
	defer u.mu.Unlock()
	if stored, seen := u.byIdem[idem]; idem != "" && seen {
		return stored, true
	}
	n := u.effects.Add(1)
	id := fmt.Sprintf("inv_%d", n)
	var doc map[string]any
	if json.Unmarshal(body, &doc) == nil {
		if ref, ok := doc["reference"].(string); ok {
			u.byRef[ref] = id
			u.perRef[ref]++
		}
	}
	auth := r.Header.Get("Authorization")
	if u.noEcho.Load() {
		auth = "-"
	}
	answer = fmt.Sprintf(`{"id":%q,"status":"open","auth_seen":%q,"idem":%q}`, id, auth, idem)
	if idem != "" {
		u.byIdem[idem] = answer
	}
	if u.hide.Load() {
		u.hidden[id] = true
	}
	return answer, false
}

// effectsFor reports the effects committed for a reference.
func (u *upstream) effectsFor(ref string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.perRef[ref]
}

// get answers GET /v1/invoices/{id}: 404 while the invoice is hidden.
func (u *upstream) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if u.requireAuth.Load() && r.Header.Get("Authorization") == "" {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	u.mu.Lock()
	hidden := u.hidden[id]
	u.mu.Unlock()
	if hidden || !strings.HasPrefix(id, "inv_") {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	fmt.Fprintf(w, `{"id":%q,"status":"open"}`, id)
}

func (u *upstream) setHook(h func(stage string, r *http.Request) bool) {
	u.hookMu.Lock()
	defer u.hookMu.Unlock()
	u.hook = h
}

func (u *upstream) getHook() func(stage string, r *http.Request) bool {
	u.hookMu.Lock()
	defer u.hookMu.Unlock()
	return u.hook
}

// show makes every hidden invoice visible.
func (u *upstream) show() {
	u.mu.Lock()
	defer u.mu.Unlock()
	clear(u.hidden)
}

func (u *upstream) lookup(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	id, ok := u.byRef[r.URL.Query().Get("reference")]
	u.mu.Unlock()
	if !ok {
		io.WriteString(w, `{"data":[]}`)
		return
	}
	fmt.Fprintf(w, `{"data":[{"id":%q}]}`, id)
}

// stream sends chunks one at a time, each after the previous was read.
func (u *upstream) stream(w http.ResponseWriter, r *http.Request) {
	f := w.(http.Flusher)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(w, "chunk-%d\n", i)
		f.Flush()
	}
}

// port is the upstream's port.
func (u *upstream) port() string { return u.host()[strings.LastIndex(u.host(), ":")+1:] }

// bigResponse is the size of POST /v1/big's answer.
const bigResponse = 3 << 20

// host is the upstream's host:port, as rules name it.
func (u *upstream) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(u.URL, "http://"), "https://")
}

// caPEM writes the upstream's TLS certificate as PEM, for upstream.ca_file.
func (u *upstream) caPEM(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "upstream-ca.pem")
	cert := u.Certificate()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// post sends a JSON body through the proxy.
func post(t *testing.T, c *http.Client, u string, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return do(t, c, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// ruleFile renders a rule file for an upstream host.
func ruleFile(host string, routes string) string {
	return fmt.Sprintf("version: v1\napi: billing\nhosts: [%q]\ncredential: {header: Authorization}\nroutes:\n%s", host, routes)
}

// sharedRuleFile is ruleFile with credential: none: callers share one
// scope, so that a step resumed after a restart needs no caller's
// credential lent (tests of what happens without one), and keys are those
// a journal written without credentials holds.
func sharedRuleFile(host, routes string) string {
	return strings.Replace(ruleFile(host, routes), "credential: {header: Authorization}", "credential: none", 1)
}

// writeConfig writes a config file into dir and returns its path.
func writeConfig(t *testing.T, dir, yaml string) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
