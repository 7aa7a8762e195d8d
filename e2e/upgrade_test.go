package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFile copies a fixture into dir.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromSchema1 starts this build on a journal written by the
// build before journal schema 2 (testdata/schema1: three invoices, order-1
// to order-3, forwarded through a billing rule like invoiceRoute, and the
// journal's secret). The read-only CLI refuses the old file with a clear
// error; serve upgrades it once; the intents it holds are still answered
// from the journal — with no new effect at the upstream — and new ones go
// through.
func TestUpgradeFromSchema1(t *testing.T) {
	up := newUpstream(t, false)
	// The old journal's intents were sent without a credential.
	s := newSetup(t, map[string]string{"billing.yaml": sharedRuleFile(up.host(), invoiceRoute)})
	db := filepath.Join(s.dir, "toolguard.db")
	copyFile(t, "testdata/schema1/toolguard.db", db)
	copyFile(t, "testdata/schema1/toolguard.db.secret", db+".secret")

	r := tg(t, nil, "journal", "ls", "--journal", db)
	if r.code != 1 || !strings.Contains(r.stderr, "layout 1") || !strings.Contains(r.stderr, "toolguard serve") {
		t.Fatalf("journal ls on a schema-1 file: exit %d, stderr %q; want 1 and how to upgrade", r.code, r.stderr)
	}

	p := s.start(t)
	// stderr is copied apart from stdout, whose lines start tells: wait
	// for the line rather than read the log once.
	eventually(t, "the upgrade of 3 steps in the log", func() bool {
		logs := p.logs.String()
		return strings.Contains(logs, "upgraded the file layout") && strings.Contains(logs, `"steps":3`)
	})
	c := p.client(t)
	for _, ref := range []string{"order-1", "order-2", "order-3"} {
		body := `{"customer":"c1","amount":4200,"reference":"` + ref + `","trace_id":"t2"}`
		resp, text := post(t, c, up.URL+"/v1/invoices", body)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Toolguard-Outcome") != "replayed" || !strings.Contains(text, `"inv_`) {
			t.Errorf("%s after the upgrade: %d %s %q, want the stored answer replayed", ref, resp.StatusCode, resp.Header.Get("Toolguard-Outcome"), text)
		}
	}
	if n := up.effects.Load(); n != 0 {
		t.Fatalf("%d effects at the upstream for intents the old journal holds", n)
	}
	resp, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":4200,"reference":"order-4"}`)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Toolguard-Outcome") != "forwarded" || up.effectsFor("order-4") != 1 {
		t.Fatalf("a new intent after the upgrade: %d %s, %d effects", resp.StatusCode, resp.Header.Get("Toolguard-Outcome"), up.effectsFor("order-4"))
	}

	p.kill()
	tgOK(t, nil, "journal", "check", "--journal", db)
	if out := tgOK(t, nil, "journal", "ls", "--journal", db); strings.Count(out, "committed")+strings.Count(out, "verified") != 4 {
		t.Errorf("journal ls after the upgrade, want 4 finished steps:\n%s", out)
	}
}
