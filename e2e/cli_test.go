package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cliResult is what one run of the toolguard binary did.
type cliResult struct {
	code           int
	stdout, stderr string
}

// tg runs the toolguard binary with only PATH, HOME and env in its
// environment, so the developer's TOOLGUARD_* variables cannot leak in.
func tg(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	return tgIn(t, "", env, args...)
}

// tgIn is tg in the working directory dir ("" for the test's).
func tgIn(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("toolguard %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// tgOK runs the binary and fails the test unless it exits 0.
func tgOK(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := tg(t, env, args...)
	if r.code != 0 {
		t.Fatalf("toolguard %s: exit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// cliSteps decodes journal ls --json: exactly {"steps": [...]}.
func cliSteps(t *testing.T, out string) []map[string]any {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("journal ls --json: %v\n%s", err, out)
	}
	if len(doc) != 1 || doc["steps"] == nil {
		t.Fatalf("journal ls --json: want an object with only \"steps\", got:\n%s", out)
	}
	var steps []map[string]any
	if err := json.Unmarshal(doc["steps"], &steps); err != nil {
		t.Fatalf("journal ls --json: steps: %v\n%s", err, out)
	}
	return steps
}

var hexKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// journalCalls makes the journal the CLI tests read: two committed steps,
// one of them in a workflow, and a replay. It returns the two keys, the
// second being the workflow's.
func journalCalls(t *testing.T, p *proc, up *upstream) (plain, inWorkflow string) {
	t.Helper()
	c := p.client(t)
	r1, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":100}`, "Authorization", "Bearer k1")
	r2, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c2","amount":200}`, "Authorization", "Bearer k1", "Toolguard-Workflow", "wf-1")
	r3, _ := post(t, c, up.URL+"/v1/invoices", `{"amount":100,"customer":"c1","trace_id":"retry"}`, "Authorization", "Bearer k1")
	if got := up.effects.Load(); got != 2 {
		t.Fatalf("upstream effects = %d, want 2", got)
	}
	if r3.Header.Get("Toolguard-Outcome") != "replayed" {
		t.Fatalf("third call: outcome %q, want replayed", r3.Header.Get("Toolguard-Outcome"))
	}
	plain, inWorkflow = r1.Header.Get("Toolguard-Key"), r2.Header.Get("Toolguard-Key")
	if !hexKey.MatchString(plain) || !hexKey.MatchString(inWorkflow) {
		t.Fatalf("keys %q, %q: want 64 hex digits", plain, inWorkflow)
	}
	return plain, inWorkflow
}

// inspection is what the read-only commands print from one source.
type inspection struct {
	ls, lsJSON, show, showJSON, tail, tailJSON string
}

// inspect runs every read-only journal command against src (--admin URL or
// --journal FILE) and checks what they print.
func inspect(t *testing.T, env []string, src []string, plain, inWorkflow string) inspection {
	t.Helper()
	run := func(args ...string) string { t.Helper(); return tgOK(t, env, append(args, src...)...) }
	var in inspection

	// journal ls: a table with full keys.
	in.ls = run("journal", "ls")
	lines := strings.Split(strings.TrimRight(in.ls, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KEY ") || !strings.Contains(lines[0], "STATUS") {
		t.Fatalf("journal ls: want a header and two rows:\n%s", in.ls)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	for _, key := range []string{plain, inWorkflow} {
		f, found := rows[key]
		if !found {
			t.Fatalf("journal ls: no row starts with the full key %s:\n%s", key, in.ls)
		}
		if f[1] != "committed" || !strings.Contains(strings.Join(f, " "), "create_invoice") {
			t.Errorf("journal ls: row %q, want committed create_invoice", strings.Join(f, " "))
		}
	}
	if f := rows[inWorkflow]; !strings.Contains(strings.Join(f, " "), " wf-1 ") {
		t.Errorf("journal ls: the workflow step's row %q does not name wf-1", strings.Join(f, " "))
	}

	// journal ls --json: {"steps":[...]} with the contract's fields.
	in.lsJSON = run("journal", "ls", "--json")
	steps := cliSteps(t, in.lsJSON)
	if len(steps) != 2 {
		t.Fatalf("journal ls --json: %d steps, want 2:\n%s", len(steps), in.lsJSON)
	}
	byKey := map[string]map[string]any{}
	for _, st := range steps {
		for _, field := range []string{"key", "status", "hold", "route", "workflow", "attempt", "operation_id"} {
			if _, has := st[field]; !has {
				t.Errorf("journal ls --json: step %v has no %q", st["key"], field)
			}
		}
		k, _ := st["key"].(string)
		byKey[k] = st
	}
	for key, want := range map[string]map[string]any{
		plain:      {"status": "committed", "hold": "", "route": "create_invoice", "workflow": "", "attempt": 1.0, "operation_id": "inv_1"},
		inWorkflow: {"status": "committed", "hold": "", "route": "create_invoice", "workflow": "wf-1", "attempt": 1.0, "operation_id": "inv_2"},
	} {
		st := byKey[key]
		if st == nil {
			t.Fatalf("journal ls --json: no step %s:\n%s", key, in.lsJSON)
		}
		for field, v := range want {
			if st[field] != v {
				t.Errorf("journal ls --json: step %s: %s = %#v, want %#v", key[:12], field, st[field], v)
			}
		}
	}

	// Filters.
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "status committed", args: []string{"--status", "committed"}, want: []string{plain, inWorkflow}},
		{name: "status failed", args: []string{"--status", "failed"}},
		{name: "workflow", args: []string{"--workflow", "wf-1"}, want: []string{inWorkflow}},
		{name: "held", args: []string{"--hold", "needs_review"}},
	} {
		got := cliSteps(t, run(append([]string{"journal", "ls", "--json"}, tc.args...)...))
		var keys []string
		for _, st := range got {
			keys = append(keys, st["key"].(string))
		}
		if !slices.Equal(slices.Sorted(slices.Values(keys)), slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("journal ls %s: keys %v, want %v", tc.name, keys, tc.want)
		}
	}

	// journal show KEY: one step, as fields and as JSON.
	in.show = run("journal", "show", inWorkflow)
	for _, want := range []string{`(?m)^key:\s+` + inWorkflow + `$`, `(?m)^status:\s+committed$`, `(?m)^workflow:\s+wf-1$`,
		`(?m)^operation_id:\s+inv_2$`, `(?m)^route:\s+create_invoice$`, `(?m)^response:\s+201, `} {
		if !regexp.MustCompile(want).MatchString(in.show) {
			t.Errorf("journal show: no line matches %s:\n%s", want, in.show)
		}
	}
	in.showJSON = run("journal", "show", inWorkflow, "--json")
	var one map[string]any
	if err := json.Unmarshal([]byte(in.showJSON), &one); err != nil {
		t.Fatalf("journal show --json: %v\n%s", err, in.showJSON)
	}
	if one["key"] != inWorkflow || one["status"] != "committed" || one["operation_id"] != "inv_2" {
		t.Errorf("journal show --json: %v", one)
	}
	if r := tg(t, env, append([]string{"journal", "show", strings.Repeat("0", 64)}, src...)...); r.code != 1 || r.stderr == "" {
		t.Errorf("journal show of an unknown key: exit code %d, want 1 with a message; stderr:\n%s", r.code, r.stderr)
	}

	// journal tail: events with strictly increasing seq, each step's among them.
	in.tail = run("journal", "tail")
	var last uint64
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(in.tail))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			t.Fatalf("journal tail: short line %q", sc.Text())
		}
		seq, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || seq <= last {
			t.Fatalf("journal tail: line %q: seq %q after %d, want a strictly increasing number", sc.Text(), f[0], last)
		}
		last = seq
		seen[f[2]] = true
	}
	if !seen[plain] || !seen[inWorkflow] {
		t.Errorf("journal tail: events do not name both steps' full keys:\n%s", in.tail)
	}
	in.tailJSON = run("journal", "tail", "--json")
	var lastJSON uint64
	n := 0
	for l := range strings.SplitSeq(strings.TrimRight(in.tailJSON, "\n"), "\n") {
		var ev struct {
			Seq  uint64 `json:"seq"`
			Time string `json:"time"`
			Key  string `json:"key"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq <= lastJSON || ev.Time == "" || ev.Key == "" || ev.Type == "" {
			t.Fatalf("journal tail --json: line %q (%v): want seq > %d, time, key and type", l, err, lastJSON)
		}
		lastJSON = ev.Seq
		n++
	}
	if lastJSON != last || n != strings.Count(in.tail, "\n") {
		t.Errorf("journal tail --json: %d events up to seq %d; the table had %d up to %d", n, lastJSON, strings.Count(in.tail, "\n"), last)
	}
	if out := run("journal", "tail", "--after", strconv.FormatUint(last, 10)); out != "" {
		t.Errorf("journal tail --after %d: want nothing, got:\n%s", last, out)
	}
	return in
}

// TestCLIJournal reads one journal through the admin API of the running
// proxy, then, after the proxy was killed, from its file: both print the
// same.
func TestCLIJournal(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	plain, inWorkflow := journalCalls(t, p, up)

	live := inspect(t, p.cliEnv(), []string{"--admin", p.adminURL}, plain, inWorkflow)
	if got := tgOK(t, append(p.cliEnv(), "TOOLGUARD_ADMIN_URL="+p.adminURL), "journal", "ls", "--json"); got != live.lsJSON {
		t.Errorf("journal ls with TOOLGUARD_ADMIN_URL differs from --admin:\n%s\n%s", got, live.lsJSON)
	}
	dbPath := filepath.Join(s.dir, "toolguard.db")
	r := tg(t, nil, "journal", "ls", "--journal", dbPath) // waits for the lock (2s), then explains
	if r.code != 1 || !strings.Contains(r.stderr, "another toolguard holds it") {
		t.Errorf("journal ls --journal while the proxy runs: exit code %d, want 1 naming the cause; stderr:\n%s", r.code, r.stderr)
	}

	p.kill()
	before, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	offline := inspect(t, nil, []string{"--journal", dbPath}, plain, inWorkflow)
	if after, _ := os.ReadFile(dbPath); !bytes.Equal(before, after) {
		t.Error("reading the journal with --journal changed the file")
	}
	for _, c := range []struct{ name, live, offline string }{
		{"journal ls", live.ls, offline.ls},
		{"journal ls --json", live.lsJSON, offline.lsJSON},
		{"journal show", live.show, offline.show},
		{"journal show --json", live.showJSON, offline.showJSON},
		{"journal tail", live.tail, offline.tail},
		{"journal tail --json", live.tailJSON, offline.tailJSON},
	} {
		if c.live != c.offline {
			t.Errorf("%s: the admin API and the journal file print different things:\n--- admin:\n%s--- file:\n%s", c.name, c.live, c.offline)
		}
	}
	if r := tg(t, nil, "journal", "ls", "--admin", p.adminURL); r.code != 1 || !strings.Contains(r.stderr, "--journal") {
		t.Errorf("journal ls against a stopped proxy: exit code %d, want 1 suggesting --journal; stderr:\n%s", r.code, r.stderr)
	}
}

func TestCLIAdminToken(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=operator-secret", "TOOLGUARD_ADMIN_AGENT_TOKEN=agent-secret")
	p := s.start(t)
	r1, _ := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1"}`)
	key := r1.Header.Get("Toolguard-Key")

	tests := []struct {
		name       string
		env        []string
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring
	}{
		{name: "ls without token", args: []string{"journal", "ls"}, wantCode: 1, wantStderr: "401 Unauthorized: a valid bearer token is required"},
		{name: "show without token", args: []string{"journal", "show", key}, wantCode: 1, wantStderr: "401 Unauthorized"},
		{name: "tail without token", args: []string{"journal", "tail"}, wantCode: 1, wantStderr: "401 Unauthorized"},
		{name: "review ls without token", args: []string{"review", "ls"}, wantCode: 1, wantStderr: "401 Unauthorized"},
		{name: "wrong token", env: []string{"TOOLGUARD_ADMIN_TOKEN=guess"}, args: []string{"journal", "ls"}, wantCode: 1, wantStderr: "401 Unauthorized"},
		{name: "ls with token", env: []string{"TOOLGUARD_ADMIN_TOKEN=operator-secret"}, args: []string{"journal", "ls"}, wantStdout: key},
		{name: "show with token", env: []string{"TOOLGUARD_ADMIN_TOKEN=operator-secret"}, args: []string{"journal", "show", key}, wantStdout: "committed"},
		{name: "tail with token", env: []string{"TOOLGUARD_ADMIN_TOKEN=operator-secret"}, args: []string{"journal", "tail"}, wantStdout: key},
		// The agent token reads only the scope its caller presents, which
		// the CLI does not: it sees none of the tenant's steps.
		{name: "agent token reads no tenant's steps", env: []string{"TOOLGUARD_ADMIN_TOKEN=agent-secret"}, args: []string{"journal", "ls", "--json"}, wantStdout: `"steps": []`},
		{name: "agent token may not resolve", env: []string{"TOOLGUARD_ADMIN_TOKEN=agent-secret"}, args: []string{"review", "resolve", key, "--outcome", "committed"},
			wantCode: 1, wantStderr: "403 Forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tg(t, tc.env, append(tc.args, "--admin", p.adminURL)...)
			if r.code != tc.wantCode || !strings.Contains(r.stdout, tc.wantStdout) || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("exit code %d, want %d; stdout (want %q):\n%s\nstderr (want %q):\n%s", r.code, tc.wantCode, tc.wantStdout, r.stdout, tc.wantStderr, r.stderr)
			}
			if tc.wantCode != 0 && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("want a one-line error, got:\n%s", r.stderr)
			}
		})
	}
	if got := up.effects.Load(); got != 1 {
		t.Errorf("upstream effects = %d, want 1", got)
	}
}

