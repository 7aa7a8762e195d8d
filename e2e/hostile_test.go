package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

func TestGarbageConnectionsLeaveItServing(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	junk := [][]byte{
		[]byte("\x16\x03\x01\x02\x00garbage-tls"),
		[]byte("GET\r\n\r\n"),
		[]byte("POST http://" + up.host() + "/v1/invoices HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
		[]byte("CONNECT " + up.host() + " HTTP/1.1\r\n\r\n\x00\x01\x02"),
		[]byte("POST http://" + up.host() + "/v1/invoices HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\""),
		bytes.Repeat([]byte("A"), 70000),
		[]byte("GET http://" + up.host() + "/v1/ping HTTP/1.1\r\n" + strings.Repeat("X-Junk: y\r\n", 5000) + "\r\n"),
	}
	rnd := make([]byte, 512)
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", p.proxyURL.Host)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		payload := junk[i%len(junk)]
		if i%len(junk) == 0 {
			rand.Read(rnd)
			payload = rnd
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(payload)
		if i%2 == 0 {
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
		}
		c.Close()
	}
	r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != 201 {
		t.Fatalf("after 200 bad connections: %d", r.StatusCode)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1 (garbage never reaches the upstream as a guarded call)", got)
	}
}

// patternReader yields n bytes without holding them in memory.
type patternReader struct{ n, off int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.off)
	for i := range p[:k] {
		p[i] = 'a' + byte((r.off+int64(i))%26)
	}
	r.off += k
	return int(k), nil
}

func peakRSS(t *testing.T, p *proc) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Skip("no /proc on this system") // Linux-only measurement
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func TestHundredMiBBodies(t *testing.T) {
	const size = 100 << 20
	var received int64
	up := newUpstream(t, false)
	sink := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received = n
		fmt.Fprint(w, n)
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go sink.Serve(ln)
	t.Cleanup(func() { sink.Close() })
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)

	// Guarded: refused at limits.max_body (8 MiB), without reading it all.
	req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", &patternReader{n: size})
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), "body-too-large") {
			t.Fatalf("guarded 100 MiB: %d %s", resp.StatusCode, b)
		}
	} // a closed connection mid-upload is also a refusal
	if up.effects.Load() != 0 {
		t.Fatal("an oversized guarded body reached the upstream")
	}

	// Passthrough: streamed to the upstream, never buffered.
	req, _ = http.NewRequest("POST", "http://"+ln.Addr().String()+"/upload", &patternReader{n: size})
	req.ContentLength = size
	_, body := do(t, c, req)
	if body != strconv.Itoa(size) || received != size {
		t.Fatalf("passthrough 100 MiB: upstream got %d (%s)", received, body)
	}
	// The race detector multiplies memory: the bound holds for real builds.
	if rss := peakRSS(t, p); rss > 64<<20 && !raceEnabled {
		t.Errorf("peak RSS %d MiB after 100 MiB bodies, want ≤ 64 MiB", rss>>20)
	}
}

func TestCorruptedJournalIsRefusedAndKept(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	up := newUpstream(t, false)
	s2 := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s2.start(t)
	c := p.client(t)
	for i := range 200 {
		post(t, c, up.URL+"/v1/invoices", `{"i":`+strconv.Itoa(i)+`}`)
	}
	p.kill()
	path := filepath.Join(s2.dir, "toolguard.db")
	// Damage a page the file uses: the root of its step records (a free
	// page, which bbolt never reads, could be damaged harmlessly).
	root := recordsRoot(t, path)
	data, _ := os.ReadFile(path)
	for i := root * 4096; i < (root+1)*4096 && i < len(data); i++ {
		data[i] = 0xAB
	}
	os.WriteFile(path, data, 0o600)
	s.dir = s2.dir
	// A serve that accepted the file would run until killed: bound it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--rules", s.rules, "--journal", path, "--ca-dir", filepath.Join(s.dir, "ca"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("serve on a corrupted journal: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "left untouched") || strings.Contains(string(out), "goroutine ") {
		t.Fatalf("want one clear error, no stack trace:\n%s", out)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Fatal("the corrupted journal was modified")
	}
	out, err = exec.Command(binary, "journal", "check", "--journal", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "corrupt") {
		t.Fatalf("journal check names the problem: %v\n%s", err, out)
	}
}

// recordsRoot returns the page number of the root of the step records of
// the journal file at path, as of its last commit.
func recordsRoot(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root int
	db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte("step_records")); b != nil {
			root = int(b.Root())
		}
		return nil
	})
	if root < 2 {
		t.Fatalf("step records have no page of their own (root %d): too few calls", root)
	}
	return root
}

