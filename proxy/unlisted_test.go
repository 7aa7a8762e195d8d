package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// writeLog is a provider that takes effect on every write it answers and
// records what each write carried; reads answer an empty list. Before
// answers before a write takes effect: false drops the connection with
// no effect.
type writeLog struct {
	mu     sync.Mutex
	writes []seenWrite
	before func(n int) bool
}

// seenWrite is one write that reached the provider.
type seenWrite struct {
	method, path, key, body string
	effect                  bool
}

func serveWrites(h *harness) *writeLog {
	w := &writeLog{}
	var hd http.Handler = http.HandlerFunc(w.serve)
	h.up.extra.Store(&hd)
	return w
}

func (l *writeLog) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	b, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.writes = append(l.writes, seenWrite{method: r.Method, path: r.URL.Path, key: r.Header.Get("Idempotency-Key"), body: string(b)})
	n := len(l.writes)
	before := l.before
	l.mu.Unlock()
	if before != nil && !before(n) {
		panic(http.ErrAbortHandler)
	}
	l.mu.Lock()
	l.writes[n-1].effect = true
	effects := 0
	for _, s := range l.writes {
		if s.effect {
			effects++
		}
	}
	l.mu.Unlock()
	fmt.Fprintf(w, `{"id":"obj_%d","object":"thing"}`, effects)
}

// effects counts the writes that took effect.
func (l *writeLog) effects() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.writes {
		if s.effect {
			n++
		}
	}
	return n
}

func (l *writeLog) seen() []seenWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seenWrite(nil), l.writes...)
}

// sendForm sends a form body with headers (name, value pairs).
func (h *harness) sendForm(method, path, ctype, body string, headers ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.up.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer sk_test_1")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return h.do(req)
}

const formType = "application/x-www-form-urlencoded"

// nativeTop is a rule file's native key and volatile fields, as a
// provider like Stripe needs them.
const nativeTop = "native_idempotency: {header: Idempotency-Key, ttl: 24h}\nvolatile: ['expand\\[\\]']\n"

// Writes to a host a rule file names that no route lists are guarded
// (unlisted: guard, the default): irreversible, keyed on the whole request
// less volatile fields, the file's native key sent in place of the SDK's
// own, one effect per intent; the decision line and the metrics name them
// "unlisted".
func TestUnlistedWriteGuarded(t *testing.T) {
	h := startHarness(t, harnessConfig{TLS: true, Routes: invoiceRoute, Top: nativeTop})
	p := serveWrites(h)
	first, a := h.sendForm("POST", "/v1/products", formType, "name=Shirt&price=20", "Idempotency-Key", "sdk-minted-1")
	again, b := h.sendForm("POST", "/v1/products", formType, "price=20&expand[0]=tax&name=Shirt", "Idempotency-Key", "sdk-minted-2")
	if first.StatusCode != http.StatusOK || first.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("first call: %d %s %s, want 200 forwarded", first.StatusCode, first.Header.Get(HeaderOutcome), a)
	}
	if again.Header.Get(HeaderOutcome) != OutcomeReplayed || a != b {
		t.Errorf("identical intent: %s %s, want %s replayed", again.Header.Get(HeaderOutcome), b, a)
	}
	key := first.Header.Get(HeaderKey)
	if seen := p.seen(); len(seen) != 1 || seen[0].key != key || seen[0].key == "sdk-minted-1" {
		t.Errorf("provider saw %+v, want one write with Idempotency-Key %s (the SDK's replaced)", seen, key)
	}
	if r, _ := h.sendForm("POST", "/v1/products", formType, "name=Hat&price=20"); r.Header.Get(HeaderOutcome) != OutcomeForwarded || r.Header.Get(HeaderKey) == key {
		t.Errorf("another intent: %s key %s, want forwarded with its own key", r.Header.Get(HeaderOutcome), r.Header.Get(HeaderKey))
	}
	for range 2 {
		h.sendForm("DELETE", "/v1/products/prod_1", formType, "")
	}
	if n := p.effects(); n != 3 {
		t.Errorf("provider effects = %d, want 3 (one per intent)", n)
	}
	lines := h.guardedLines()
	if len(lines) != 5 || lines[0]["route"] != "unlisted" || lines[0]["why"] != "no route of billing matched: unlisted: guard" ||
		!strings.HasPrefix(fmt.Sprint(lines[1]["why"]), "no route of billing matched: unlisted: guard; ") {
		t.Errorf("decision lines = %v, want 5 of route unlisted saying no route matched", lines)
	}
	if got := h.metric(`toolguard_requests_total{api="billing",outcome="replayed",route="unlisted"}`); got != "2" {
		t.Errorf("replayed unlisted requests = %q, want 2", got)
	}
	if sts := h.steps(); len(sts) != 3 || sts[0].Route != "unlisted" || sts[0].API != "billing" {
		t.Errorf("steps = %+v, want 3 of billing/unlisted", sts)
	}
}

