package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Two toolguard processes on one PostgreSQL journal, as two replicas of a
// Deployment behind one queue: whichever replica a retry reaches, an intent
// has exactly one effect.

// replicas starts n toolguard processes sharing one fresh database and one
// secret file.
func replicas(t *testing.T, n int, ruleFiles map[string]string, env ...string) (*setup, []*proc) {
	t.Helper()
	s := newSetup(t, ruleFiles)
	s.useBackend(t, "postgres")
	s.env = append(s.env, env...)
	ps := make([]*proc, n)
	for i := range ps {
		ps[i] = s.start(t)
	}
	return s, ps
}

// Regression: on PostgreSQL two duplicates in one process could both read
// "no step" before either wrote; the second replaced the first's flight,
// found the first's claim not in flight, and held the live call as
// ambiguous (8 of 20 runs failed). A process now never lets two of its
// calls claim one key (flights.reserve).
func TestReplicasConcurrentDuplicates(t *testing.T) {
	up := newUpstream(t, false)
	_, ps := replicas(t, 2, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("none", up.host()))})
	const perReplica = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	bodies := map[string]int{}
	statuses := map[int]int{}
	for _, p := range ps {
		c := p.client(t)
		for range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, b := postUntilSettled(t, c, up.URL+"/v1/invoices", invoiceBody)
				mu.Lock()
				defer mu.Unlock()
				bodies[b]++
				statuses[r.StatusCode]++
			}()
		}
	}
	wg.Wait()
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want exactly 1 across both replicas", got)
	}
	if len(bodies) != 1 || statuses[http.StatusCreated] != 2*perReplica {
		t.Fatalf("answers differ between duplicates: statuses %v, bodies %v", statuses, bodies)
	}
}

func TestReplicaForwardsOtherReplays(t *testing.T) {
	up := newUpstream(t, false)
	_, ps := replicas(t, 2, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("none", up.host()))})
	ra, ba := post(t, ps[0].client(t), up.URL+"/v1/invoices", invoiceBody)
	if ra.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Fatalf("replica A: outcome %q, want forwarded", ra.Header.Get("Toolguard-Outcome"))
	}
	// A retry with a new trace id, as a redelivered message would carry.
	rb, bb := post(t, ps[1].client(t), up.URL+"/v1/invoices", strings.Replace(invoiceBody, `"t1"`, `"t2"`, 1))
	if rb.Header.Get("Toolguard-Outcome") != "replayed" || bb != ba || rb.StatusCode != ra.StatusCode {
		t.Fatalf("replica B: %d %q %s, want A's answer replayed (%d %s)", rb.StatusCode, rb.Header.Get("Toolguard-Outcome"), bb, ra.StatusCode, ba)
	}
	if rb.Header.Get("Toolguard-Key") != ra.Header.Get("Toolguard-Key") {
		t.Fatalf("the replicas derived different keys: %s and %s", ra.Header.Get("Toolguard-Key"), rb.Header.Get("Toolguard-Key"))
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}

// A replica killed while its call is at the provider: another replica takes
// the step over once the lease lapses, and resolves it through the recovery
// table, never by a blind re-send.
func TestReplicaTakesOverAfterKill(t *testing.T) {
	for _, tc := range []struct {
		strategy, stage string
		wantStatus      int
		wantEffects     int64
		wantHold        string
	}{
		{strategy: "lookup", stage: "after", wantStatus: 200, wantEffects: 1},
		{strategy: "native", stage: "after", wantStatus: 201, wantEffects: 1},
		{strategy: "none", stage: "after", wantStatus: 409, wantEffects: 1, wantHold: "needs_review"},
		{strategy: "none", stage: "before", wantStatus: 409, wantEffects: 0, wantHold: "needs_review"},
	} {
		t.Run(tc.strategy+"/kill-"+tc.stage, func(t *testing.T) {
			up := newUpstream(t, false)
			_, ps := replicas(t, 2, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(tc.strategy, up.host()))},
				"TOOLGUARD_UPSTREAM_TIMEOUT=1s")
			killMidCall(t, ps[0], up, tc.stage)
			r, body := postUntilSettled(t, ps[1].client(t), up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("replica B after A died: %d %s, want %d", r.StatusCode, body, tc.wantStatus)
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Fatalf("upstream effects = %d, want %d", got, tc.wantEffects)
			}
			st := waitStep(t, ps[1], r.Header.Get("Toolguard-Key"), func(map[string]any) bool { return true })
			if st["hold"] != tc.wantHold {
				t.Fatalf("hold = %v, want %q", st["hold"], tc.wantHold)
			}
		})
	}
}

// A replica that stalls past its lease (SIGSTOP: no heartbeat, no writes)
// while another takes its step over must not overwrite the newer record
// when it wakes up: its late outcome write is fenced out.
func TestStaleReplicaLateWriteFenced(t *testing.T) {
	up := newUpstream(t, false)
	_, ps := replicas(t, 2, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("lookup", up.host()))},
		"TOOLGUARD_UPSTREAM_TIMEOUT=1s")
	a, b := ps[0], ps[1]
	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "after" {
			once.Do(func() { close(reached) })
			<-release
		}
		return true
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", strings.NewReader(invoiceBody))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := a.client(t).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-reached
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r, body := postUntilSettled(t, b.client(t), up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != 200 || r.Header.Get("Toolguard-Outcome") != "recovered" {
		t.Fatalf("replica B: %d %q %s, want the effect recovered by the lookup", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
	}
	key := r.Header.Get("Toolguard-Key")
	before := waitStep(t, b, key, func(map[string]any) bool { return true })
	close(release)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	<-done
	eventually(t, "the stale replica's fenced write", func() bool {
		return strings.Contains(strings.ToLower(a.logs.String()), "fenc")
	})
	after := waitStep(t, b, key, func(map[string]any) bool { return true })
	if after["status"] != before["status"] || after["operation_id"] != before["operation_id"] {
		t.Fatalf("the stale replica changed the step: before %v, after %v", before, after)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}

// Regression: replicas with different HMAC secrets derive different keys
// for one intent, so duplicates would pass. The second refuses to start.
func TestReplicaWithOtherSecretRefusesToStart(t *testing.T) {
	up := newUpstream(t, false)
	s, _ := replicas(t, 1, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("none", up.host()))})
	other := filepath.Join(s.dir, "other.secret")
	writeSecret(t, other, "ffffffffffffffffffffffffffffffff")
	args := []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--rules", s.rules, "--ca-dir", filepath.Join(s.dir, "ca")}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir}, s.env...), "TOOLGUARD_JOURNAL_SECRET_FILE="+other)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a replica with another secret started:\n%s", out)
	}
	if !strings.Contains(string(out), "secret") {
		t.Fatalf("the refusal does not say why:\n%s", out)
	}
}
