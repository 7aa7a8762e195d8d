package observe

import (
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// TestPending: a key is in flight from its start to its end, and its
// record is shown until it is saved; Idle waits for all of it.
func TestPending(t *testing.T) {
	var o pending
	select {
	case <-o.idle():
	default:
		t.Fatal("a new pending is not idle")
	}
	o.start("k")
	o.start("k")
	idle := o.idle()
	if in, rec := o.view("k"); !in || rec != nil {
		t.Fatalf("view = %v, %v; want in flight, no record", in, rec)
	}
	o.ended("k", &journal.Step{Key: "k", Status: journal.StatusCommitted})
	if in, rec := o.view("k"); !in || rec == nil || rec.Status != journal.StatusCommitted {
		t.Fatalf("view after one end = %v, %v; want in flight, the committed record", in, rec)
	}
	o.ended("k", nil)
	if in, rec := o.view("k"); in || rec == nil {
		t.Fatalf("view after both ended = %v, %v; want the unsaved record", in, rec)
	}
	select {
	case <-idle:
		t.Fatal("idle before the record was saved")
	default:
	}
	o.saved("k")
	<-idle
	if in, rec := o.view("k"); in || rec != nil {
		t.Fatalf("view after the save = %v, %v; want nothing", in, rec)
	}
}

// TestPendingUnknownKey: ending or saving a key that was never started
// changes nothing.
func TestPendingUnknownKey(t *testing.T) {
	var o pending
	o.ended("k", &journal.Step{Key: "k"})
	o.saved("k")
	if in, rec := o.view("k"); in || rec != nil {
		t.Fatalf("View = %v, %v; want nothing", in, rec)
	}
	<-o.idle()
}
