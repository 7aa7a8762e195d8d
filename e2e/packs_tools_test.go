package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// postmarkSim is a Postmark simulator: POST /email sends a message and
// stores its Metadata; GET /messages/outbound searches by
// metadata_NAME=VALUE, and .../details shows one message. hold, when set,
// is called at "before" (the message is not sent yet) and "after" (sent,
// answer not yet written); before returning false drops the request.
type postmarkSim struct {
	*httptest.Server
	mu      sync.Mutex
	byKey   map[string]string // toolguard_key → MessageID
	effects atomic.Int64
	hold    func(stage string) bool
}

func newPostmarkSim(t *testing.T) *postmarkSim {
	s := &postmarkSim{byKey: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /email", s.send)
	mux.HandleFunc("GET /messages/outbound", s.search)
	mux.HandleFunc("GET /messages/outbound/{id}/details", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, id := range s.byKey {
			if id == r.PathValue("id") {
				fmt.Fprintf(w, `{"MessageID":%q,"Status":"Sent"}`, id)
				return
			}
		}
		http.Error(w, `{"ErrorCode":701,"Message":"not found"}`, http.StatusUnprocessableEntity)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *postmarkSim) getHold() func(string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold
}

func (s *postmarkSim) send(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		Metadata map[string]string
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &msg)
	hold := s.getHold()
	if hold != nil && !hold("before") {
		panic(http.ErrAbortHandler) // the connection drops; nothing was sent
	}
	n := s.effects.Add(1)
	id := fmt.Sprintf("0000-msg-%d", n)
	s.mu.Lock()
	s.byKey[msg.Metadata["toolguard_key"]] = id
	s.mu.Unlock()
	if hold != nil {
		hold("after")
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"To":"ada@example.com","MessageID":%q,"ErrorCode":0,"Message":"OK"}`, id)
}

func (s *postmarkSim) search(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	id, ok := s.byKey[r.URL.Query().Get("metadata_toolguard_key")]
	if !ok {
		io.WriteString(w, `{"TotalCount":0,"Messages":[]}`)
		return
	}
	fmt.Fprintf(w, `{"TotalCount":1,"Messages":[{"MessageID":%q}]}`, id)
}

// postmarkPack is the shipped Postmark pack pointed at the simulator, with
// a search settle window of one second instead of two minutes (the test
// cannot wait two).
func postmarkPack(t *testing.T, host string) string {
	return shippedPack(t, "postmark", "api.postmarkapp.com", host, "1s")
}

// shippedPack is the rule file of rules/packs/NAME pointed at a simulator on
// host over HTTP (instead of apiHost over HTTPS), with its 2m settle window
// shortened to settle.
func shippedPack(t *testing.T, name, apiHost, host, settle string) string {
	t.Helper()
	s := packAt(t, name, "http", map[string]string{apiHost: host})
	if strings.Contains(s, apiHost) || !strings.Contains(s, "settle: 2m") {
		t.Fatalf("the %s pack changed shape; update this test", name)
	}
	return strings.ReplaceAll(s, "settle: 2m", "settle: "+settle)
}

// packHosts matches the hosts list of a rule file, in flow style (group 1)
// or block style (group 2).
var packHosts = regexp.MustCompile(`(?m)^hosts:[ \t]*(?:\[([^\]\n]*)\][ \t]*$|\n((?:[ \t]+-[^\n]*\n)+))`)

// packAt is the rule file of rules/packs/NAME with its hosts pointed at
// simulators: each host the pack names that at maps (an API host, or a
// host pattern such as "*.s3.amazonaws.com") becomes the simulator's
// host:port, reached over scheme; hosts at does not map are dropped. The
// pack's own https://HOST/ URLs (lookups, verifications) follow. Routes,
// keys and policies stay as shipped.
func packAt(t *testing.T, name, scheme string, at map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "rules", "packs", name, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	m := packHosts.FindStringSubmatchIndex(s)
	if m == nil {
		t.Fatalf("the %s pack has no hosts list", name)
	}
	var listed []string
	end := "" // the flow style's match stops before its line's end
	if m[2] >= 0 {
		listed = strings.Split(s[m[2]:m[3]], ",")
	} else {
		end = "\n"
		for _, l := range strings.Split(strings.TrimSpace(s[m[4]:m[5]]), "\n") {
			listed = append(listed, strings.TrimPrefix(strings.TrimSpace(l), "-"))
		}
	}
	var hosts []string
	for _, h := range listed {
		h = strings.Trim(strings.TrimSpace(h), `"'`)
		if to, ok := at[h]; ok && !slices.Contains(hosts, strconv.Quote(to)) {
			hosts = append(hosts, strconv.Quote(to))
		}
	}
	if len(hosts) == 0 {
		t.Fatalf("the %s pack names none of the hosts %v", name, at)
	}
	s = s[:m[0]] + "hosts: [" + strings.Join(hosts, ", ") + "]" + end + s[m[1]:]
	for from, to := range at {
		s = strings.ReplaceAll(s, "https://"+from+"/", scheme+"://"+to+"/")
	}
	return s
}

