package admin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

func TestPickAction(t *testing.T) {
	tests := []struct {
		name    string
		actions []string
		steps   int
		want    string
	}{
		{name: "no steps", want: "start: no step has been sent yet"},
		{name: "all done", steps: 2, want: "continue: every step has a recorded outcome; proceed with the plan"},
		{name: "review first", steps: 3, actions: []string{"retry a: x", "wait: b in flight", "operator review needed: c"}, want: "operator review needed: c"},
		{name: "then waits", steps: 2, actions: []string{"retry a: x", "wait: b in flight"}, want: "wait: b in flight"},
		{name: "then retries", steps: 1, actions: []string{"retry a: x"}, want: "retry a: x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickAction(tc.actions, tc.steps); got != tc.want {
				t.Errorf("pickAction = %q, want %q", got, tc.want)
			}
		})
	}
}

// A checkpoint is a compare-and-swap on the workflow's version; the resume
// packet returns it with the journal's evidence and the proxy's next
// actions, an operator's note left out.
func TestCheckpointAndResume(t *testing.T) {
	j := openJournal(t)
	key := strings.Repeat("e", 64)
	putHeld(t, j, key, "wf", "", journal.HoldNeedsReview)
	p := testProxy{next: map[string]string{key: "retry create_invoice: approved, not sent yet"}}
	srv := httptest.NewServer(New(Options{Journal: j, Proxy: p, Token: "op"}))
	defer srv.Close()
	ifMatch := func(v string) http.Header { return http.Header{"If-Match": {v}} }

	version := func() string {
		w, err := j.GetWorkflow("", "wf")
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Quote(strconv.FormatUint(w.Version, 10))
	}
	tests := []struct {
		name   string
		path   string
		header http.Header
		body   string
		status int
		typ    string
	}{
		{name: "first needs no If-Match", path: "/v1/workflows/wf/checkpoint", body: `{"goal":"bill order 78"}`, status: 200},
		{name: "then it does", path: "/v1/workflows/wf/checkpoint", body: `{"goal":"x"}`, status: 428, typ: ProblemIfMatchRequired},
		{name: "stale version", path: "/v1/workflows/wf/checkpoint", header: ifMatch(`"999"`), body: `{"goal":"x"}`, status: 412, typ: ProblemVersionMismatch},
		{name: "bad If-Match", path: "/v1/workflows/wf/checkpoint", header: ifMatch("yesterday"), body: `{"goal":"x"}`, status: 400, typ: ProblemBadRequest},
		{name: "no goal", path: "/v1/workflows/wf/checkpoint", body: `{"plan":["a"]}`, status: 400, typ: ProblemBadCheckpoint},
		{name: "bad artifact", path: "/v1/workflows/wf/checkpoint", body: `{"goal":"g","artifacts":[{"id":"a","sha256":"x"}]}`, status: 400, typ: ProblemBadCheckpoint},
		{name: "new workflow, partial scope", path: "/v1/workflows/wf2/checkpoint?scope=abc", body: `{"goal":"g"}`, status: 400, typ: ProblemBadRequest},
		{name: "new workflow, no scope", path: "/v1/workflows/wf2/checkpoint?scope=none", body: `{"goal":"g"}`, status: 200},
		{name: "body too large", path: "/v1/workflows/wf3/checkpoint", body: `{"goal":"` + strings.Repeat("g", maxCheckpointBytes) + `"}`, status: 413, typ: ProblemCheckpointTooLarge},
		{name: "text too long", path: "/v1/workflows/wf3/checkpoint", body: `{"goal":"` + strings.Repeat("g", maxCheckpointText+1) + `"}`, status: 413, typ: ProblemBadCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			if code := call(t, srv.URL, "PUT", tc.path, "op", tc.body, tc.header, &got); code != tc.status {
				t.Fatalf("status %d, want %d: %v", code, tc.status, got)
			}
			if tc.typ != "" && got["type"] != tc.typ {
				t.Fatalf("type %v, want %s", got["type"], tc.typ)
			}
		})
	}
	if code := call(t, srv.URL, "PUT", "/v1/workflows/wf/checkpoint", "op", `{"goal":"bill order 78, then mail"}`, ifMatch("W/"+version()), nil); code != 200 {
		t.Fatalf("checkpoint with the current version: %d", code)
	}

	res := `{"outcome":"not_executed","note":"internal: db-7 shows nothing"}`
	if code := call(t, srv.URL, "POST", "/v1/steps/"+key+"/resolve", "op", res, nil, nil); code != 200 {
		t.Fatalf("resolve: %d", code)
	}
	var packet ResumePacket
	if code := call(t, srv.URL, "GET", "/v1/workflows/wf/resume", "op", "", nil, &packet); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	if !strings.Contains(string(packet.Checkpoint), "then mail") || packet.Workflow.Checkpoint != nil {
		t.Errorf("checkpoint %s (and in the workflow %s), want the last one, once", packet.Checkpoint, packet.Workflow.Checkpoint)
	}
	if len(packet.Steps) != 1 || packet.Steps[0].Evidence != "resolved by an operator" || packet.NextSafeAction != p.next[key] {
		t.Errorf("packet %+v, want the step, its resolution without the note, the proxy's next action", packet)
	}

	// Without a proxy there is no recovery table, so no resume packet.
	bare := httptest.NewServer(New(Options{Journal: j, Token: "op"}))
	defer bare.Close()
	if code := call(t, bare.URL, "GET", "/v1/workflows/wf/resume", "op", "", nil, nil); code != http.StatusNotFound {
		t.Errorf("resume without a proxy: %d, want 404", code)
	}
}
