package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/internal/pgtest"
)

// pgThroughCut starts a replica whose connections to its database pass
// through a CutProxy.
func pgThroughCut(t *testing.T) (*proc, *upstream, *pgtest.CutProxy) {
	dsn, cut := pgtest.Through(t, pgtest.Database(t))
	up := newUpstream(t, false)
	p := pgReplica(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}, dsn,
		writeSecret(t, strings.Repeat("s", 40))).start(t)
	return p, up, cut
}

// The database is down before the claim: nothing is sent, the agent hears
// an error it may retry, and once the database is back the same call goes
// through once.
func TestPostgresDownBeforeClaimSendsNothing(t *testing.T) {
	p, up, cut := pgThroughCut(t)
	c := p.client(t)
	cut.SetMode(pgtest.Refuse)
	r, body := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":3}`)
	if r.StatusCode < 500 || up.effects.Load() != 0 {
		t.Fatalf("with the database down: %d %s, %d effects; want a 5xx and no effect", r.StatusCode, body, up.effects.Load())
	}
	cut.SetMode(pgtest.Pass)
	r, body = post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":3}`)
	if r.StatusCode != http.StatusCreated || up.effects.Load() != 1 {
		t.Fatalf("after the database is back: %d %s, %d effects; want 201 and one effect", r.StatusCode, body, up.effects.Load())
	}
}

// The database goes away after the claim committed, while the call is at
// the upstream (between claim and send, and after the answer, before the
// outcome's commit): the effect happens once, and retries after the
// database is back never repeat it.
func TestPostgresDownAfterClaimNoDuplicate(t *testing.T) {
	for _, stage := range []string{"before", "after"} {
		t.Run(stage, func(t *testing.T) {
			p, up, cut := pgThroughCut(t)
			c := p.client(t)
			var once sync.Once
			up.setHook(func(s string, r *http.Request) bool {
				if s == stage {
					once.Do(func() { cut.SetMode(pgtest.Refuse) })
				}
				return true
			})
			r, body := post(t, c, up.URL+"/v1/invoices", `{"customer":"c2","amount":4}`)
			t.Logf("during the outage: %d %s", r.StatusCode, body)
			cut.SetMode(pgtest.Pass)
			for i := range 3 {
				r, body = post(t, c, up.URL+"/v1/invoices", `{"customer":"c2","amount":4}`)
				t.Logf("retry %d: %d %s %s", i, r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
			}
			if got := up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects = %d, want 1", got)
			}
			// The route has no lookup: a call that may have taken effect is
			// held for an operator, never re-sent.
			if r.StatusCode != http.StatusConflict {
				t.Fatalf("last retry: %d %s, want 409 (held)", r.StatusCode, body)
			}
			if steps := stepsOf(t, p, ""); len(steps) != 1 || steps[0]["hold"] != "needs_review" {
				t.Fatalf("steps = %v, want the one step held for review", steps)
			}
		})
	}
}