// The Postmark pack through the crash matrix: toolguard is SIGKILLed while
// Postmark holds the send, before or after the message went out. After a
// restart, retries find an interrupted send by its injected Metadata key
// (no second email), or, when nothing went out, send it once the search's
// settle window has passed.
func TestPackPostmarkKilledMidSend(t *testing.T) {
	const email = `{"From":"billing@example.com","To":"ada@example.com","Subject":"Your invoice","TextBody":"Thanks","Tag":"invoice"}`
	for _, stage := range []string{"before", "after"} {
		t.Run("kill-"+stage, func(t *testing.T) {
			sim := newPostmarkSim(t)
			host := strings.TrimPrefix(sim.URL, "http://")
			s := newSetup(t, map[string]string{"postmark.yaml": postmarkPack(t, host)})
			s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
			p := s.start(t)

			reached, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			sim.mu.Lock()
			sim.hold = func(at string) bool {
				if at != stage {
					return true
				}
				once.Do(func() { close(reached) })
				<-release
				return at == "after"
			}
			sim.mu.Unlock()
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequest(http.MethodPost, sim.URL+"/email", strings.NewReader(email))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Postmark-Server-Token", "pm-1")
				if resp, err := p.client(t).Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			<-reached
			p.kill()
			close(release)
			<-done
			sim.mu.Lock()
			sim.hold = nil
			sim.mu.Unlock()
			if want := map[string]int64{"before": 0, "after": 1}[stage]; sim.effects.Load() != want {
				t.Fatalf("emails sent before the restart = %d, want %d", sim.effects.Load(), want)
			}

			p = s.start(t)
			c := p.client(t)
			var wg sync.WaitGroup
			resps, bodies := make([]*http.Response, 4), make([]string, 4)
			for i := range resps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resps[i], bodies[i] = postTokenUntilSettled(t, c, sim.URL+"/email", email)
				}()
			}
			wg.Wait()
			if got := sim.effects.Load(); got != 1 {
				t.Fatalf("emails sent = %d, want 1", got)
			}
			for i, r := range resps {
				if r.StatusCode != http.StatusOK || !strings.Contains(bodies[i], "0000-msg-1") {
					t.Errorf("retry %d: %d %s, want 200 with the message", i, r.StatusCode, bodies[i])
				}
			}
			st := waitStep(t, p, resps[0].Header.Get("Toolguard-Key"), func(map[string]any) bool { return true })
			if st["operation_id"] != "0000-msg-1" || st["hold"] != nil && st["hold"] != "" {
				t.Errorf("step: operation_id %v hold %v, want 0000-msg-1 and no hold", st["operation_id"], st["hold"])
			}
		})
	}
}

// postTokenUntilSettled posts a Postmark call until it is answered with
// something other than in-progress (whose Retry-After the settle window
// sets).
func postTokenUntilSettled(t *testing.T, c *http.Client, u, body string) (*http.Response, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, b := post(t, c, u, body, "X-Postmark-Server-Token", "pm-1")
		if r.StatusCode != http.StatusConflict || !strings.Contains(b, "urn:toolguard:in-progress") || time.Now().After(deadline) {
			return r, b
		}
		// The agent's backoff: what Retry-After says, within bounds.
		wait := 50 * time.Millisecond
		if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && n > 0 {
			wait = min(time.Duration(n)*time.Second, 2*time.Second)
		}
		time.Sleep(wait)
	}
}

