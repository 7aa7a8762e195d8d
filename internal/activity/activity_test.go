package activity

import (
	"sync"
	"testing"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestCounter(t *testing.T) {
	var a Counter
	if !closed(a.Idle()) {
		t.Fatal("a zero Counter is not idle")
	}
	for _, tc := range []struct {
		name     string
		op       func() bool // reports whether work was counted, where it matters
		wantOK   bool
		wantIdle bool
	}{
		{name: "Add", op: func() bool { a.Add(1); return true }, wantOK: true},
		{name: "TryAdd under the bound", op: func() bool { return a.TryAdd(2) }, wantOK: true},
		{name: "TryAdd at the bound", op: func() bool { return a.TryAdd(2) }},
		{name: "Done", op: func() bool { a.Done(); return true }, wantOK: true},
		{name: "Add negative to zero", op: func() bool { a.Add(-1); return true }, wantOK: true, wantIdle: true},
		{name: "TryAdd from zero", op: func() bool { return a.TryAdd(1) }, wantOK: true},
		{name: "TryAdd at a bound of one", op: func() bool { return a.TryAdd(1) }},
		{name: "Done to zero", op: func() bool { a.Done(); return true }, wantOK: true, wantIdle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.op(); got != tc.wantOK {
				t.Errorf("counted = %v, want %v", got, tc.wantOK)
			}
			if got := closed(a.Idle()); got != tc.wantIdle {
				t.Errorf("idle = %v, want %v", got, tc.wantIdle)
			}
		})
	}
}

// Idle taken while work runs closes when the last unit is done, and a
// later round of work gets a new channel.
func TestIdleClosesWhenWorkEnds(t *testing.T) {
	var a Counter
	const n = 16
	a.Add(n)
	idle := a.Idle()
	var wg sync.WaitGroup
	for range n {
		wg.Go(a.Done)
	}
	<-idle
	wg.Wait()
	a.Add(1)
	if closed(a.Idle()) {
		t.Fatal("a new round of work is idle")
	}
	if !closed(idle) {
		t.Fatal("the earlier channel reopened")
	}
	a.Done()
}

// Regression: adding zero to an idle counter closed its idle channel a
// second time, which panics.
func TestAddZero(t *testing.T) {
	var c Counter
	c.Add(1)
	c.Done()
	c.Add(0)
	c.Add(0)
	select {
	case <-c.Idle():
	default:
		t.Fatal("an idle counter's channel is not closed")
	}
	c.Add(1)
	c.Add(0)
	select {
	case <-c.Idle():
		t.Fatal("a busy counter reads idle")
	default:
	}
}
