//go:build linux

package main

import (
	"fmt"
	"math"
	"slices"
)

// The targets of the performance issue (23), and the earlier contracts
// (passthrough, memory) the harness keeps checking.
const (
	memLimitMiB = 64
	// bbolt, guarded vs passthrough.
	guardedC64Lat0  = 0.6  // c64, upstream latency 0
	guardedC64Lat5  = 0.85 // c64, upstream latency 5 ms
	guardedC256     = 0.5  // c256, each latency
	guardedC1OverMS = 0.5  // c1: guarded p50 − passthrough p50
	// CPU per guarded call of the toolguard process (bbolt).
	cpuC64US = 120
	cpuC1US  = 300
	// PostgreSQL.
	pgVsBolt        = 0.5
	pgStatements    = 3
	effectsExpected = 1.0
	// Replay, HTTPS, scale, MCP.
	replayVsPass = 1.5
	httpsVsPass  = 0.95
	scaleVsEmpty = 0.9
	scaleSteps   = 1000000 // the journal size
	mcpVsDirect  = 0.5
)

// evaluate checks the targets against the cells of this run: a target
// whose cells were not run is left out; a cell with errors fails its
// target whatever its numbers.
func (r *report) evaluate() {
	r.Targets = nil
	for _, lat := range r.LatenciesMS {
		at := func(conc int) string { return fmt.Sprintf("c%d, %s ms", conc, fmtNum(lat)) }
		cells := func(conc int, names ...string) []*cell {
			out := make([]*cell, 0, len(names))
			for _, n := range names {
				c := r.find(n, conc, lat)
				if c == nil {
					return nil
				}
				out = append(out, c)
			}
			return out
		}
		// Earlier contracts.
		if c := cells(64, scPassthrough, scBare); c != nil {
			r.ratioTarget("passthrough req/s ≥ bare goproxy", at(64), c[0], c[1], 1)
		}
		if c := cells(1, scPassthrough, scDirect); c != nil {
			r.latencyTarget("passthrough p50 − direct p50 ≤ 0.3 ms", at(1), c[0], c[0].P50MS-c[1].P50MS, 0.3)
		}
		// bbolt, guarded vs passthrough (the grid's journal).
		if r.GridBackend == "" || r.GridBackend == "bolt" {
			limits := map[int]float64{256: guardedC256}
			switch lat {
			case 0:
				limits[64] = guardedC64Lat0
			case 5:
				limits[64] = guardedC64Lat5
			}
			for _, conc := range []int{64, 256} {
				limit, ok := limits[conc]
				if !ok {
					continue
				}
				if c := cells(conc, scGuarded, scPassthrough); c != nil {
					r.ratioTarget(fmt.Sprintf("bbolt guarded req/s ≥ %s × passthrough", fmtNum(limit)), at(conc), c[0], c[1], limit)
				}
			}
			if c := cells(1, scGuarded, scPassthrough); c != nil {
				name := fmt.Sprintf("bbolt guarded p50 − passthrough p50 ≤ %s ms", fmtNum(guardedC1OverMS))
				if lat != 0 {
					name += " (the issue's is at 0 ms)"
				}
				r.latencyTarget(name, at(1), c[0], c[0].P50MS-c[1].P50MS, guardedC1OverMS)
			}
		}
		for _, conc := range []int{1, 64} {
			if c := cells(conc, scReplay, scPassthrough); c != nil {
				r.ratioTarget(fmt.Sprintf("replay req/s ≥ %s × passthrough", fmtNum(replayVsPass)), at(conc), c[0], c[1], replayVsPass)
			}
		}
		if c := cells(64, scHTTPS, scPassthrough); c != nil {
			r.ratioTarget(fmt.Sprintf("https req/s ≥ %s × plain passthrough", fmtNum(httpsVsPass)), at(64), c[0], c[1], httpsVsPass)
		}
		if c := cells(64, scMCPGuarded, scMCPDirect); c != nil {
			r.ratioTarget(fmt.Sprintf("mcp-guarded req/s ≥ %s × mcp-direct", fmtNum(mcpVsDirect)), at(64), c[0], c[1], mcpVsDirect)
		}
	}
	r.backendTargets()
	r.scaleTargets()
	for _, m := range r.Memory {
		if m.Proxy != "toolguard" {
			continue
		}
		t := target{
			Target:   fmt.Sprintf("peak RSS ≤ %d MiB, %s", memLimitMiB, m.Load),
			At:       fmt.Sprintf("c%d, %d KiB bodies", m.Conc, m.BodyBytes>>10),
			Measured: fmt.Sprintf("%.1f MiB", m.PeakMiB),
			Limit:    fmt.Sprintf("%d MiB", memLimitMiB),
			Met:      m.PeakMiB <= memLimitMiB && m.Errors == 0,
			Margin:   fmt.Sprintf("%+.1f MiB", memLimitMiB-m.PeakMiB),
		}
		r.Targets = append(r.Targets, withErrors(t, m.Errors))
	}
}