func TestPlantedSecretsNeverStored(t *testing.T) {
	const marker = "PLANTED-SECRET-7f3a"
	up := newUpstream(t, false)
	up.noEcho.Store(true)
	route := `  - name: charge
    match: POST /v1/emails
    effect: irreversible
    key:
      ignore: [trace]
    redact: [card.number]
    lookup:
      request: GET http://` + up.host() + `/v1/invoices?reference={{body.reference}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
`
	s := newSetup(t, map[string]string{"billing.yaml": "version: v1\napi: billing\nhosts: [\"" + up.host() + "\"]\ncredential: {header: X-Api-Key}\nroutes:\n" + route})
	p := s.start(t)
	c := p.client(t)
	body := `{"reference":"r1","card":{"number":"` + marker + `-card"},"trace":"t"}`
	headers := []string{"X-Api-Key", marker + "-apikey", "Authorization", "Bearer " + marker + "-auth",
		"Proxy-Authorization", "Basic " + marker + "-proxy", "Cookie", "sid=" + marker + "-cookie"}
	up.status.Store(503) // outcome unknown: the step's error path and the lookup run too
	post(t, c, up.URL+"/v1/emails", body, headers...)
	up.status.Store(0)
	post(t, c, up.URL+"/v1/emails", body, headers...)
	post(t, c, up.URL+"/v1/emails", `{"reference":`, headers...)                      // invalid body: a problem answer
	post(t, c, up.URL+"/v1/emails", strings.Replace(body, "r1", "r2", 1), headers...) // stored as answered
	p.cli("journal", "export", "--jsonl", "--admin", p.adminURL).Run()
	metrics, _ := p.adminGet("/metrics")
	mb, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	p.kill()
	path := filepath.Join(s.dir, "toolguard.db")
	journalBytes, _ := os.ReadFile(path)
	decoded := decodedJournal(t, path) // stored bodies are base64 in the file
	for name, hay := range map[string][]byte{"journal file": journalBytes, "decoded journal": decoded, "logs": []byte(p.logs.String()), "metrics": mb} {
		for _, m := range []string{"-apikey", "-auth", "-proxy", "-cookie", "-card"} {
			if bytes.Contains(hay, []byte(marker+m)) {
				t.Errorf("%s contains the planted %s secret", name, m)
			}
		}
	}
	if !bytes.Contains(decoded, []byte("inv_")) {
		t.Error("sanity: the journal file does not hold the stored response at all")
	}
}

func TestProxyIsNotAnOpenRelay(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	// The admin API through the proxy.
	r, body := do(t, c, mustRequest("GET", p.adminURL+"/v1/steps"))
	if r.StatusCode != 403 || !strings.Contains(body, "own listeners") {
		t.Fatalf("admin API through the proxy: %d %s", r.StatusCode, body)
	}
	// A tunnel to a port that is neither 443/80 nor named in rules.
	conn, err := net.Dial("tcp", p.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("CONNECT to port 22: %v %v", resp, err)
	}
}

// decodedJournal renders every step (stored bodies decoded) and event of a
// journal file as text, for grepping.
func decodedJournal(t *testing.T, path string) []byte {
	t.Helper()
	j, err := bolt.Open(path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var out bytes.Buffer
	j.ForEach(func(st journal.Step) error {
		b, _ := json.Marshal(st)
		out.Write(b)
		if st.Response != nil {
			out.Write(st.Response.Body)
			b, _ := json.Marshal(st.Response.Header)
			out.Write(b)
		}
		return nil
	})
	evs, _ := j.Events(0, 100000)
	for _, e := range evs {
		b, _ := json.Marshal(e)
		out.Write(b)
	}
	return out.Bytes()
}

func TestHeaderLimit(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			up := newUpstream(t, scheme == "https")
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
			s.env = append(s.env, "TOOLGUARD_MAX_HEADER_BYTES=8KiB")
			if scheme == "https" {
				s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
			}
			p := s.start(t)
			r, body := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody, "X-Big", strings.Repeat("x", 10<<10))
			if r.StatusCode != 431 || !strings.Contains(body, "urn:toolguard:headers-too-large") {
				t.Fatalf("got %d %s, want 431 headers-too-large", r.StatusCode, body)
			}
			if up.effects.Load() != 0 {
				t.Fatal("an oversized request reached the upstream")
			}
		})
	}
}

