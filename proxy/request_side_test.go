package proxy

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// recordingUpstream is a provider that counts effects per route and keeps
// what each write carried: the charges it made (with their metadata, which
// its search endpoint finds), and the last request's headers and body.
type recordingUpstream struct {
	*httptest.Server
	effects   sync.Map // "METHOD /path" → *atomic.Int64
	mu        sync.Mutex
	lastHdr   http.Header
	lastBody  string
	charges   []url.Values
	dropFirst atomic.Bool // abort the next charge after making it
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	return newRecordingUpstreamTLS(t, false)
}

// newRecordingUpstreamTLS serves over HTTPS when useTLS is set, with
// httptest's certificate, which a TLS harness trusts.
func newRecordingUpstreamTLS(t *testing.T, useTLS bool) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	if useTLS {
		u.StartTLS()
	} else {
		u.Start()
	}
	t.Cleanup(u.Close)
	return u
}

func (u *recordingUpstream) count(route string) int64 {
	c, _ := u.effects.LoadOrStore(route, new(atomic.Int64))
	return c.(*atomic.Int64).Load()
}

func (u *recordingUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodGet && r.URL.Path == "/v1/charges/search" {
		u.search(w, r.URL.Query().Get("key"))
		return
	}
	route := r.Method + " " + r.URL.Path
	c, _ := u.effects.LoadOrStore(route, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	u.mu.Lock()
	u.lastHdr, u.lastBody = r.Header.Clone(), string(body)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/charges":
		form, _ := url.ParseQuery(string(body))
		u.mu.Lock()
		u.charges = append(u.charges, form)
		n := len(u.charges)
		u.mu.Unlock()
		if u.dropFirst.CompareAndSwap(true, false) {
			panic(http.ErrAbortHandler) // the charge is made, the answer lost
		}
		fmt.Fprintf(w, `{"id":"ch_%d"}`, n)
	case "/api/chat.postMessage":
		io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
	case "/graphql":
		io.WriteString(w, `{"data":{}}`)
	default:
		w.Header().Set("ETag", `"etag-1"`)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"obj_1"}`)
	}
}

// search finds charges by their injected metadata key.
func (u *recordingUpstream) search(w http.ResponseWriter, key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var ids []string
	for i, c := range u.charges {
		if key != "" && c.Get("metadata[toolguard_key]") == key {
			ids = append(ids, fmt.Sprintf(`{"id":"ch_%d"}`, i+1))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(ids, ","))
}

func (u *recordingUpstream) last() (http.Header, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastHdr, u.lastBody
}

func requestSideHarness(t *testing.T, up *recordingUpstream, opts Options) *harness {
	host := strings.TrimPrefix(strings.TrimPrefix(up.URL, "http://"), "https://")
	return startHarness(t, harnessConfig{TLS: up.TLS != nil, RuleHost: host, Options: opts, Routes: fmt.Sprintf(`  - name: upload_file
    match: POST /v1/files
    effect: irreversible
    key: {fields: [purpose, file]}
  - name: search
    match: POST /v1/search
    effect: none
    reason: searches only read
  - name: create_issue
    match: POST /graphql
    graphql: {field: issueCreate}
    effect: irreversible
    key: {fields: [variables.input.title]}
  - name: create_charge
    match: POST /v1/charges
    effect: irreversible
    key: {fields: [amount, currency]}
    inject: {form: "metadata[toolguard_key]"}
    lookup:
      request: GET %s/v1/charges/search?key={{key}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
  - name: create_gh_issue
    match: POST /repos/{owner}/{repo}/issues
    effect: irreversible
    key: {fields: [title, body]}
    inject: {append: body, template: "\n<!-- toolguard:{{key}} -->"}
  - name: post_message
    match: POST /api/chat.postMessage
    effect: irreversible
    key: {fields: [channel, text]}
    operation_id: "{{response.channel}}:{{response.ts}}"
  - name: put_object
    match: PUT /{bucket}/{object...}
    effect: reversible
    key: {content: sha256}
    inject: {header: X-Amz-Meta-Toolguard-Key}
    conditional: {header: If-None-Match, value: "*"}
    operation_id: header:ETag
`, up.URL)})
}

// sendTo sends a request with a body and content type to the recording
// upstream through the proxy.
func (h *harness) sendTo(up *recordingUpstream, method, path, contentType string, body []byte) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, up.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer sk_test")
	return h.do(req)
}

func multipartUpload(t *testing.T, purpose, filename, content string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b) // a fresh random boundary each time
	w.WriteField("purpose", purpose)
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
	hdr.Set("Content-Type", "application/pdf")
	pw, err := w.CreatePart(hdr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(pw, content)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestMultipartUploadGuarded(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) { testMultipartUpload(t, useTLS) })
	}
}

func testMultipartUpload(t *testing.T, useTLS bool) {
	up := newRecordingUpstreamTLS(t, useTLS)
	h := requestSideHarness(t, up, Options{})
	body, ct := multipartUpload(t, "dispute_evidence", "a.pdf", "%PDF-1.4 evidence")
	resp, _ := h.sendTo(up, "POST", "/v1/files", ct, body)
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeForwarded {
		t.Fatalf("first upload: outcome %q, want forwarded", got)
	}
	_, sent := up.last()
	if sent != string(body) {
		t.Errorf("the upstream got another body than the agent sent")
	}
	again, ct2 := multipartUpload(t, "dispute_evidence", "a.pdf", "%PDF-1.4 evidence")
	resp, _ = h.sendTo(up, "POST", "/v1/files", ct2, again)
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeReplayed {
		t.Errorf("same file, new boundary: outcome %q, want replayed", got)
	}
	other, ct3 := multipartUpload(t, "dispute_evidence", "a.pdf", "%PDF-1.4 other evidence")
	resp, _ = h.sendTo(up, "POST", "/v1/files", ct3, other)
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeForwarded {
		t.Errorf("other content: outcome %q, want forwarded", got)
	}
	if got := up.count("POST /v1/files"); got != 2 {
		t.Errorf("upstream effects = %d, want 2 (one per file content)", got)
	}
	resp, text := h.sendTo(up, "POST", "/v1/files", ct3, other[:len(other)/2])
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, problem.InvalidBody) {
		t.Errorf("truncated multipart: %d %s, want 400 invalid-body", resp.StatusCode, text)
	}
	if got := up.count("POST /v1/files"); got != 2 {
		t.Errorf("upstream effects after a broken body = %d, want 2", got)
	}
}

func TestEffectNoneExemptsInsideGuard(t *testing.T) {
	up := newRecordingUpstream(t)
	h := requestSideHarness(t, up, Options{Unmatched: policy.UnmatchedGuard})
	for i := 0; i < 2; i++ {
		resp, _ := h.sendTo(up, "POST", "/v1/search", "application/json", []byte(`{"q":"x"}`))
		if got := resp.Header.Get(HeaderOutcome); got != OutcomePassthrough {
			t.Fatalf("search %d: outcome %q, want passthrough", i, got)
		}
	}
	if got := up.count("POST /v1/search"); got != 2 {
		t.Errorf("searches reaching the upstream = %d, want 2", got)
	}
	// The catch-all still guards another POST of the same host.
	for i := 0; i < 2; i++ {
		h.sendTo(up, "POST", "/v1/other", "application/json", []byte(`{"q":"x"}`))
	}
	if got := up.count("POST /v1/other"); got != 1 {
		t.Errorf("unmatched POST effects = %d, want 1 (guarded by unmatched: guard)", got)
	}
	if !strings.Contains(h.logs.String(), `"why":"effect none: searches only read"`) {
		t.Errorf("no debug line with the route's reason in:\n%s", h.logs.String())
	}
}

func TestGraphQLRoutes(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) { testGraphQLRoutes(t, useTLS) })
	}
}

func testGraphQLRoutes(t *testing.T, useTLS bool) {
	up := newRecordingUpstreamTLS(t, useTLS)
	h := requestSideHarness(t, up, Options{})
	mutation := func(op, title string) []byte {
		return []byte(fmt.Sprintf(`{"query":"mutation %s($input: IssueCreateInput!) { issueCreate(input: $input) { success issue { id } } }","variables":{"input":{"title":%q}}}`, op, title))
	}
	tests := []struct {
		name        string
		body        []byte
		wantStatus  int
		wantOutcome string
		wantEffects int64
	}{
		{name: "mutation", body: mutation("A", "Bug"), wantStatus: 200, wantOutcome: OutcomeForwarded, wantEffects: 1},
		{name: "same variables, another operation name", body: mutation("B", "Bug"), wantStatus: 200, wantOutcome: OutcomeReplayed, wantEffects: 1},
		{name: "other variables", body: mutation("A", "Other"), wantStatus: 200, wantOutcome: OutcomeForwarded, wantEffects: 2},
		{name: "a query passes", body: []byte(`{"query":"query { issueCreate: issues { nodes { id } } }"}`), wantStatus: 200, wantOutcome: OutcomePassthrough, wantEffects: 3},
		{name: "the same query passes again", body: []byte(`{"query":"query { issues { nodes { id } } }"}`), wantStatus: 200, wantOutcome: OutcomePassthrough, wantEffects: 4},
		{name: "two operations, no operationName", body: []byte(`{"query":"query A { a } mutation B { issueCreate { id } }"}`), wantStatus: 400, wantOutcome: OutcomeBlocked, wantEffects: 4},
	}
	for _, tc := range tests {
		resp, text := h.sendTo(up, "POST", "/graphql", "application/json", tc.body)
		if resp.StatusCode != tc.wantStatus || resp.Header.Get(HeaderOutcome) != tc.wantOutcome {
			t.Errorf("%s: %d %s (%s), want %d %s", tc.name, resp.StatusCode, resp.Header.Get(HeaderOutcome), text, tc.wantStatus, tc.wantOutcome)
		}
		if got := up.count("POST /graphql"); got != tc.wantEffects {
			t.Errorf("%s: upstream calls = %d, want %d", tc.name, got, tc.wantEffects)
		}
	}
}

func TestInjectedReferenceAndLookup(t *testing.T) {
	up := newRecordingUpstream(t)
	h := requestSideHarness(t, up, Options{})
	up.dropFirst.Store(true)
	resp, _ := h.sendTo(up, "POST", "/v1/charges", "application/x-www-form-urlencoded", []byte("amount=100&currency=eur"))
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("dropped answer: status %d, want 504 outcome-unknown", resp.StatusCode)
	}
	_, sent := up.last()
	key := resp.Header.Get(HeaderKey)
	if want := "metadata%5Btoolguard_key%5D=" + key; key == "" || !strings.Contains(sent, want) {
		t.Fatalf("upstream body %q lacks %q", sent, want)
	}
	// The retry carries the field itself (an SDK that echoes it): same key,
	// found by the exact lookup, not charged again.
	resp, text := h.sendTo(up, "POST", "/v1/charges", "application/x-www-form-urlencoded", []byte("currency=eur&amount=100&metadata%5Btoolguard_key%5D="+key))
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeRecovered || resp.Header.Get(HeaderKey) != key {
		t.Errorf("retry: outcome %q key %s (%s), want recovered with key %s", got, resp.Header.Get(HeaderKey), text, key)
	}
	if got := up.count("POST /v1/charges"); got != 1 {
		t.Errorf("charges = %d, want 1", got)
	}
	if st := h.steps(); len(st) != 1 || st[0].OperationID != "ch_1" {
		t.Errorf("steps = %+v, want one with operation id ch_1", st)
	}
}

func TestInjectedMarkerHeaderAndOperationIDs(t *testing.T) {
	up := newRecordingUpstream(t)
	h := requestSideHarness(t, up, Options{})
	resp, _ := h.sendTo(up, "POST", "/repos/o/r/issues", "application/json", []byte(`{"title":"t","body":"text"}`))
	key := resp.Header.Get(HeaderKey)
	_, sent := up.last()
	if want := `{"title":"t","body":"text\n\u003c!-- toolguard:` + key + ` --\u003e"}`; sent != want && sent != strings.ReplaceAll(strings.ReplaceAll(want, `\u003c`, "<"), `\u003e`, ">") {
		t.Errorf("issue body sent = %s, want the marker appended", sent)
	}
	resp, _ = h.sendTo(up, "POST", "/repos/o/r/issues", "application/json", []byte(sent))
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeReplayed {
		t.Errorf("retry carrying the marker: outcome %q, want replayed", got)
	}
	resp, _ = h.sendTo(up, "PUT", "/bucket/a/b.bin", "application/octet-stream", []byte("\x00\xffraw bytes"))
	hdr, _ := up.last()
	if hdr.Get("X-Amz-Meta-Toolguard-Key") != resp.Header.Get(HeaderKey) || hdr.Get("If-None-Match") != "*" {
		t.Errorf("PUT headers = %v, want the key and If-None-Match: *", hdr)
	}
	resp, _ = h.sendTo(up, "PUT", "/bucket/a/b.bin", "application/octet-stream", []byte("\x00\xffraw bytes"))
	if got := resp.Header.Get(HeaderOutcome); got != OutcomeReplayed {
		t.Errorf("same object, same bytes: outcome %q, want replayed", got)
	}
	if got := up.count("PUT /bucket/a/b.bin"); got != 1 {
		t.Errorf("objects written = %d, want 1", got)
	}
	h.sendTo(up, "POST", "/api/chat.postMessage", "application/json", []byte(`{"channel":"C1","text":"hi"}`))
	ids := map[string]string{}
	for _, st := range h.steps() {
		ids[st.Route] = st.OperationID
	}
	if ids["put_object"] != `"etag-1"` || ids["post_message"] != "C1:1700000000.000100" {
		t.Errorf("operation ids = %v", ids)
	}
	if got := up.count("POST /repos/o/r/issues"); got != 1 {
		t.Errorf("issues created = %d, want 1", got)
	}
}
