package e2e

import (
	"bufio"
	"github.com/toolguard/toolguard/internal/skipped"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// uploadRoutes guards a file upload keyed on its purpose and file, and
// exempts a search sent by POST.
const uploadRoutes = `  - name: upload_file
    match: POST /v1/files
    effect: irreversible
    key: {fields: [purpose, file]}
  - name: search_files
    match: POST /v1/files/search
    effect: none
    reason: searching files only reads
`

// curlForm posts a multipart form with curl -F (curl's own encoding and
// boundary) through the proxy.
func curlForm(t *testing.T, env []string, url string, fields ...string) answer {
	t.Helper()
	args := []string{"-sS", "-i", "--max-time", "30", "-H", "Authorization: Bearer k1"}
	for _, f := range fields {
		args = append(args, "-F", f)
	}
	cmd := exec.Command("curl", append(args, url)...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl -F %s: %v\n%s", url, err, stderrOf(err))
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
	if err != nil {
		t.Fatalf("curl %s: read its answer: %v\n%s", url, err, out)
	}
	return answerOf(resp)
}

// TestCurlMultipartUpload: file uploads from curl -F through the real
// binary are guarded by their content: the same file again is answered
// from the journal, another file is sent; a search route with effect none
// passes every call through, though unmatched calls are guarded.
func TestCurlMultipartUpload(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		skipped.Skip(t, "curl", "curl is not installed")
	}
	var uploads, searches atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/files", func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := r.FormFile("file"); err != nil {
			http.Error(w, "no file: "+err.Error(), http.StatusBadRequest)
			return
		}
		n := uploads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"file_`+strconv.FormatInt(n, 10)+`"}`)
	})
	mux.HandleFunc("POST /v1/files/search", func(w http.ResponseWriter, r *http.Request) {
		searches.Add(1)
		io.WriteString(w, `{"data":[]}`)
	})
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	s := newSetup(t, map[string]string{"files.yaml": ruleFile(strings.TrimPrefix(up.URL, "http://"), uploadRoutes)})
	s.env = append(s.env, "TOOLGUARD_UNMATCHED=guard")
	p := s.start(t)
	env := clientEnv(t, "http_proxy="+p.proxyURL.String())
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	evidence := write("evidence.pdf", "%PDF-1.4 evidence")
	if err := os.Mkdir(filepath.Join(dir, "copy"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyOf := write("copy/evidence.pdf", "%PDF-1.4 evidence") // same name and content, another path
	other := write("other.pdf", "%PDF-1.4 other")

	first := curlForm(t, env, up.URL+"/v1/files", "purpose=dispute_evidence", "file=@"+evidence+";type=application/pdf")
	again := curlForm(t, env, up.URL+"/v1/files", "file=@"+copyOf+";type=application/pdf", "purpose=dispute_evidence")
	third := curlForm(t, env, up.URL+"/v1/files", "purpose=dispute_evidence", "file=@"+other+";type=application/pdf;filename=evidence.pdf")
	if first.outcome != "forwarded" || again.outcome != "replayed" || third.outcome != "forwarded" {
		t.Errorf("outcomes = %s, %s, %s; want forwarded, replayed, forwarded", first.outcome, again.outcome, third.outcome)
	}
	if again.body != first.body {
		t.Errorf("replayed body %q, want the first answer %q", again.body, first.body)
	}
	if got := uploads.Load(); got != 2 {
		t.Errorf("uploads at the provider = %d, want 2", got)
	}
	for i := 0; i < 2; i++ {
		if a := curlPost(t, env, up.URL+"/v1/files/search", `{"query":"x"}`); a.outcome != "passthrough" {
			t.Errorf("search %d: outcome %q, want passthrough", i, a.outcome)
		}
	}
	if got := searches.Load(); got != 2 {
		t.Errorf("searches at the provider = %d, want 2", got)
	}
}
