//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

// TestEvaluate runs the target evaluation over synthetic cells: each case
// names the targets that must be met, missed, or left out (no row).
func TestEvaluate(t *testing.T) {
	grid := func(lat float64, cs ...cell) []cell {
		for i := range cs {
			cs[i].LatencyMS = lat
		}
		return cs
	}
	c := func(s string, conc int, rps, p50 float64) cell {
		return cell{Scenario: s, Conc: conc, RPS: rps, P50MS: p50}
	}
	tests := []struct {
		name   string
		r      report
		met    []string // substrings of target + " @ " + at
		missed []string
		absent []string
	}{
		{
			name: "bbolt guarded at 0 ms",
			r: report{LatenciesMS: []float64{0}, GridBackend: "bolt", Cells: grid(0,
				c(scPassthrough, 64, 10000, 5), c(scGuarded, 64, 6500, 8),
				c(scPassthrough, 256, 10000, 20), c(scGuarded, 256, 4000, 40),
				c(scPassthrough, 1, 3000, 0.2), c(scGuarded, 1, 1000, 0.65),
				c(scReplay, 1, 4600, 0.1), c(scReplay, 64, 14000, 2),
				c(scHTTPS, 64, 9600, 5),
			)},
			met: []string{"bbolt guarded req/s ≥ 0.6 × passthrough @ c64, 0 ms", "https req/s ≥ 0.95 × plain passthrough @ c64, 0 ms",
				"replay req/s ≥ 1.5 × passthrough @ c1, 0 ms", "bbolt guarded p50 − passthrough p50 ≤ 0.5 ms @ c1, 0 ms"},
			missed: []string{"bbolt guarded req/s ≥ 0.5 × passthrough @ c256, 0 ms", "replay req/s ≥ 1.5 × passthrough @ c64, 0 ms"},
			absent: []string{"0.85", "passthrough req/s ≥ bare", "mcp-guarded", "CPU per guarded call", "PostgreSQL", "cross-dup", "journal of", "peak RSS", "(the issue's is at 0 ms)"},
		},
		{
			name: "5 ms latency: 0.85 at c64, the c1 latency target says it is not the issue's",
			r: report{LatenciesMS: []float64{5}, Cells: grid(5,
				c(scPassthrough, 64, 10000, 5), c(scGuarded, 64, 8000, 8),
				c(scPassthrough, 1, 180, 5.2), c(scGuarded, 1, 170, 5.6),
			)},
			met:    []string{"bbolt guarded p50 − passthrough p50 ≤ 0.5 ms (the issue's is at 0 ms) @ c1, 5 ms"},
			missed: []string{"bbolt guarded req/s ≥ 0.85 × passthrough @ c64, 5 ms"},
			absent: []string{"≥ 0.6 ×"},
		},
		{
			name: "errors fail a target whose ratio is met",
			r: report{LatenciesMS: []float64{0}, Cells: []cell{
				c(scPassthrough, 64, 10000, 5), {Scenario: scGuarded, Conc: 64, RPS: 9000, Errors: 3},
				c(scMCPDirect, 64, 4000, 10), c(scMCPGuarded, 64, 2100, 30),
			}},
			met:    []string{"mcp-guarded req/s ≥ 0.5 × mcp-direct @ c64, 0 ms"},
			missed: []string{"bbolt guarded req/s ≥ 0.6 × passthrough @ c64, 0 ms"},
		},
		{
			name: "grid on PostgreSQL: no bbolt grid targets",
			r: report{LatenciesMS: []float64{0}, GridBackend: "postgres", Cells: []cell{
				c(scPassthrough, 64, 10000, 5), c(scGuarded, 64, 9000, 5), c(scReplay, 64, 16000, 1),
			}},
			met:    []string{"replay req/s ≥ 1.5 × passthrough @ c64, 0 ms"},
			absent: []string{"bbolt guarded"},
		},
		{
			name: "backends, in-process and scale",
			r: report{
				Backends: []backendCell{
					{Backend: "bolt", Scenario: scGuarded, loadCell: loadCell{Conc: 1, RPS: 700, ToolguardCPUUS: 280}},
					{Backend: "bolt", Scenario: scGuarded, loadCell: loadCell{Conc: 64, RPS: 6000, ToolguardCPUUS: 150}},
					{Backend: "postgres", Scenario: scGuarded, loadCell: loadCell{Conc: 64, RPS: 3100, ToolguardCPUUS: 500}},
					{Backend: "postgres", Scenario: scCrossDup, loadCell: loadCell{Conc: 1}, EffectsPerIntent: ptr(1)},
					{Backend: "postgres", Scenario: scCrossDup, loadCell: loadCell{Conc: 64}, EffectsPerIntent: ptr(1.0002)},
				},
				Journal: []journalCell{
					{Backend: "postgres", Scenario: scGuarded, Conc: 1, Calls: 100, StatementsPerCall: 3},
					{Backend: "postgres", Scenario: scGuarded, Conc: 64, Calls: 100, StatementsPerCall: 5},
					{Backend: "postgres", Scenario: scReplay, Conc: 64, Calls: 100, StatementsPerCall: 9},
					{Backend: "bolt", Scenario: scGuarded, Conc: 64, Calls: 100},
				},
				Scale: []scaleCell{
					{Backend: "bolt", Steps: 0, loadCell: loadCell{Conc: 64, RPS: 5000}},
					{Backend: "bolt", Steps: 200000, loadCell: loadCell{Conc: 64, RPS: 4600}},
				},
			},
			met: []string{"toolguard process (bbolt) ≤ 300 µs @ c1", "PostgreSQL guarded req/s ≥ 0.5 × bbolt guarded @ c64",
				"statements per guarded call ≤ 3 (in-process) @ c1", "effects per intent = 1.0000 (PostgreSQL, two replicas) @ c1",
				"journal of 200000 steps ≥ 0.9 × empty journal (the issue's is 1000000 steps) @ c64, 0 ms, bolt"},
			missed: []string{"toolguard process (bbolt) ≤ 120 µs @ c64", "statements per guarded call ≤ 3 (in-process) @ c64",
				"effects per intent = 1.0000 (PostgreSQL, two replicas) @ c64"},
			absent: []string{"req/s ≥ 0.6 × passthrough"},
		},
		{
			name: "scale missed; a scale cell without its empty twin is left out",
			r: report{Scale: []scaleCell{
				{Backend: "bolt", Steps: 0, loadCell: loadCell{Conc: 64, RPS: 5000}},
				{Backend: "bolt", Steps: 1000000, loadCell: loadCell{Conc: 64, RPS: 4000}},
				{Backend: "postgres", Steps: 1000000, loadCell: loadCell{Conc: 64, RPS: 1000}},
			}},
			missed: []string{"journal of 1000000 steps ≥ 0.9 × empty journal @ c64, 0 ms, bolt"},
			absent: []string{"the issue's is", "postgres"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.evaluate()
			rows := map[string]bool{}
			var all []string
			for _, tg := range tt.r.Targets {
				k := tg.Target + " @ " + tg.At
				rows[k] = tg.Met
				all = append(all, k+" → "+tg.Measured)
			}
			find := func(sub string) (met, ok bool) {
				for k, m := range rows {
					if strings.Contains(k, sub) {
						return m, true
					}
				}
				return false, false
			}
			for _, s := range tt.met {
				if m, ok := find(s); !ok || !m {
					t.Errorf("want %q met (found %v, met %v); rows:\n%s", s, ok, m, strings.Join(all, "\n"))
				}
			}
			for _, s := range tt.missed {
				if m, ok := find(s); !ok || m {
					t.Errorf("want %q missed (found %v, met %v); rows:\n%s", s, ok, m, strings.Join(all, "\n"))
				}
			}
			for _, s := range tt.absent {
				if _, ok := find(s); ok {
					t.Errorf("want no row with %q; rows:\n%s", s, strings.Join(all, "\n"))
				}
			}
		})
	}
}

