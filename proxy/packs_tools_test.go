package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/rules"
)

// toolSim simulates one provider of the developer-tool, email and other
// packs: every request (writes and the proxy's own lookups) goes through
// answer, which sees the request and its body and keeps the provider's
// state.
type toolSim struct {
	mu     sync.Mutex
	seen   []simCall
	answer func(c simCall) (status int, header http.Header, body string)
}

// simCall is one request the simulator received.
type simCall struct {
	Method, URL string
	Header      http.Header
	Body        string
}

func (s *toolSim) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	c := simCall{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone(), Body: string(body)}
	s.mu.Lock()
	s.seen = append(s.seen, c)
	status, h, out := s.answer(c)
	s.mu.Unlock()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h,
		Body: io.NopCloser(strings.NewReader(out)), Request: req}, nil
}

// calls returns the requests of method received so far.
func (s *toolSim) calls(method string) []simCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []simCall
	for _, c := range s.seen {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// packProxy is a proxy loaded with one pack's rule file, sending upstream
// (and looking up) to sim, on a settable clock.
type packProxy struct {
	j      *bolt.Journal
	client *http.Client
	clock  *fakeClock
	up     *simUpstream
}

func startPackProxy(t *testing.T, pack string, sim http.RoundTripper) *packProxy {
	t.Helper()
	file := filepath.Join("..", "rules", "packs", pack, pack+".yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	up := serveSim(t, sim)
	api, err := rules.Parse(file, []byte(up.at(string(data))))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &bytes.Buffer{}}, nil))
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if errs := j.Check(); len(errs) > 0 {
			t.Errorf("journal check: %v", errs)
		}
		j.Close()
	})
	srv, err := New(up.options(Options{Rules: set, Journal: j, Logger: log, Secret: []byte("0123456789abcdef0123456789abcdef")}))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Now()}
	srv.now = clock.now
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	pu, _ := url.Parse(ts.URL)
	return &packProxy{j: j, clock: clock, up: up, client: &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}}
}

// send sends one call through the proxy (plain HTTP to the pack's host).
func (p *packProxy) send(t *testing.T, method, rawURL, contentType, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.up.at(rawURL), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func wantOutcome(t *testing.T, what string, resp *http.Response, body string, status int, outcome string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get(HeaderOutcome) != outcome {
		t.Fatalf("%s: %d %s %s, want %d %s", what, resp.StatusCode, resp.Header.Get(HeaderOutcome), body, status, outcome)
	}
}

// Postmark (injected reference + exact lookup): the derived key is written
// into Metadata on the send; after an unknown outcome the retry finds the
// message by that key and is answered without a second email.
func TestPackPostmarkRecoversThroughMetadata(t *testing.T) {
	var sentKey string
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if c.Method == http.MethodPost {
			sentKey = gjson.Get(c.Body, "Metadata.toolguard_key").String()
			return 502, nil, `{"ErrorCode":500}` // sent, answer lost
		}
		if strings.Contains(c.URL, "metadata_toolguard_key="+sentKey) && sentKey != "" {
			return 200, nil, `{"TotalCount":1,"Messages":[{"MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","Metadata":{"toolguard_key":"` + sentKey + `"}}]}`
		}
		return 200, nil, `{"TotalCount":0,"Messages":[]}`
	}}
	p := startPackProxy(t, "postmark", sim)
	body := `{"From":"billing@example.com","To":"ada@example.com","Subject":"Your invoice","TextBody":"Thanks","Metadata":{"order_id":"o-77"}}`
	h := http.Header{"X-Postmark-Server-Token": {"pm-1"}}
	first, b := p.send(t, http.MethodPost, "http://api.postmarkapp.com/email", "application/json", body, h)
	wantOutcome(t, "first send", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	key := first.Header.Get(HeaderKey)
	if sentKey != key {
		t.Fatalf("Metadata.toolguard_key sent = %q, want the derived key %q", sentKey, key)
	}
	retry, b := p.send(t, http.MethodPost, "http://api.postmarkapp.com/email", "application/json",
		`{"To":"ada@example.com","From":"billing@example.com","TextBody":"Thanks","Subject":"Your invoice","Tag":"retry"}`, h)
	wantOutcome(t, "retry", retry, b, http.StatusOK, OutcomeRecovered)
	if got := len(sim.calls(http.MethodPost)); got != 1 {
		t.Fatalf("emails sent = %d, want 1", got)
	}
	if st, _ := p.j.Get(key); st.OperationID != "b7bc2f4a-e38e-4336-af7d-e6c392c2f817" {
		t.Fatalf("operation id %q, want the found MessageID", st.OperationID)
	}
}