func TestFilesAreCreatedPrivate(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	s.start(t)
	for _, name := range []string{"toolguard.db", "toolguard.db.secret", "ca/ca-key.pem"} {
		fi, err := os.Stat(filepath.Join(s.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", name, mode)
		}
	}
}

// A guarded answer larger than limits.max_stored_response reaches the agent
// whole (streamed), is stored as a hash, and a duplicate gets the documented
// truncated answer.
func TestOversizedResponse(t *testing.T) {
	up := newUpstream(t, false)
	route := `  - name: export
    match: POST /v1/big
    effect: irreversible
`
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route)})
	s.env = append(s.env, "TOOLGUARD_MAX_STORED_RESPONSE=64KiB")
	p := s.start(t)
	c := p.client(t)
	r, body := post(t, c, up.URL+"/v1/big", `{"report":"q3"}`)
	want, _ := io.ReadAll(&patternReader{n: bigResponse})
	if r.StatusCode != 200 || body != string(want) {
		t.Fatalf("first answer: %d, %d bytes, want the whole %d", r.StatusCode, len(body), bigResponse)
	}
	if r.Header.Get("Content-Type") != "application/octet-stream" || r.Header.Get("Toolguard-Body-Truncated") != "" {
		t.Fatalf("first answer headers: %v, want the upstream's own", r.Header)
	}
	sum := sha256.Sum256(want)
	key := r.Header.Get("Toolguard-Key")
	eventually(t, "response hash", func() bool {
		return strings.Contains(string(decodedJournalVia(t, p, key)), hex.EncodeToString(sum[:]))
	})
	r, body = post(t, c, up.URL+"/v1/big", `{"report":"q3"}`)
	if r.Header.Get("Toolguard-Body-Truncated") != "true" || !strings.Contains(body, hex.EncodeToString(sum[:])) || r.StatusCode != 200 {
		t.Fatalf("duplicate: %d %q %s", r.StatusCode, r.Header.Get("Toolguard-Body-Truncated"), body)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	if rss := peakRSS(t, p); rss > 64<<20 && !raceEnabled {
		t.Errorf("peak RSS %d MiB streaming a %d MiB answer", rss>>20, bigResponse>>20)
	}
}

// decodedJournalVia reads a step through the admin API.
func decodedJournalVia(t *testing.T, p *proc, key string) []byte {
	t.Helper()
	var st map[string]any
	p.admin(t, "GET", "/v1/steps/"+key, nil, &st)
	b, _ := json.Marshal(st)
	return b
}

// TestBodyBufferBoundsHeldBodies: limits.body_buffer bounds the bytes of
// guarded bodies held at once. A call whose body does not fit while another
// is held upstream waits, then gets 503 with Retry-After and has no effect;
// a call that fits goes through meanwhile; once the held call is answered,
// the refused one goes through on retry.
func TestBodyBufferBoundsHeldBodies(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_BODY_BUFFER=64KiB", "TOOLGUARD_IN_FLIGHT_WAIT=300ms")
	p := s.start(t)
	c := p.client(t)
	pad := strings.Repeat("x", 40<<10)
	body := func(ref, pad string) string {
		return fmt.Sprintf(`{"customer":"c1","amount":1,"reference":%q,"pad":%q}`, ref, pad)
	}

	held, release := make(chan struct{}), make(chan struct{})
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" && r.ContentLength > 40<<10 && r.Header.Get("X-Hold") == "1" {
			close(held)
			<-release
		}
		return true
	})
	first := make(chan int)
	go func() {
		r, _ := post(t, c, up.URL+"/v1/invoices", body("big-1", pad), "X-Hold", "1")
		first <- r.StatusCode
	}()
	<-held

	r, text := post(t, c, up.URL+"/v1/invoices", body("big-2", pad))
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" ||
		!strings.Contains(text, "urn:toolguard:unavailable") || !strings.Contains(text, "limits.body_buffer") {
		t.Fatalf("a body beyond the buffer while another is held: %d %q (Retry-After %q)", r.StatusCode, text, r.Header.Get("Retry-After"))
	}
	if r, text := post(t, c, up.URL+"/v1/invoices", body("small", "")); r.StatusCode != http.StatusCreated {
		t.Fatalf("a small body that fits: %d %s", r.StatusCode, text)
	}

	close(release)
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the held call: %d", code)
	}
	if r, text := post(t, c, up.URL+"/v1/invoices", body("big-2", pad)); r.StatusCode != http.StatusCreated {
		t.Fatalf("the refused call, retried once the buffer is free: %d %s", r.StatusCode, text)
	}
	// A body of unannounced length (chunked) longer than the whole buffer
	// is read alone.
	req, _ := http.NewRequest(http.MethodPost, up.URL+"/v1/invoices",
		io.MultiReader(strings.NewReader(body("chunked", strings.Repeat("y", 100<<10)))))
	req.Header.Set("Content-Type", "application/json")
	if r, text := do(t, c, req); r.StatusCode != http.StatusCreated || req.ContentLength != 0 {
		t.Fatalf("a chunked body longer than the buffer: %d %s", r.StatusCode, text)
	}
	for _, ref := range []string{"big-1", "big-2", "small", "chunked"} {
		if n := up.effectsFor(ref); n != 1 {
			t.Errorf("%s: %d effects, want 1", ref, n)
		}
	}
	if v := metricValue(t, p, `toolguard_rejected_total{reason="body_buffer"}`); v != 1 {
		t.Errorf("rejected body_buffer = %v, want 1", v)
	}
}