// backendTargets: from the backends table (fresh processes per backend,
// upstream latency 0) and the in-process table.
func (r *report) backendTargets() {
	for _, conc := range []int{1, 64} {
		limit := map[int]float64{1: cpuC1US, 64: cpuC64US}[conc]
		if c := r.findBackend("bolt", scGuarded, conc); c != nil {
			t := target{
				Target:   fmt.Sprintf("CPU per guarded call, toolguard process (bbolt) ≤ %.0f µs", limit),
				At:       fmt.Sprintf("c%d, 0 ms", conc),
				Measured: fmt.Sprintf("%.0f µs (%.1f context switches)", c.ToolguardCPUUS, c.ToolguardSwitches),
				Limit:    fmt.Sprintf("%.0f µs", limit),
				Met:      c.ToolguardCPUUS <= limit && c.Errors == 0,
				Margin:   fmt.Sprintf("%+.0f µs", limit-c.ToolguardCPUUS),
			}
			r.Targets = append(r.Targets, withErrors(t, c.Errors))
		}
	}
	pg, bolt := r.findBackend("postgres", scGuarded, 64), r.findBackend("bolt", scGuarded, 64)
	if pg != nil && bolt != nil {
		r.rpsTarget(fmt.Sprintf("PostgreSQL guarded req/s ≥ %s × bbolt guarded", fmtNum(pgVsBolt)), "c64, 0 ms", pg.RPS, bolt.RPS, pgVsBolt, pg.Errors+bolt.Errors)
	}
	for _, j := range r.Journal {
		if j.Backend != "postgres" || j.Scenario != scGuarded {
			continue
		}
		t := target{
			Target:   fmt.Sprintf("PostgreSQL statements per guarded call ≤ %d (in-process)", pgStatements),
			At:       fmt.Sprintf("c%d, 0 ms", j.Conc),
			Measured: fmt.Sprintf("%.3f", j.StatementsPerCall),
			Limit:    fmt.Sprint(pgStatements),
			Met:      j.StatementsPerCall <= pgStatements && j.Errors == 0 && j.Calls > 0,
			Margin:   fmt.Sprintf("%+.3f", pgStatements-j.StatementsPerCall),
		}
		r.Targets = append(r.Targets, withErrors(t, j.Errors))
	}
	for _, c := range r.Backends {
		if c.Scenario != scCrossDup || c.EffectsPerIntent == nil {
			continue
		}
		e := *c.EffectsPerIntent
		t := target{
			Target:   "cross-dup upstream effects per intent = 1.0000 (PostgreSQL, two replicas)",
			At:       fmt.Sprintf("c%d, 0 ms", c.Conc),
			Measured: fmt.Sprintf("%.4f", e),
			Limit:    fmt.Sprintf("%.4f", effectsExpected),
			// Printed to four places, as the table shows it.
			Met:    math.Abs(e-effectsExpected) < 0.00005 && c.Errors == 0,
			Margin: fmt.Sprintf("%+.4f", effectsExpected-e),
		}
		r.Targets = append(r.Targets, withErrors(t, c.Errors))
	}
}

// scaleTargets: guarded on the pre-filled journal vs the empty one.
func (r *report) scaleTargets() {
	for _, full := range r.Scale {
		if full.Steps == 0 {
			continue
		}
		empty := r.findScale(full.Backend, 0)
		if empty == nil {
			continue
		}
		name := fmt.Sprintf("guarded req/s on a journal of %d steps ≥ %s × empty journal", full.Steps, fmtNum(scaleVsEmpty))
		if full.Steps != scaleSteps {
			name += fmt.Sprintf(" (the issue's is %d steps)", scaleSteps)
		}
		r.rpsTarget(name, fmt.Sprintf("c%d, 0 ms, %s", full.Conc, full.Backend), full.RPS, empty.RPS, scaleVsEmpty, full.Errors+empty.Errors)
	}
}

