package lookuprate

import (
	"testing"
	"time"

	"github.com/toolguard/toolguard/rules"
)

func TestBudget(t *testing.T) {
	var b Budget
	r := &rules.Rate{N: 2, Per: time.Second}
	t0 := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		api  string
		ok   bool
		wait time.Duration
	}{
		{at: 0, api: "a", ok: true},
		{at: 0, api: "a", ok: true},
		{at: 0, api: "a", ok: false, wait: 500 * time.Millisecond},
		{at: 0, api: "b", ok: true}, // budgets are per API
		{at: 250 * time.Millisecond, api: "a", ok: false, wait: 250 * time.Millisecond},
		{at: 500 * time.Millisecond, api: "a", ok: true},
		{at: 10 * time.Second, api: "a", ok: true}, // refills up to N only
		{at: 10 * time.Second, api: "a", ok: true},
		{at: 10 * time.Second, api: "a", ok: false, wait: 500 * time.Millisecond},
	}
	for i, s := range steps {
		ok, wait := b.Take(s.api, r, t0.Add(s.at))
		if ok != s.ok || wait != s.wait {
			t.Fatalf("step %d: Take = %v, %s; want %v, %s", i, ok, wait, s.ok, s.wait)
		}
	}
	if ok, _ := b.Take("a", nil, t0); !ok {
		t.Fatal("a nil rate is unlimited")
	}
	if ok, _ := b.Take("a", &rules.Rate{N: 0, Per: time.Second}, t0); !ok {
		t.Fatal("a rate of no lookups is unlimited")
	}
}