// GitHub (hidden marker + eventually consistent search + settle): the
// search does not see the new issue at first; inside the settle window the
// retry is told to wait, never sent again; after it the issue is found and
// the agent gets the issue object with 201.
func TestPackGitHubIssueSettlesThenRecovers(t *testing.T) {
	var indexed bool
	var sentBody string
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if c.Method == http.MethodPost {
			sentBody = gjson.Get(c.Body, "body").String()
			return 502, nil, `{"message":"Server Error"}`
		}
		if !indexed {
			return 200, nil, `{"total_count":0,"incomplete_results":false,"items":[]}`
		}
		item, _ := json.Marshal(map[string]any{"number": 7, "title": "Checkout fails for EUR", "body": sentBody})
		return 200, nil, `{"total_count":1,"incomplete_results":false,"items":[` + string(item) + `]}`
	}}
	p := startPackProxy(t, "github", sim)
	h := http.Header{"Authorization": {"Bearer ghp_1"}}
	const issues = "http://api.github.com/repos/acme/api/issues"
	first, b := p.send(t, http.MethodPost, issues, "application/json", `{"title":"Checkout fails for EUR","body":"Steps: pay in EUR."}`, h)
	wantOutcome(t, "first send", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	key := first.Header.Get(HeaderKey)
	if want := "Steps: pay in EUR.\n\n<!-- toolguard:" + key + " -->"; sentBody != want {
		t.Fatalf("issue body sent = %q, want %q", sentBody, want)
	}
	// The retry copies the body it was shown, marker included: same key.
	copied, _ := json.Marshal(map[string]string{"title": "Checkout fails for EUR", "body": sentBody})
	early, b := p.send(t, http.MethodPost, issues, "application/json", string(copied), h)
	if early.StatusCode != http.StatusConflict || early.Header.Get("Retry-After") == "" || early.Header.Get(HeaderKey) != key {
		t.Fatalf("retry inside the settle window: %d %s (key %s), want 409 with Retry-After for key %s", early.StatusCode, b, early.Header.Get(HeaderKey), key)
	}
	indexed = true
	p.clock.add(3 * time.Minute)
	late, b := p.send(t, http.MethodPost, issues, "application/json", string(copied), h)
	wantOutcome(t, "retry after the settle window", late, b, http.StatusCreated, OutcomeRecovered)
	if gjson.Get(b, "number").Int() != 7 {
		t.Fatalf("recovered answer %s, want the found issue", b)
	}
	if got := len(sim.calls(http.MethodPost)); got != 1 {
		t.Fatalf("issues created = %d, want 1", got)
	}
}

// Google Calendar: the derived key is the event's id; after an unknown
// outcome events.get finds it; a second insert that reaches Google anyway
// is refused with 409 and recorded as already done.
func TestPackGoogleCalendarEventID(t *testing.T) {
	events := map[string]string{}
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if c.Method == http.MethodPost {
			id := gjson.Get(c.Body, "id").String()
			if _, dup := events[id]; dup {
				return 409, nil, `{"error":{"code":409,"message":"The requested identifier already exists."}}`
			}
			events[id] = c.Body
			return 503, nil, `{"error":{"code":503}}`
		}
		id := c.URL[strings.LastIndex(c.URL, "/")+1:]
		if ev, ok := events[id]; ok {
			return 200, nil, ev
		}
		return 404, nil, `{"error":{"code":404,"message":"Not Found"}}`
	}}
	p := startPackProxy(t, "google-calendar", sim)
	h := http.Header{"Authorization": {"Bearer ya29.1"}}
	const insert = "http://www.googleapis.com/calendar/v3/calendars/primary/events?sendUpdates=all"
	ev := `{"summary":"Design review","start":{"dateTime":"2026-12-03T10:00:00+01:00"},"end":{"dateTime":"2026-12-03T11:00:00+01:00"}}`
	first, b := p.send(t, http.MethodPost, insert, "application/json", ev, h)
	wantOutcome(t, "first insert", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	key := first.Header.Get(HeaderKey)
	if _, ok := events[key]; !ok {
		t.Fatalf("event ids sent %v, want the derived key %s", events, key)
	}
	retry, b := p.send(t, http.MethodPost, insert, "application/json", ev, h)
	wantOutcome(t, "retry", retry, b, http.StatusOK, OutcomeRecovered)
	if gjson.Get(b, "id").String() != key {
		t.Fatalf("recovered answer %s, want the event", b)
	}
	if got := len(sim.calls(http.MethodPost)); got != 1 {
		t.Fatalf("inserts sent = %d, want 1", got)
	}
	// Another proxy (its journal lost) sends the same intent: Google's 409
	// is already done, not a failure, and no second event exists.
	q := startPackProxy(t, "google-calendar", sim)
	again, b := q.send(t, http.MethodPost, insert, "application/json", ev, h)
	if again.StatusCode != http.StatusConflict || len(events) != 1 {
		t.Fatalf("insert through a fresh journal: %d %s, %d events", again.StatusCode, b, len(events))
	}
	if st, _ := q.j.Get(again.Header.Get(HeaderKey)); st.Status != journal.StatusCommitted || !strings.HasPrefix(st.Evidence, "already done") {
		t.Fatalf("step %s %q, want committed already done", st.Status, st.Evidence)
	}
}

