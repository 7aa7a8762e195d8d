package lifecycle

import (
	"testing"
	"time"
)

// A renewal the journal accepted extends the lease from the moment it
// went out, less the margin for the clock's rate.
func TestLeaseExtends(t *testing.T) {
	t0 := time.Now()
	l := NewLease(t0, time.Second)
	if want := t0.Add(time.Second - leaseMargin(time.Second)); !l.Until().Equal(want) {
		t.Fatalf("until = %v, want %v", l.Until(), want)
	}
	l.Extend(t0.Add(-time.Second), time.Second) // an older renewal never shortens it
	l.Extend(t0.Add(500*time.Millisecond), time.Second)
	if want := t0.Add(1500*time.Millisecond - leaseMargin(time.Second)); !l.Until().Equal(want) {
		t.Fatalf("until after a renewal = %v, want %v", l.Until(), want)
	}
	if !l.Holds(t0) || l.Holds(l.Until()) {
		t.Fatal("holds is wrong at the ends")
	}
	var none *Lease
	if !none.Holds(time.Now()) || !none.Until().IsZero() {
		t.Fatal("a nil lease must hold, and never end")
	}
}
