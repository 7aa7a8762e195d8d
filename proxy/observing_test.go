package proxy

import (
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// TestObserving: a key is in flight from its start to its end, and its
// record is shown until it is saved; idle waits for all of it.
func TestObserving(t *testing.T) {
	var o observing
	select {
	case <-o.idle():
	default:
		t.Fatal("a new observing is not idle")
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
