package e2e

import (
	"strings"
	"testing"
)

// TestConsoleObserved: in observe mode the console marks observations
// with a badge, counts them in the header, and shows by route what
// enforcement would have done, with example keys.
func TestConsoleObserved(t *testing.T) {
	b := newBrowser(t)
	plain, secure := newEchoAPI(t, false), newEchoAPI(t, true)
	s := newSetup(t, map[string]string{"billing.yaml": observeRules(plain.host(), secure.host())})
	s.env = append(s.env, "TOOLGUARD_GUARD_MODE=observe", "TOOLGUARD_ADMIN_TOKEN="+operatorToken)
	p := s.start(t)
	c := p.client(t)
	r, _ := post(t, c, plain.URL+"/v1/invoices", `{"customer":"c1","amount":1}`)
	post(t, c, plain.URL+"/v1/invoices", `{"customer":"c1","amount":1}`)
	post(t, c, plain.URL+"/v1/payouts", `{"amount":5}`)
	if got := r.Header.Get("Toolguard-Outcome"); got != "" {
		t.Fatalf("observed answer carries Toolguard-Outcome %q", got)
	}
	eventually(t, "three observations journaled", func() bool { return report(t, p).Observed == 3 })

	tb := b.tab(t)
	tb.signIn(p.adminURL, operatorToken)
	tb.waitJS("observed count", `document.querySelector("#count-observed").textContent === "3 · would stop 1"`)
	tb.open(p.adminURL, "/observed")
	for sel, want := range map[string]string{"#observed-total": "3", "#would-stop": "1", "#would-hold": "1", "#would-refuse": "0"} {
		if got := tb.text(sel); got != want {
			t.Errorf("%s = %q, want %q", sel, got, want)
		}
	}
	row := `tr[data-route="billing/create_invoice"]`
	if got := tb.text(row + " .stopped-n"); got != "1" {
		t.Errorf("create_invoice would stop %q, want 1", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('tr[data-route="billing/create_invoice"] .examples a[href^="#/step/"]').length`); n != 1 {
		t.Errorf("create_invoice shows %d example keys, want the replayed one", n)
	}
	if got := tb.text(`tr[data-route="billing/payout"] li[data-would="hold_approval"]`); !strings.Contains(got, "1") {
		t.Errorf("payout hold_approval = %q, want 1", got)
	}
	tb.open(p.adminURL, "/steps")
	if n := eval[int](tb, `document.querySelectorAll("tr.observed td.status .badge.observed").length`); n != 2 {
		t.Errorf("steps marked observed: %d, want both", n)
	}
	first := eval[string](tb, `document.querySelector("tr.observed").dataset.key`)
	tb.open(p.adminURL, "/step/"+first)
	if got := tb.text(".notice.observed"); !strings.Contains(got, "never replayed") {
		t.Errorf("step page notice = %q", got)
	}
	tb.noDialogs()
}
