package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signal sends sig to toolguard.
func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// wait waits for toolguard to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("toolguard did not exit")
	}
	return p.cmd.ProcessState.ExitCode()
}

func metricValue(t *testing.T, p *proc, series string) float64 {
	t.Helper()
	resp, err := p.adminGet("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func TestMetricsFollowCalls(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	fwd := `toolguard_requests_total{api="billing",outcome="forwarded",route="create_invoice"}`
	rep := `toolguard_requests_total{api="billing",outcome="replayed",route="create_invoice"}`
	if v := metricValue(t, p, fwd); v != 0 {
		t.Fatalf("%s = %v before any call", fwd, v)
	}
	post(t, c, up.URL+"/v1/invoices", invoiceBody)
	post(t, c, up.URL+"/v1/invoices", invoiceBody)
	post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if got, want := metricValue(t, p, fwd), 1.0; got != want {
		t.Errorf("%s = %v, want %v", fwd, got, want)
	}
	if got, want := metricValue(t, p, rep), 2.0; got != want {
		t.Errorf("%s = %v, want %v", rep, got, want)
	}
	if got := metricValue(t, p, "toolguard_journal_commit_duration_seconds_count"); got < 2 {
		t.Errorf("journal commits observed = %v, want at least 2", got)
	}
	if got := metricValue(t, p, "toolguard_journal_size_bytes"); got <= 0 {
		t.Errorf("journal size = %v", got)
	}
}

// TestGracefulShutdown drains on SIGTERM, and on SIGHUP the same way:
// SIGHUP used to kill serve (exit 129) with calls in flight.
func TestGracefulShutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { gracefulShutdown(t, sig) })
	}
}

func gracefulShutdown(t *testing.T, sig syscall.Signal) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	reached, release := make(chan struct{}), make(chan struct{})
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			close(reached)
			<-release
		}
		return true
	})
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() {
		r, b := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		got <- answer{r.StatusCode, b}
	}()
	<-reached
	p.signal(sig)
	// Readiness turns 503 while the call drains.
	eventually(t, "readyz 503", func() bool {
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Get(p.adminURL + "/readyz")
		if err != nil {
			return true // already gone
		}
		resp.Body.Close()
		return resp.StatusCode == 503
	})
	close(release)
	a := <-got
	if a.status != 201 {
		t.Fatalf("the call in flight got %d %s, want its 201", a.status, a.body)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	out, err := exec.Command(binary, "journal", "ls", "--status", "committed", "--journal", filepath.Join(s.dir, "toolguard.db")).CombinedOutput()
	if err != nil || strings.Count(string(out), "committed") != 1 {
		t.Fatalf("after shutdown: %v\n%s", err, out)
	}
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	reached, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			close(reached)
			<-release
		}
		return true
	})
	go func() {
		req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", strings.NewReader(invoiceBody))
		if resp, err := p.client(t).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-reached
	p.signal(syscall.SIGTERM)
	eventually(t, "draining", func() bool { return strings.Contains(p.logs.String(), "shutting down") })
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code == 0 {
		t.Errorf("second signal: exit code 0, want non-zero (interrupted)")
	}
	out, err := exec.Command(binary, "journal", "check", "--journal", filepath.Join(s.dir, "toolguard.db")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("journal check after the second signal: %v\n%s", err, out)
	}
}

func TestRetentionSweepsFinishedNeverHeld(t *testing.T) {
	up := newUpstream(t, false)
	approval := `  - name: refund
    match: PUT /v1/things/{id}
    effect: irreversible
    approval: required
`
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute+approval)})
	s.env = append(s.env, "TOOLGUARD_JOURNAL_RETENTION=1s")
	p := s.start(t)
	c := p.client(t)
	r, _ := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.Header.Get("Toolguard-Key-Expires") == "" {
		t.Error("no Toolguard-Key-Expires on a stored answer")
	}
	req, _ := http.NewRequest("PUT", up.URL+"/v1/things/7", strings.NewReader(`{"x":1}`))
	held, _ := do(t, c, req)
	finished := r.Header.Get("Toolguard-Key")
	eventually(t, "sweep", func() bool {
		return p.admin(t, "GET", "/v1/steps/"+finished, nil, nil) == 404
	})
	if code := p.admin(t, "GET", "/v1/steps/"+held.Header.Get("Toolguard-Key"), nil, nil); code != 200 {
		t.Fatalf("held step: %d, want it kept", code)
	}
	if got := metricValue(t, p, "toolguard_sweeper_removed_total"); got < 1 {
		t.Errorf("toolguard_sweeper_removed_total = %v", got)
	}
}