func TestEvaluateTwiceDoesNotDuplicate(t *testing.T) {
	r := report{LatenciesMS: []float64{0}, Cells: []cell{{Scenario: scPassthrough, Conc: 64, RPS: 1}, {Scenario: scHTTPS, Conc: 64, RPS: 1}}}
	r.evaluate()
	r.evaluate()
	if len(r.Targets) != 1 {
		t.Fatalf("%d targets after two evaluations, want 1: %+v", len(r.Targets), r.Targets)
	}
}

func TestMeasuredNotesQuoteOnlyMeasuredFigures(t *testing.T) {
	r := report{}
	r.measuredNotes()
	if len(r.Notes) != 0 {
		t.Fatalf("notes without PostgreSQL cells: %q", r.Notes)
	}
	r.Journal = []journalCell{{Backend: "postgres", Scenario: scGuarded, Conc: 64, Calls: 10, CommitsPerCall: 2, StatementsPerCall: 3.5, PoolMaxConns: 16}}
	r.measuredNotes()
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "2.000 commits and 3.500 statements") || strings.Contains(r.Notes[0], "5 statements") {
		t.Fatalf("notes = %q", r.Notes)
	}
}

func TestParseFlagsScale(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		scale  int
		scaleD time.Duration
		err    string
	}{
		{args: nil, scale: 1000000, scaleD: 10 * time.Second},
		{args: []string{"-quick"}, scale: 0, scaleD: 10 * time.Second},
		{args: []string{"-quick", "-scale", "5000"}, scale: 5000, scaleD: 10 * time.Second},
		{args: []string{"-scale", "0"}, scale: 0, scaleD: 10 * time.Second},
		{args: []string{"-duration", "20s"}, scale: 1000000, scaleD: 20 * time.Second},
		{args: []string{"-duration", "20s", "-scale-duration", "3s"}, scale: 1000000, scaleD: 3 * time.Second},
		{args: []string{"-scale", "-1"}, err: "-scale: -1 is negative"},
		{args: []string{"-scale-duration", "0s"}, err: "-scale-duration: 0s is not a positive duration"},
	} {
		o, err := parseFlags(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseFlags(%q) error = %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || o.scale != tt.scale || o.scaleDuration != tt.scaleD {
			t.Errorf("parseFlags(%q) = scale %d for %v, %v; want %d for %v", tt.args, o.scale, o.scaleDuration, err, tt.scale, tt.scaleD)
		}
	}
}

