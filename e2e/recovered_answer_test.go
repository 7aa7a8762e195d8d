package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
)

// After a SIGKILL that lost the answer of a call that took effect, a rule
// with lookup.answer recovers it in the provider's shape: the found object
// with the route's status, the same on every later duplicate, one effect.
func TestRecoveredAnswerAfterKill(t *testing.T) {
	up := newUpstream(t, false)
	route := recoveryRoute("lookup", up.host()) + "      answer: {body: data.0, status: 201}\n"
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route)})
	s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
	killMidCall(t, s.start(t), up, "after")

	p := s.start(t)
	c := p.client(t)
	r, body := postUntilSettled(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != 201 || r.Header.Get("Toolguard-Outcome") != "recovered" {
		t.Fatalf("recovery: %d %q %s, want 201 recovered", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil || obj.ID != "inv_1" {
		t.Fatalf("recovered answer %s (%v), want the found invoice inv_1", body, err)
	}
	r2, body2 := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r2.StatusCode != 201 || body2 != body || r2.Header.Get("Toolguard-Outcome") != "replayed" {
		t.Fatalf("later duplicate: %d %q %s, want the recovered answer replayed", r2.StatusCode, r2.Header.Get("Toolguard-Outcome"), body2)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	st := waitStep(t, p, r.Header.Get("Toolguard-Key"), func(map[string]any) bool { return true })
	if fmt.Sprint(st["status"]) != "committed" || st["operation_id"] != "inv_1" {
		t.Fatalf("step %v", st)
	}
}
