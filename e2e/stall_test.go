package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stalled owner never sends after its lease. Replica A's claim reaches
// PostgreSQL and commits, but its acknowledgement is held back (a slow
// network; with SIGSTOP, a process stopped meanwhile) for longer than the
// lease. Replica B takes the step over once the lease lapsed and resolves
// it through the recovery table. When A finally learns that its claim was
// written, its lease has ended: it must not send. Before the fix A sent the
// call it had claimed, a second effect the journal never showed.
func TestStalledOwnerNeverSendsAfterItsLease(t *testing.T) {
	for _, tc := range []struct {
		name, strategy string
		stop           bool // SIGSTOP A while its acknowledgement is held
		wantStatus     int  // B's answer
		wantEffects    int64
		wantHold       string
	}{
		{name: "lookup/sigstop", strategy: "lookup", stop: true, wantStatus: 201, wantEffects: 1},
		{name: "lookup/late-ack", strategy: "lookup", wantStatus: 201, wantEffects: 1},
		{name: "native/late-ack", strategy: "native", wantStatus: 201, wantEffects: 1},
		{name: "irreversible/late-ack", strategy: "none", wantStatus: 409, wantEffects: 0, wantHold: "needs_review"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, false)
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(tc.strategy, up.host()))})
			s.useBackend(t, "postgres")
			s.env = append(s.env, "TOOLGUARD_RECOVERY_LEASE=2s", "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
			b := s.start(t)
			relay := newAckHolder(t, "127.0.0.1:5432", `/v1/invoices`)
			s.env = throughRelay(t, s.env, relay.addr())
			a := s.start(t)

			relay.arm()
			aDone := make(chan string, 1)
			go func() {
				req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", strings.NewReader(invoiceBody))
				req.Header.Set("Content-Type", "application/json")
				resp, err := a.client(t).Do(req)
				if err != nil {
					aDone <- err.Error()
					return
				}
				resp.Body.Close()
				aDone <- resp.Status + " " + resp.Header.Get("Toolguard-Outcome")
			}()
			select {
			case <-relay.held:
			case <-time.After(20 * time.Second):
				t.Fatal("A's claim never reached the database")
			}
			key := startedStep(t, b)
			if tc.stop {
				if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}

			r, body := postUntilSettled(t, b.client(t), up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("replica B: %d %s, want %d", r.StatusCode, body, tc.wantStatus)
			}
			if tc.wantHold != "" {
				// Inside the window in which A's attempt could still land, an
				// operator may not resolve it as not executed without force.
				var problem map[string]any
				code := b.adminRaw(t, "POST", "/v1/steps/"+key+"/resolve", map[string]any{"outcome": "not_executed"}, &problem)
				if code != http.StatusConflict || problem["type"] != "urn:toolguard:admin:attempt-may-still-land" {
					t.Fatalf("resolve not_executed inside the landing window: %d %v, want 409 attempt-may-still-land", code, problem)
				}
			}

			relay.deliver()
			if tc.stop {
				if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case got := <-aDone:
				t.Logf("replica A answered its caller: %s", got)
			case <-time.After(30 * time.Second):
				t.Fatal("replica A never answered its caller")
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Fatalf("upstream effects = %d, want %d (a late send by the stalled owner)", got, tc.wantEffects)
			}
			st := waitStep(t, b, key, func(map[string]any) bool { return true })
			if st["hold"] != tc.wantHold {
				t.Fatalf("hold = %v, want %q", st["hold"], tc.wantHold)
			}
			if !strings.Contains(a.logs.String(), "not sent: the claim's lease ended before the call was sent") {
				t.Fatalf("replica A's log does not say it refused to send after its lease")
			}
		})
	}
}

// startedStep waits until p's journal shows one started step, and returns
// its key.
func startedStep(t *testing.T, p *proc) string {
	t.Helper()
	var key string
	eventually(t, "the claimed step", func() bool {
		var out struct {
			Steps []map[string]any `json:"steps"`
		}
		p.admin(t, "GET", "/v1/steps?status=started", nil, &out)
		if len(out.Steps) == 1 {
			key, _ = out.Steps[0]["key"].(string)
		}
		return key != ""
	})
	return key
}

// throughRelay returns env with the journal's DSN pointed at addr.
func throughRelay(t *testing.T, env []string, addr string) []string {
	t.Helper()
	out := append([]string(nil), env...)
	for i, kv := range out {
		dsn, ok := strings.CutPrefix(kv, "TOOLGUARD_JOURNAL_DSN=")
		if !ok {
			continue
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = addr
		out[i] = "TOOLGUARD_JOURNAL_DSN=" + u.String()
		return out
	}
	t.Fatal("no TOOLGUARD_JOURNAL_DSN in the setup")
	return nil
}

// adminRaw is admin that decodes the answer whatever its status (a
// problem too).
func (p *proc) adminRaw(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, p.adminURL+path, bytes.NewReader(b))
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		_ = json.Unmarshal(data, out)
	}
	return resp.StatusCode
}