// TestCLITailFollow follows the event log while calls are made: every
// event is printed once, in order, and an interrupt ends it cleanly.
func TestCLITailFollow(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	post(t, c, up.URL+"/v1/invoices", `{"customer":"c1"}`)

	cmd := exec.Command(binary, "journal", "tail", "-f", "--admin", p.adminURL)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, p.cliEnv()...)
	var errb syncBuffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// lastSeq is the newest event's seq, from a one-shot journal tail.
	lastSeq := func() uint64 {
		t.Helper()
		out := strings.TrimRight(tgOK(t, p.cliEnv(), "journal", "tail", "--admin", p.adminURL), "\n")
		f := strings.Fields(out[strings.LastIndex(out, "\n")+1:])
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			t.Fatalf("journal tail: last line %q", f)
		}
		return n
	}
	var last uint64
	// upTo reads the follower's lines up to event seq; the deadline only
	// bounds a failing test.
	upTo := func(seq uint64) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for last < seq {
			select {
			case l, open := <-lines:
				if !open {
					t.Fatalf("journal tail -f ended before event %d; stderr:\n%s", seq, errb.String())
				}
				n, err := strconv.ParseUint(strings.Fields(l)[0], 10, 64)
				if err != nil || n <= last {
					t.Fatalf("journal tail -f: line %q after seq %d: want each event once, in order", l, last)
				}
				last = n
			case <-deadline:
				t.Fatalf("journal tail -f: no event %d within 30s (last %d)", seq, last)
			}
		}
	}
	upTo(lastSeq())
	r2, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c2"}`) // its events are durable before its answer
	want := lastSeq()
	upTo(want)
	if last != want {
		t.Errorf("journal tail -f: last event %d, want %d", last, want)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for open := true; open; {
		var l string
		select {
		case l, open = <-lines:
			if open {
				t.Errorf("journal tail -f printed %q after the last event", l)
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("journal tail -f did not stop within 30s of an interrupt")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("journal tail -f after an interrupt: %v, want exit code 0; stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(tgOK(t, p.cliEnv(), "journal", "tail", "--admin", p.adminURL, "--after", strconv.FormatUint(want-1, 10)), r2.Header.Get("Toolguard-Key")) {
		t.Errorf("the last event is not the second call's")
	}
}
