//go:build linux

package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsBackend(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		backends   []string
		pgSettings []string
		err        string
	}{
		{name: "default bolt", args: nil, backends: []string{"bolt"}},
		{name: "postgres", args: []string{"-backend", "postgres"}, backends: []string{"postgres"}},
		{name: "both", args: []string{"-backend", "both"}, backends: []string{"bolt", "postgres"}},
		{name: "unknown backend", args: []string{"-backend", "sqlite"}, err: `-backend: "sqlite" is not bolt, postgres or both`},
		{name: "settings", args: []string{"-backend", "postgres", "-pg-settings", "synchronous_commit=off, commit_delay=200"},
			backends: []string{"postgres"}, pgSettings: []string{"synchronous_commit=off", "commit_delay=200"}},
		{name: "setting without value", args: []string{"-pg-settings", "synchronous_commit"}, err: `"synchronous_commit" is not name=value`},
		{name: "setting name with SQL", args: []string{"-pg-settings", "a;drop database x=1"}, err: "is not name=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if !slices.Equal(o.backends, tt.backends) || !slices.Equal(o.pgSettings, tt.pgSettings) {
				t.Errorf("parseFlags(%q): backends %q, settings %q; want %q, %q", tt.args, o.backends, o.pgSettings, tt.backends, tt.pgSettings)
			}
			if o.dsn != defaultDSN {
				t.Errorf("dsn = %q, want the default %q", o.dsn, defaultDSN)
			}
		})
	}
}

func TestAdminDSNDropsPoolParameters(t *testing.T) {
	s := newPGServer("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&pool_max_conns=16&pool_min_conns=2", nil)
	if got, want := s.adminDSN(), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"; got != want {
		t.Errorf("adminDSN() = %q, want %q", got, want)
	}
}

func TestCPUTimeOfThisProcess(t *testing.T) {
	// Burn some CPU so that at least one 10 ms tick is counted.
	x := 0
	for i := 0; cpuTime(os.Getpid()) == 0 && i < 1e9; i++ {
		x += i
	}
	if cpuTime(os.Getpid()) <= 0 {
		t.Fatalf("cpuTime(self) = 0 after a busy loop (%d)", x)
	}
	if got := cpuTime(-1); got != 0 {
		t.Errorf("cpuTime(-1) = %v, want 0 for a process that does not exist", got)
	}
}

func TestFaultsCountsTouchedPages(t *testing.T) {
	before := faults(os.Getpid())
	// Fresh memory: the kernel maps each page at its first touch.
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if after := faults(os.Getpid()); after-before < 100 {
		t.Errorf("faults(self) rose by %d after touching %d fresh pages, want at least 100", after-before, len(b)/4096)
	}
	if got := faults(-1); got != 0 {
		t.Errorf("faults(-1) = %d, want 0 for a process that does not exist", got)
	}
}

// The server's work per call is the difference of two readings divided
// by the calls; unread statistics give nothing rather than zeros.
func TestPGPerCall(t *testing.T) {
	a := pgCounters{WALRecords: 10, WALFPI: 2, WALBytes: 1000, BlocksRead: 5, BlocksHit: 50, AuxCPU: time.Millisecond, ok: true}
	b := pgCounters{WALRecords: 30, WALFPI: 12, WALBytes: 101000, BlocksRead: 25, BlocksHit: 250, AuxCPU: 3 * time.Millisecond, ok: true}
	got := a.perCall(b, 10)
	want := pgPerCall{WALRecords: 2, WALFPI: 1, WALBytes: 10000, BlocksRead: 2, BlocksHit: 20, AuxCPUUS: 200}
	if got == nil || *got != want {
		t.Fatalf("perCall = %+v, want %+v", got, want)
	}
	if got.cells() != "10000 | 1.00 | 2.0 | 200" {
		t.Errorf("cells() = %q", got.cells())
	}
	if a.perCall(pgCounters{}, 10) != nil || a.perCall(b, 0) != nil {
		t.Error("perCall of an unread reading, or of no calls, is not nil")
	}
	if (*pgPerCall)(nil).cells() != "– | – | – | –" {
		t.Error("cells() of nothing measured")
	}
}

func TestMachineBusyCountsThisProcess(t *testing.T) {
	before, cpu0 := machineBusy(), cpuTime(os.Getpid())
	x := 0
	for i := 0; cpuTime(os.Getpid())-cpu0 < 50*time.Millisecond && i < 1e10; i++ {
		x += i
	}
	// The machine was busy at least as long as this process (give or
	// take a tick of each count).
	if got, own := machineBusy()-before, cpuTime(os.Getpid())-cpu0; got < own-2*clockTick {
		t.Errorf("machineBusy() rose by %v while this process used %v (%d)", got, own, x)
	}
}

// A backend that connected during the cell counts from its start.
func TestPGBackendCPU(t *testing.T) {
	a := pgCounters{BackendCPU: map[int]time.Duration{1: 10 * time.Millisecond}}
	b := pgCounters{BackendCPU: map[int]time.Duration{1: 30 * time.Millisecond, 2: 50 * time.Millisecond}}
	if got := a.backendCPU(b); got != 70*time.Millisecond {
		t.Errorf("backendCPU = %v, want 70ms", got)
	}
}