// S3 PutObject: the key is the object and its bytes. After an unknown
// outcome the (reversible) retry is re-sent: the same bytes land on the
// same object again, and the step commits. Other bytes to the same object
// are another intent and are sent (an overwrite is valid S3: the pack
// never makes it create-only), and another bucket is another intent.
func TestPackS3PutObject(t *testing.T) {
	objects, writes := map[string]string{}, 0
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		u, _ := url.Parse(c.URL)
		name := u.Host + u.Path
		if c.Header.Get("If-None-Match") != "" {
			return 400, nil, `<Error><Code>UnexpectedCondition</Code></Error>`
		}
		objects[name] = c.Body
		writes++
		if writes == 1 {
			return 500, nil, `<Error><Code>InternalError</Code></Error>` // written, answer lost
		}
		return 200, http.Header{"ETag": {`"` + strconv.Itoa(writes) + `"`}}, ""
	}}
	p := startPackProxy(t, "s3", sim)
	put := func(rawURL, body, auth string) (*http.Response, string) {
		return p.send(t, http.MethodPut, rawURL, "text/csv", body, http.Header{"Authorization": {auth}})
	}
	const obj, day1, day2 = "http://reports.s3.amazonaws.com/2026/12/summary.csv", "day,total\n2026-12-01,4200\n", "day,total\n2026-12-02,4300\n"
	first, b := put(obj, day1, "AWS4-HMAC-SHA256 Signature=1")
	wantOutcome(t, "first put", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	retry, b := put(obj, day1, "AWS4-HMAC-SHA256 Signature=2")
	if retry.StatusCode != http.StatusOK || retry.Header.Get(HeaderKey) != first.Header.Get(HeaderKey) {
		t.Fatalf("retry: %d %s key %s, want the re-send's 200 for the same key", retry.StatusCode, b, retry.Header.Get(HeaderKey))
	}
	if st, _ := p.j.Get(first.Header.Get(HeaderKey)); st.Status != journal.StatusCommitted {
		t.Fatalf("step %s %q, want committed", st.Status, st.Evidence)
	}
	again, _ := put(obj, day1, "AWS4-HMAC-SHA256 Signature=3")
	if again.Header.Get(HeaderReplayed) != "true" || writes != 2 {
		t.Fatalf("a third identical put: replayed %q, %d writes; want a replay and 2 writes", again.Header.Get(HeaderReplayed), writes)
	}
	over, b := put(obj, day2, "AWS4-HMAC-SHA256 Signature=4")
	if over.StatusCode != http.StatusOK || over.Header.Get(HeaderKey) == first.Header.Get(HeaderKey) || objects["reports.s3.amazonaws.com/2026/12/summary.csv"] != day2 {
		t.Fatalf("overwrite: %d %s key %s; want it sent as another intent and applied", over.StatusCode, b, over.Header.Get(HeaderKey))
	}
	other, _ := put("http://reports-eu.s3.eu-west-1.amazonaws.com/2026/12/summary.csv", day1, "AWS4-HMAC-SHA256 Signature=5")
	if other.Header.Get(HeaderKey) == first.Header.Get(HeaderKey) || len(objects) != 2 {
		t.Fatalf("another bucket: key %s (first %s), %d objects; want another intent", other.Header.Get(HeaderKey), first.Header.Get(HeaderKey), len(objects))
	}
}