// A ratio target also shows the ratio of each round's pair, which ran one
// right after the other, and their median; the verdict stays the median
// rows' ratio.
func TestRoundRatios(t *testing.T) {
	r := report{LatenciesMS: []float64{0}, Cells: []cell{
		{Scenario: scPassthrough, Conc: 64, RPS: 8000, RoundsRPS: []float64{8000, 10000, 7000}},
		{Scenario: scReplay, Conc: 64, RPS: 11000, RoundsRPS: []float64{12000, 11000, 11200}},
	}}
	r.evaluate()
	var got *target
	for i := range r.Targets {
		if strings.HasPrefix(r.Targets[i].Target, "replay req/s") {
			got = &r.Targets[i]
		}
	}
	if got == nil {
		t.Fatal("no replay target")
	}
	if want := "11000 vs 8000 req/s = ×1.38; per round ×1.50 ×1.10 ×1.60 (median ×1.50)"; got.Measured != want {
		t.Errorf("measured %q, want %q", got.Measured, want)
	}
	if got.Met {
		t.Error("met on the per-round median; the verdict is the median rows' ratio")
	}
	one := cell{RoundsRPS: []float64{1}}
	if s := roundRatios(&one, &one); s != "" {
		t.Errorf("one round: %q, want nothing", s)
	}
}