func (r *report) findBackend(backend, scenario string, conc int) *backendCell {
	for i := range r.Backends {
		if c := &r.Backends[i]; c.Backend == backend && c.Scenario == scenario && c.Conc == conc {
			return c
		}
	}
	return nil
}

// ratioTarget: c.RPS ≥ limit × ref.RPS.
func (r *report) ratioTarget(name, at string, c, ref *cell, limit float64) {
	r.rpsTarget(name, at, c.RPS, ref.RPS, limit, c.Errors+ref.Errors)
	if rounds := roundRatios(c, ref); rounds != "" {
		r.Targets[len(r.Targets)-1].Measured += "; " + rounds
	}
}

// roundRatios are c's req/s over ref's round by round, when both ran in
// the same rounds: the two loads of a round ran one right after the
// other, so these pairs share the machine's state of the moment, which
// the median rows of the two cells need not.
func roundRatios(c, ref *cell) string {
	if len(c.RoundsRPS) < 2 || len(c.RoundsRPS) != len(ref.RoundsRPS) {
		return ""
	}
	ratios := make([]float64, 0, len(c.RoundsRPS))
	s := "per round"
	for i, rps := range c.RoundsRPS {
		if ref.RoundsRPS[i] <= 0 {
			return ""
		}
		ratios = append(ratios, rps/ref.RoundsRPS[i])
		s += fmt.Sprintf(" ×%.2f", ratios[i])
	}
	slices.Sort(ratios)
	return s + fmt.Sprintf(" (median ×%.2f)", ratios[len(ratios)/2])
}

// rpsTarget: rps ≥ limit × ref; errors in either load fail it.
func (r *report) rpsTarget(name, at string, rps, ref, limit float64, errors int) {
	ratio := 0.0
	if ref > 0 {
		ratio = rps / ref
	}
	t := target{
		Target:   name,
		At:       at,
		Measured: fmt.Sprintf("%.0f vs %.0f req/s = ×%.2f", rps, ref, ratio),
		Limit:    fmt.Sprintf("×%.2f", limit),
		Met:      ratio >= limit && errors == 0,
		Margin:   fmt.Sprintf("%+.0f%%", (ratio/limit-1)*100),
	}
	r.Targets = append(r.Targets, withErrors(t, errors))
}

// latencyTarget: measured ≤ limit, in milliseconds.
func (r *report) latencyTarget(name, at string, c *cell, measured, limit float64) {
	t := target{
		Target:   name,
		At:       at,
		Measured: fmt.Sprintf("%.3f ms", measured),
		Limit:    fmt.Sprintf("%.1f ms", limit),
		Met:      measured <= limit && c.Errors == 0,
		Margin:   fmt.Sprintf("%+.3f ms", limit-measured),
	}
	r.Targets = append(r.Targets, withErrors(t, c.Errors))
}

func withErrors(t target, errors int) target {
	if errors > 0 {
		t.Measured += fmt.Sprintf(" (%d errors)", errors)
	}
	return t
}

// measuredNotes adds the notes that quote this run's own figures (and
// none it did not measure).
func (r *report) measuredNotes() {
	var pg []journalCell
	for _, j := range r.Journal {
		if j.Backend == "postgres" && j.Scenario == scGuarded && j.Calls > 0 {
			pg = append(pg, j)
		}
	}
	hasPG := len(pg) > 0 || r.findBackend("postgres", scGuarded, 64) != nil || r.findBackend("postgres", scGuarded, 1) != nil
	if !hasPG {
		return
	}
	n := "On PostgreSQL every transition is its own transaction (no group commit across calls in toolguard)."
	for _, j := range pg {
		n += fmt.Sprintf(" In-process, a guarded call at c%d measured %.3f commits and %.3f statements, on a pgx pool of %d connections (%d of %d acquisitions waited).",
			j.Conc, j.CommitsPerCall, j.StatementsPerCall, j.PoolMaxConns, j.PoolWaits, j.Statements)
	}
	n += " What the database's backends waited on is in the waits list of the backends table (pg_database/0/0 would be the lock NOTIFY takes at commit); see bench/results/diary.md."
	r.Notes = append(r.Notes, n)
}