// packGitHubSim is a GitHub simulator for issue creation whose search index
// lags: an issue is found by the search API only lag after it was created.
type packGitHubSim struct {
	*httptest.Server
	mu      sync.Mutex
	issues  []ghIssue
	effects atomic.Int64
	hold    func(stage string) bool
	lag     time.Duration
}

type ghIssue struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	created time.Time
}

func newPackGitHubSim(t *testing.T, lag time.Duration) *packGitHubSim {
	s := &packGitHubSim{lag: lag}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues", s.create)
	mux.HandleFunc("GET /search/issues", s.search)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *packGitHubSim) create(w http.ResponseWriter, r *http.Request) {
	var in ghIssue
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &in)
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil && !hold("before") {
		panic(http.ErrAbortHandler)
	}
	s.mu.Lock()
	in.Number = int(s.effects.Add(1))
	in.created = time.Now()
	s.issues = append(s.issues, in)
	s.mu.Unlock()
	if hold != nil {
		hold("after")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(in)
}

// search finds issues whose body holds the quoted phrase of q.
func (s *packGitHubSim) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	phrase := ""
	if i := strings.Index(q, `"`); i >= 0 {
		if j := strings.Index(q[i+1:], `"`); j >= 0 {
			phrase = q[i+1 : i+1+j]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []ghIssue{}
	for _, is := range s.issues {
		if phrase != "" && strings.Contains(is.Body, phrase) && time.Since(is.created) >= s.lag {
			items = append(items, is)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"total_count": len(items), "incomplete_results": false, "items": items})
}

// githubPack is the shipped GitHub pack pointed at the simulator, with a
// settle window of two seconds instead of two minutes.
func githubPack(t *testing.T, host string) string {
	return shippedPack(t, "github", "api.github.com", host, "2s")
}

// The GitHub pack through the crash matrix, with a search index that lags
// one second behind: after a SIGKILL the retries are told to wait while
// the search cannot see the issue yet (the settle window), then find it by
// its hidden marker; an issue that was never created is created once.
func TestPackGitHubIssueKilledMidCreate(t *testing.T) {
	const issue = `{"title":"Checkout fails for EUR","body":"Steps: pay in EUR.","labels":["bug"]}`
	for _, stage := range []string{"before", "after"} {
		t.Run("kill-"+stage, func(t *testing.T) {
			sim := newPackGitHubSim(t, time.Second)
			host := strings.TrimPrefix(sim.URL, "http://")
			s := newSetup(t, map[string]string{"github.yaml": githubPack(t, host)})
			s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
			p := s.start(t)
			reached, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			sim.mu.Lock()
			sim.hold = func(at string) bool {
				if at != stage {
					return true
				}
				once.Do(func() { close(reached) })
				<-release
				return at == "after"
			}
			sim.mu.Unlock()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if r, err := p.client(t).Do(ghRequest(sim.URL, issue)); err == nil {
					r.Body.Close()
				}
			}()
			<-reached
			p.kill()
			close(release)
			<-done
			sim.mu.Lock()
			sim.hold = nil
			sim.mu.Unlock()

			p = s.start(t)
			c := p.client(t)
			first, body := do(t, c, ghRequest(sim.URL, issue))
			if stage == "after" && (first.StatusCode != http.StatusConflict || !strings.Contains(body, "urn:toolguard:in-progress")) {
				t.Fatalf("retry while the index lags: %d %s, want 409 in-progress", first.StatusCode, body)
			}
			deadline := time.Now().Add(30 * time.Second)
			r, b := first, body
			for r.StatusCode == http.StatusConflict && strings.Contains(b, "urn:toolguard:in-progress") && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // the agent's backoff
				r, b = do(t, c, ghRequest(sim.URL, issue))
			}
			if r.StatusCode != http.StatusCreated || !strings.Contains(b, `"number":1`) {
				t.Fatalf("settled retry: %d %s, want 201 with issue 1", r.StatusCode, b)
			}
			if got := sim.effects.Load(); got != 1 {
				t.Fatalf("issues created = %d, want 1", got)
			}
		})
	}
}

func ghRequest(base, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/repos/acme/api/issues", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer ghp_1")
	return req
}