func TestBackupUnderLoad(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	c := p.client(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				post(t, c, up.URL+"/v1/invoices", `{"w":`+strconv.Itoa(w)+`,"i":`+strconv.Itoa(i)+`}`)
			}
		}()
	}
	eventually(t, "load", func() bool { return up.effects.Load() >= 50 })
	dst := filepath.Join(t.TempDir(), "backup.db")
	out, err := p.cli("journal", "backup", dst, "--admin", p.adminURL).CombinedOutput()
	close(stop)
	wg.Wait()
	if err != nil || !strings.Contains(string(out), "check ok") || !strings.Contains(string(out), dst+".secret") {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "journal", "ls", "--journal", dst, "--json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"status": "committed"`) {
		t.Fatalf("the backup does not list: %v\n%s", err, out)
	}
}

// Regression: a second serve on a locked journal gave up after 2 s whatever
// journal.open_timeout said (the start-up check opened the file with a fixed
// wait) and told the operator to restore the journal from a backup.
func TestJournalLockedGivesClearError(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	first := s.start(t)
	pid := fmt.Sprintf("pid %d", first.cmd.Process.Pid)
	var exit *exec.ExitError
	for _, tc := range []struct {
		checkOnStart string // auto: the read-only check meets the lock first; never: the writable open
		openTimeout  time.Duration
	}{
		{checkOnStart: "auto", openTimeout: 3 * time.Second},
		{checkOnStart: "never", openTimeout: 1 * time.Second},
	} {
		t.Run("check_on_start="+tc.checkOnStart, func(t *testing.T) {
			start := time.Now()
			cmd := exec.Command(binary, "serve", "--rules", s.rules, "--journal", filepath.Join(s.dir, "toolguard.db"),
				"--ca-dir", filepath.Join(s.dir, "ca"), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
			cmd.Env = []string{"TOOLGUARD_JOURNAL_OPEN_TIMEOUT=" + tc.openTimeout.String(), "TOOLGUARD_JOURNAL_CHECK_ON_START=" + tc.checkOnStart}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			waited := time.Since(start)
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("second serve on a locked journal: %v, want exit code 1\n%s", err, stderr.String())
			}
			if waited < tc.openTimeout || waited > tc.openTimeout+10*time.Second {
				t.Errorf("second serve gave up after %s, want journal.open_timeout (%s)", waited, tc.openTimeout)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "another toolguard holds it ("+pid) ||
				!strings.Contains(msg, "waited "+tc.openTimeout.String()) || strings.Contains(msg, "backup") {
				t.Errorf("stderr is not one line saying that %s holds the journal:\n%s", pid, msg)
			}
			if stdout.Len() > 0 {
				t.Errorf("second serve printed addresses, so it listened:\n%s", stdout.String())
			}
		})
	}

	// A CLI command on the live journal file names the holder the same way.
	out, err := exec.Command(binary, "journal", "ls", "--journal", filepath.Join(s.dir, "toolguard.db")).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "another toolguard holds it ("+pid) ||
		!strings.Contains(string(out), "use the admin API") {
		t.Errorf("journal ls --journal on a live journal: %v\n%s", err, out)
	}
}

// A TOOLGUARD_ variable that names no setting is ignored with a warning
// that names the setting it was probably meant to be.
func TestUnknownEnvironmentVariableWarns(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	s.env = []string{"TOOLGUARD_MAX_BDOY=1MiB"}
	p := s.start(t)
	want := `"level":"WARN","msg":"TOOLGUARD_MAX_BDOY is not a toolguard setting and is ignored (did you mean \"TOOLGUARD_MAX_BODY\"?)"`
	if !strings.Contains(p.logs.String(), want) {
		t.Errorf("the log does not warn about TOOLGUARD_MAX_BDOY; want %s", want)
	}
}

func TestJournalCompact(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	path := filepath.Join(s.dir, "toolguard.db")
	if out, err := exec.Command(binary, "journal", "compact", "--journal", path).CombinedOutput(); err == nil {
		t.Fatalf("compacted the journal of a running proxy:\n%s", out)
	}
	_, b1 := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
	p.kill()
	out, err := exec.Command(binary, "journal", "compact", "--journal", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "check ok") {
		t.Fatalf("journal compact: %v\n%s", err, out)
	}
	p2 := s.start(t)
	r, b2 := post(t, p2.client(t), up.URL+"/v1/invoices", invoiceBody)
	if r.Header.Get("Toolguard-Outcome") != "replayed" || b1 != b2 || up.effects.Load() != 1 {
		t.Fatalf("after compaction: %q %s (effects %d), want the stored answer replayed", r.Header.Get("Toolguard-Outcome"), b2, up.effects.Load())
	}
}
