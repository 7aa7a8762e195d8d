package observe

import (
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// TestPending: a key is in flight from its start to its end, and its
// record is shown until it is saved; Idle waits for all of it.
func TestPending(t *testing.T) {
	var o Pending
	select {
	case <-o.Idle():
	default:
		t.Fatal("a new Pending is not idle")
	}
	o.Start("k")
	o.Start("k")
	idle := o.Idle()
	if in, rec := o.View("k"); !in || rec != nil {
		t.Fatalf("view = %v, %v; want in flight, no record", in, rec)
	}
	o.Ended("k", &journal.Step{Key: "k", Status: journal.StatusCommitted})
	if in, rec := o.View("k"); !in || rec == nil || rec.Status != journal.StatusCommitted {
		t.Fatalf("view after one end = %v, %v; want in flight, the committed record", in, rec)
	}
	o.Ended("k", nil)
	if in, rec := o.View("k"); in || rec == nil {
		t.Fatalf("view after both ended = %v, %v; want the unsaved record", in, rec)
	}
	select {
	case <-idle:
		t.Fatal("idle before the record was saved")
	default:
	}
	o.Saved("k")
	<-idle
	if in, rec := o.View("k"); in || rec != nil {
		t.Fatalf("view after the save = %v, %v; want nothing", in, rec)
	}
}

// TestPendingUnknownKey: ending or saving a key that was never started
// changes nothing.
func TestPendingUnknownKey(t *testing.T) {
	var o Pending
	o.Ended("k", &journal.Step{Key: "k"})
	o.Saved("k")
	if in, rec := o.View("k"); in || rec != nil {
		t.Fatalf("View = %v, %v; want nothing", in, rec)
	}
	<-o.Idle()
}