// An unlisted write whose outcome is unknown is re-sent by the caller's
// retry with the same native key, which the provider dedupes on: the key
// is the intent's, whatever the SDK minted for each attempt.
func TestUnlistedWriteResentOnItsKey(t *testing.T) {
	h := startHarness(t, harnessConfig{TLS: true, Routes: invoiceRoute, Top: nativeTop})
	p := serveWrites(h)
	p.before = func(n int) bool { return n > 1 } // the first attempt is cut off
	r, _ := h.sendForm("POST", "/v1/coupons", formType, "percent_off=10", "Idempotency-Key", "sdk-1")
	if r.StatusCode < 500 {
		t.Fatalf("first call: %d, want an unknown outcome (5xx)", r.StatusCode)
	}
	r, body := h.sendForm("POST", "/v1/coupons", formType, "percent_off=10", "Idempotency-Key", "sdk-2")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("retry: %d %s, want 200", r.StatusCode, body)
	}
	seen := p.seen()
	if len(seen) != 2 || seen[0].key != seen[1].key || seen[0].key != r.Header.Get(HeaderKey) {
		t.Fatalf("provider saw %+v, want two sends with the intent's key %s", seen, r.Header.Get(HeaderKey))
	}
	if n := p.effects(); n != 1 {
		t.Errorf("provider effects = %d, want 1", n)
	}
}

// unlisted: pass lets writes no route lists through, as before; a read
// always passes; unmatched: guard does not guard a host a file names.
func TestUnlistedPassAndReads(t *testing.T) {
	tests := []struct {
		name        string
		cfg         harnessConfig
		method      string
		wantEffects int
		wantOutcome string
		wantWhy     string
	}{
		{name: "unlisted pass", cfg: harnessConfig{Routes: invoiceRoute, Top: "unlisted: pass\n"}, method: "POST",
			wantEffects: 2, wantOutcome: OutcomePassthrough, wantWhy: "no route of billing matched: unlisted: pass"},
		{name: "unlisted pass under unmatched guard", cfg: harnessConfig{Routes: invoiceRoute, Top: "unlisted: pass\n", Options: unmatchedGuard()}, method: "POST",
			wantEffects: 2, wantOutcome: OutcomePassthrough, wantWhy: "no route of billing matched: unlisted: pass"},
		{name: "read", cfg: harnessConfig{Routes: invoiceRoute}, method: "GET", wantOutcome: OutcomePassthrough, wantWhy: "no route"},
		{name: "read under unmatched guard", cfg: harnessConfig{Routes: invoiceRoute, Options: unmatchedGuard()}, method: "GET", wantOutcome: OutcomePassthrough, wantWhy: "no route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, tc.cfg)
			p := serveWrites(h)
			for range 2 {
				r, body := h.sendForm(tc.method, "/v1/products", formType, "name=Shirt")
				if r.StatusCode != http.StatusOK || r.Header.Get(HeaderOutcome) != tc.wantOutcome {
					t.Fatalf("%d %s %s, want 200 %s", r.StatusCode, r.Header.Get(HeaderOutcome), body, tc.wantOutcome)
				}
			}
			if n := p.effects(); n != tc.wantEffects {
				t.Errorf("provider effects = %d, want %d", n, tc.wantEffects)
			}
			if sts := h.steps(); len(sts) != 0 {
				t.Errorf("steps = %+v, want none", sts)
			}
			if lines := h.decisionLines(); len(lines) != 2 || lines[0]["why"] != tc.wantWhy {
				t.Errorf("decision lines = %v, want why %q", lines, tc.wantWhy)
			}
		})
	}
}

// Regression: a body of a type neither JSON nor a form nor multipart (an
// upload) was refused with invalid-body; it is keyed by its content hash.
func TestRawBodyKeyedByHash(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Top: nativeTop})
	p := serveWrites(h)
	const octet = "application/octet-stream"
	for _, body := range []string{"\x00\xffraw bytes", "\x00\xffraw bytes", "\x00\xfeother bytes"} {
		if r, b := h.sendForm("PUT", "/v1/blobs/a.bin", octet, body); r.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %d %s, want 200", r.StatusCode, b)
		}
	}
	if n := p.effects(); n != 2 {
		t.Errorf("provider effects = %d, want 2 (one per content)", n)
	}
	if seen := p.seen(); len(seen) != 2 || seen[0].body != "\x00\xffraw bytes" {
		t.Errorf("provider saw %+v, want the bytes as sent", seen)
	}
}

// Regression: the Stripe pack refused create_charge without
// metadata[order_id] (400 invalid-body), a field Stripe does not require.
// It is forwarded and keyed on the whole request: two descriptions are two
// charges, an identical request is one.
func TestStripePackChargeWithoutReference(t *testing.T) {
	h := startHarness(t, harnessConfig{TLS: true, Pack: "stripe"})
	p := serveWrites(h)
	send := func(body string) (*http.Response, string) {
		return h.sendForm("POST", "/v1/charges", formType, body, "Idempotency-Key", "sdk-minted")
	}
	r, b := send("amount=2000&currency=usd&source=tok_visa&description=first")
	if r.StatusCode != http.StatusOK || r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("charge without reference: %d %s %s, want 200 forwarded", r.StatusCode, r.Header.Get(HeaderOutcome), b)
	}
	if r, _ := send("currency=usd&amount=2000&description=first&source=tok_visa&expand[0]=balance_transaction"); r.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Errorf("identical charge: %s, want replayed", r.Header.Get(HeaderOutcome))
	}
	if r, _ := send("amount=2000&currency=usd&source=tok_visa&description=second"); r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Errorf("another description: %s, want forwarded", r.Header.Get(HeaderOutcome))
	}
	if n := p.effects(); n != 2 {
		t.Errorf("provider effects = %d, want 2", n)
	}
	if lines := h.guardedLines(); len(lines) != 3 || lines[0]["route"] != "create_charge" {
		t.Errorf("decision lines = %v, want 3 of create_charge", lines)
	}
}
