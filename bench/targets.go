//go:build linux

package main

import "fmt"

// The targets.
const (
	memLimitMiB = 64
)

// evaluate checks the targets against the cells of every upstream
// latency that was run. A target whose cells were not run is left out; a
// toolguard cell with errors fails its target whatever its numbers.
func (r *report) evaluate() {
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
		if c := cells(64, scPassthrough, scBare); c != nil {
			r.ratioTarget("passthrough req/s ≥ bare goproxy", at(64), c[0], c[1], 1)
		}
		if c := cells(1, scPassthrough, scDirect); c != nil {
			r.latencyTarget("passthrough p50 − direct p50 ≤ 0.3 ms", at(1), c[0], c[0].P50MS-c[1].P50MS, 0.3)
		}
		for _, conc := range []int{32, 64} {
			if c := cells(conc, scGuarded, scPassthrough); c != nil {
				r.ratioTarget("guarded req/s ≥ 0.6 × passthrough", at(conc), c[0], c[1], 0.6)
			}
		}
		if c := cells(1, scGuarded, scPassthrough); c != nil {
			r.latencyTarget("guarded p50 − passthrough p50 ≤ 1.5 ms", at(1), c[0], c[0].P50MS-c[1].P50MS, 1.5)
		}
		for _, conc := range r.Concurrencies {
			if c := cells(conc, scReplay, scPassthrough); c != nil {
				r.ratioTarget("replay req/s ≥ passthrough", at(conc), c[0], c[1], 1)
			}
		}
		if c := cells(1, scReplay); c != nil {
			r.latencyTarget("replay p50 ≤ 0.5 ms", at(1), c[0], c[0].P50MS, 0.5)
		}
		if c := cells(64, scHTTPS, scPassthrough); c != nil {
			r.ratioTarget("https req/s ≥ 0.8 × plain passthrough", at(64), c[0], c[1], 0.8)
		}
	}
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

// ratioTarget: c.RPS ≥ limit × ref.RPS.
func (r *report) ratioTarget(name, at string, c, ref *cell, limit float64) {
	ratio := 0.0
	if ref.RPS > 0 {
		ratio = c.RPS / ref.RPS
	}
	t := target{
		Target:   name,
		At:       at,
		Measured: fmt.Sprintf("%.0f vs %.0f req/s = ×%.2f", c.RPS, ref.RPS, ratio),
		Limit:    fmt.Sprintf("×%.2f", limit),
		Met:      ratio >= limit && c.Errors == 0,
		Margin:   fmt.Sprintf("%+.0f%%", (ratio/limit-1)*100),
	}
	r.Targets = append(r.Targets, withErrors(t, c.Errors))
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
