//go:build linux

package main

import (
	"os"
	"testing"
	"time"
)

func TestSwitchesCountsABlockingRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := switches(os.Getpid())
	// A write that comes a while later makes the reading thread (or the
	// netpoller's) sleep and be woken at least once.
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte{1})
		w.Close()
	}()
	b := make([]byte, 1)
	if _, err := r.Read(b); err != nil {
		t.Fatal(err)
	}
	if after := switches(os.Getpid()); after <= before {
		t.Errorf("switches(self) = %d after a blocking read, %d before: want more", after, before)
	}
	if got := switches(-1); got != 0 {
		t.Errorf("switches(-1) = %d, want 0 for a process that does not exist", got)
	}
}

func TestProbeWakeup(t *testing.T) {
	w, err := probeWakeup(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w.RoundTrips == 0 || w.P50US <= 0 || w.CPUUS <= 0 {
		t.Errorf("probeWakeup = %+v, want round trips with a latency and a CPU cost", w)
	}
}

func TestRunTimeOfThisProcess(t *testing.T) {
	if d, err := runTime(os.Getpid()); err != nil || d <= 0 {
		t.Errorf("runTime(self) = %v, %v; want > 0", d, err)
	}
	if _, err := runTime(-1); err == nil {
		t.Error("runTime(-1): want an error for a process that does not exist")
	}
}