// Slack: {"ok": false} with HTTP 200 is a definitive failure, replayed and
// never re-sent; a lost answer holds the post for review.
func TestPackSlackOutcomes(t *testing.T) {
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if strings.Contains(c.Body, "C404") {
			return 200, nil, `{"ok":false,"error":"channel_not_found"}`
		}
		return 500, nil, `{"ok":false,"error":"fatal_error"}`
	}}
	p := startPackProxy(t, "slack", sim)
	h := http.Header{"Authorization": {"Bearer xoxb-1"}}
	const post = "http://slack.com/api/chat.postMessage"
	for i := range 2 {
		r, b := p.send(t, http.MethodPost, post, "application/json", `{"channel":"C404","text":"Deploy 42 finished"}`, h)
		if r.StatusCode != 200 || !strings.Contains(b, "channel_not_found") {
			t.Fatalf("call %d: %d %s", i, r.StatusCode, b)
		}
		if st, _ := p.j.Get(r.Header.Get(HeaderKey)); st.Status != journal.StatusFailed {
			t.Fatalf("call %d: step %s, want failed", i, st.Status)
		}
	}
	lost, b := p.send(t, http.MethodPost, post, "application/json", `{"channel":"C1","text":"Deploy 42 finished"}`, h)
	wantOutcome(t, "lost answer", lost, b, http.StatusGatewayTimeout, OutcomeBlocked)
	held, b := p.send(t, http.MethodPost, post, "application/json", `{"channel":"C1","text":"Deploy 42 finished"}`, h)
	if held.StatusCode != http.StatusConflict || !strings.Contains(b, "ambiguous-effect") {
		t.Fatalf("retry of a lost post: %d %s, want 409 ambiguous-effect", held.StatusCode, b)
	}
	if got := len(sim.calls(http.MethodPost)); got != 2 {
		t.Fatalf("posts sent = %d, want 2 (one per intent)", got)
	}
}

// Shopify: a THROTTLED answer (HTTP 200) is retryable and the retry is
// sent; userErrors are a failure, replayed without a second send.
func TestPackShopifyOutcomes(t *testing.T) {
	throttled := true
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if strings.Contains(c.Body, `"title":""`) {
			return 200, nil, `{"data":{"productCreate":{"product":null,"userErrors":[{"field":["title"],"message":"Title can't be blank"}]}}}`
		}
		if throttled {
			throttled = false
			return 200, nil, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`
		}
		return 200, nil, `{"data":{"productCreate":{"product":{"id":"gid://shopify/Product/1"},"userErrors":[]}}}`
	}}
	p := startPackProxy(t, "shopify", sim)
	h := http.Header{"X-Shopify-Access-Token": {"shpat_1"}}
	const gql = "http://acme.myshopify.com/admin/api/2025-10/graphql.json"
	doc := `{"query":"mutation M($product: ProductCreateInput!) { productCreate(product: $product) { product { id } userErrors { message } } }","variables":{"product":{"title":%q}}}`
	send := func(title string) (*http.Response, string) {
		return p.send(t, http.MethodPost, gql, "application/json", strings.Replace(doc, "%q", `"`+title+`"`, 1), h)
	}
	first, _ := send("Linen shirt")
	if st, _ := p.j.Get(first.Header.Get(HeaderKey)); st.Status != journal.StatusFailed || !st.Retryable {
		t.Fatalf("throttled: step %s retryable %v, want a retryable failure", st.Status, st.Retryable)
	}
	second, b := send("Linen shirt")
	wantOutcome(t, "retry after throttling", second, b, http.StatusOK, OutcomeForwarded)
	if st, _ := p.j.Get(second.Header.Get(HeaderKey)); st.Status != journal.StatusCommitted || st.OperationID != "gid://shopify/Product/1" {
		t.Fatalf("step %s %q, want committed gid://shopify/Product/1", st.Status, st.OperationID)
	}
	for range 2 {
		send("")
	}
	if got := len(sim.calls(http.MethodPost)); got != 3 {
		t.Fatalf("mutations sent = %d, want 3 (throttled, created, refused once)", got)
	}
}

// Resend (native header): the SDK's fresh Idempotency-Key is replaced by
// the derived key, so a re-send after an unknown outcome carries the key
// of the first send and Resend dedupes it.
func TestPackResendNativeKey(t *testing.T) {
	sent := map[string]int{}
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if c.Method != http.MethodPost {
			return 200, nil, `{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794","last_event":"delivered"}`
		}
		k := c.Header.Get("Idempotency-Key")
		sent[k]++
		if sent[k] == 1 {
			return 500, nil, `{"name":"internal_server_error"}`
		}
		return 200, nil, `{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}`
	}}
	p := startPackProxy(t, "resend", sim)
	body := `{"from":"billing@example.com","to":["ada@example.com"],"subject":"Your invoice","html":"<p>Thanks</p>"}`
	first, b := p.send(t, http.MethodPost, "http://api.resend.com/emails", "application/json", body, http.Header{"Authorization": {"Bearer re_1"}, "Idempotency-Key": {"sdk-1"}})
	wantOutcome(t, "first send", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	retry, b := p.send(t, http.MethodPost, "http://api.resend.com/emails", "application/json", body, http.Header{"Authorization": {"Bearer re_1"}, "Idempotency-Key": {"sdk-2"}})
	wantOutcome(t, "retry", retry, b, http.StatusOK, OutcomeRecovered)
	key := first.Header.Get(HeaderKey)
	if len(sent) != 1 || sent[key] != 2 {
		t.Fatalf("Idempotency-Key values sent %v, want the derived key %s twice", sent, key)
	}
}

