package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// verifyRoute creates invoices and verifies them by reading them back.
func verifyRoute(host, within string) string {
	return fmt.Sprintf(`  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
    verify:
      request: GET http://%s/v1/invoices/{{operation_id}}
      expect: {status: 200, body: {status: open}}
      within: %s
`, host, within)
}

// probes counts the verification probes p's log records for key.
func probes(p *proc, key string) int {
	n := 0
	for _, line := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"verification probe"`) && strings.Contains(line, key) {
			n++
		}
	}
	return n
}

// A pending verification on a shared journal is probed by one replica: a
// replica started while another verifies leaves it alone, and after the
// verifier is SIGKILLed another replica takes it over once its lease
// lapses and finishes it (verified). The verification lease is the
// upstream timeout here (2s; it is the call lease cut to the upstream
// timeout), so each replica looks for lapsed verifications every ~0.7s.
func TestReplicasVerifyPendingOnce(t *testing.T) {
	up := newUpstream(t, false)
	up.hide.Store(true)
	// The replica that takes over has no caller's credential to lend.
	s, ps := replicas(t, 2, map[string]string{"billing.yaml": sharedRuleFile(up.host(), verifyRoute(up.host(), "60s"))},
		"TOOLGUARD_UPSTREAM_TIMEOUT=2s", "TOOLGUARD_VERIFY_MAX_INTERVAL=100ms")
	a := ps[0]
	r, body := post(t, a.client(t), up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, body)
	}
	key := r.Header.Get("Toolguard-Key")
	eventually(t, "the committing replica probes", func() bool { return probes(a, key) > 0 })

	c := s.start(t) // a third replica resumes pending verifications at start-up
	others := []*proc{ps[1], c}
	// Watch the verifier probe on for 4s, two verification leases: every
	// other replica's pickup pass (each third of a lease) has seen the
	// pending verification several times by then.
	since, before := time.Now(), probes(a, key)
	eventually(t, "the verifier keeps probing for 4s", func() bool {
		return time.Since(since) > 4*time.Second && probes(a, key) > before+3
	})
	for i, p := range others {
		if n := probes(p, key); n != 0 {
			t.Fatalf("replica %d probed a verification that replica 0 holds: %d probes", i+1, n)
		}
	}
	if st := waitStep(t, c, key, func(map[string]any) bool { return true }); st["status"] != "committed" {
		t.Fatalf("status while the effect is hidden: %v, want committed", st["status"])
	}

	a.kill()
	eventually(t, "another replica takes the verification over", func() bool {
		return probes(ps[1], key)+probes(c, key) > 0
	})
	up.show()
	waitStep(t, c, key, func(st map[string]any) bool { return st["status"] == "verified" })
	if pb, pc := probes(ps[1], key), probes(c, key); pb > 0 && pc > 0 {
		t.Fatalf("both surviving replicas probed: %d and %d", pb, pc)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}