// Mailgun (v: variable in a multipart body + events lookup that must hold
// the key): the SDK's multipart body gets a v:toolguard_key part; a lookup
// answer of other messages' events (a filter Mailgun ignored) is neither
// found nor absent, so the send is held, never repeated; an answer holding
// the key recovers it.
func TestPackMailgunMultipartReference(t *testing.T) {
	sent := map[string]string{} // subject → injected key
	ignoreFilter := true
	sim := &toolSim{answer: func(c simCall) (int, http.Header, string) {
		if c.Method == http.MethodPost {
			_, params, _ := mime.ParseMediaType(c.Header.Get("Content-Type"))
			form, err := multipart.NewReader(strings.NewReader(c.Body), params["boundary"]).ReadForm(1 << 20)
			if err != nil {
				return 400, nil, `{"message":"bad multipart"}`
			}
			sent[form.Value["subject"][0]] = form.Value["v:toolguard_key"][0]
			return 500, nil, `{"message":"internal"}`
		}
		if ignoreFilter {
			return 200, nil, `{"items":[{"event":"accepted","user-variables":{"toolguard_key":"not-ours"}}]}`
		}
		u, _ := url.Parse(c.URL)
		for _, k := range sent {
			if strings.Contains(u.Query().Get("user-variables"), k) {
				return 200, nil, `{"items":[{"event":"accepted","message":{"headers":{"message-id":"20261201.1@mg.example.com"}},"user-variables":{"toolguard_key":"` + k + `"}}]}`
			}
		}
		return 200, nil, `{"items":[]}`
	}}
	p := startPackProxy(t, "mailgun", sim)
	send := func(subject string) (*http.Response, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("from", "billing@mg.example.com")
		w.WriteField("to", "ada@example.com")
		w.WriteField("subject", subject)
		fw, _ := w.CreateFormFile("attachment", "invoice.pdf")
		fw.Write([]byte("%PDF-1.4 invoice"))
		w.Close()
		return p.send(t, http.MethodPost, "http://api.mailgun.net/v3/mg.example.com/messages", w.FormDataContentType(), b.String(), http.Header{"Authorization": {"Basic YXBpOmtleQ=="}})
	}
	first, b := send("Invoice 1")
	wantOutcome(t, "first send", first, b, http.StatusGatewayTimeout, OutcomeBlocked)
	if sent["Invoice 1"] != first.Header.Get(HeaderKey) {
		t.Fatalf("v:toolguard_key sent = %q, want the derived key %s", sent["Invoice 1"], first.Header.Get(HeaderKey))
	}
	p.clock.add(31 * time.Minute)
	held, b := send("Invoice 1")
	if held.StatusCode != http.StatusConflict || !strings.Contains(b, "ambiguous-effect") {
		t.Fatalf("lookup answered by other events: %d %s, want 409 ambiguous-effect", held.StatusCode, b)
	}
	ignoreFilter = false
	second, b := send("Invoice 2")
	wantOutcome(t, "second intent", second, b, http.StatusGatewayTimeout, OutcomeBlocked)
	p.clock.add(31 * time.Minute)
	found, b := send("Invoice 2")
	wantOutcome(t, "retry of the second intent", found, b, http.StatusOK, OutcomeRecovered)
	if st, _ := p.j.Get(second.Header.Get(HeaderKey)); st.OperationID != "20261201.1@mg.example.com" {
		t.Fatalf("operation id %q, want the found message id", st.OperationID)
	}
	if got := len(sim.calls(http.MethodPost)); got != 2 {
		t.Fatalf("messages sent = %d, want 2 (one per intent)", got)
	}
}
