//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// report is everything one run measured; it is written as JSON (for
// tracking) and as markdown.
type report struct {
	Started       time.Time         `json:"started"`
	Elapsed       string            `json:"elapsed"`
	Command       string            `json:"command"`
	Commit        string            `json:"commit,omitempty"`
	Dirty         bool              `json:"dirty,omitempty"`
	Go            string            `json:"go"`
	CPUs          int               `json:"cpus"`
	GOMAXPROCS    int               `json:"gomaxprocs"`
	Duration      string            `json:"duration_per_cell"`
	Warmup        string            `json:"warmup_per_cell"`
	Rounds        int               `json:"rounds,omitempty"`
	Concurrencies []int             `json:"concurrencies"`
	LatenciesMS   []float64         `json:"upstream_latencies_ms"`
	Scenarios     map[string]string `json:"scenarios"`
	Disk          []diskProbe       `json:"disk,omitempty"`
	Wakeup        *wakeProbe        `json:"wakeup,omitempty"`
	Cells         []cell            `json:"cells"`
	Memory        []memCell         `json:"memory,omitempty"`
	Journal       []journalCell     `json:"journal,omitempty"`
	Backends      []backendCell     `json:"backends,omitempty"`
	Scale         []scaleCell       `json:"scale,omitempty"`
	ScaleSeconds  float64           `json:"scale_seconds,omitempty"` // measured time of each scale cell
	ScaleFill     []scaleFill       `json:"scale_fill,omitempty"`
	// GridBackend is the journal of the grid's toolguard (bolt or postgres).
	GridBackend string   `json:"grid_backend,omitempty"`
	PGServer    []string `json:"postgres_server,omitempty"`
	PGSettings  []string `json:"postgres_database_settings,omitempty"`
	Targets     []target `json:"targets,omitempty"`
	Profiles    []string `json:"profiles,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// cell is one scenario at one concurrency and upstream latency.
type cell struct {
	Scenario   string  `json:"scenario"`
	Conc       int     `json:"concurrency"`
	LatencyMS  float64 `json:"upstream_latency_ms"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	// Conns is the number of connections the clients opened, warm-up
	// included: about the concurrency when keep-alive works.
	Conns int     `json:"client_conns"`
	RPS   float64 `json:"rps"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// RoundsRPS is every round's req/s, in the order run, when the cell ran
	// in more than one round (-rounds): the row is the median round's,
	// and Errors counts the errors of all rounds.
	RoundsRPS []float64 `json:"rounds_rps,omitempty"`
	// Ratios of RPS and p50 differences against the same cell's direct
	// and passthrough; absent when those were not run.
	VsDirect             *float64 `json:"rps_ratio_vs_direct,omitempty"`
	VsPassthrough        *float64 `json:"rps_ratio_vs_passthrough,omitempty"`
	P50OverDirectMS      *float64 `json:"p50_over_direct_ms,omitempty"`
	P50OverPassthroughMS *float64 `json:"p50_over_passthrough_ms,omitempty"`
	// The peak and final resident memory of the proxy that served the cell
	// (none for direct).
	PeakRSSMiB float64 `json:"proxy_peak_rss_mib,omitempty"`
	// Journal commits of toolguard during the cell, from its GET /metrics
	// (absent when the binary has none): per completed call (warm-up
	// included), writes carried per commit and mean commit time.
	CommitsPerCall  *float64 `json:"commits_per_call,omitempty"`
	WritesPerCommit *float64 `json:"writes_per_commit,omitempty"`
	CommitMeanMS    *float64 `json:"commit_mean_ms,omitempty"`
	AnonMiB         float64  `json:"proxy_rss_anon_mib,omitempty"`
	FileMiB         float64  `json:"proxy_rss_file_mib,omitempty"`
	// CPU time per completed call (warm-up included), in microseconds:
	// of the proxy process (none for direct), and of the whole machine
	// (its busy time from /proc/stat: load clients, upstream, proxy and
	// everything else), which splits a ratio between the proxy's cost
	// and its neighbours'.
	ProxyCPUUS   *float64 `json:"proxy_cpu_us_per_call,omitempty"`
	MachineCPUUS float64  `json:"machine_cpu_us_per_call,omitempty"`
}

// memCell is one memory measurement on a freshly started proxy.
type memCell struct {
	Proxy     string  `json:"proxy"`
	Load      string  `json:"load"`
	Conc      int     `json:"concurrency"`
	BodyBytes int     `json:"body_bytes"`
	RPS       float64 `json:"rps"`
	Errors    int     `json:"errors"`
	PeakMiB   float64 `json:"peak_rss_mib"`
	RSSMiB    float64 `json:"rss_mib"`
	AnonMiB   float64 `json:"rss_anon_mib"`
	FileMiB   float64 `json:"rss_file_mib"`
}

// journalCell is one load on the in-process toolguard with the journal
// commits it cost.
type journalCell struct {
	Backend        string  `json:"backend"`
	Scenario       string  `json:"scenario"`
	Conc           int     `json:"concurrency"`
	Calls          int     `json:"calls"`
	Commits        uint64  `json:"commits"`
	CommitsPerCall float64 `json:"commits_per_call"`
	// WritesPerCommit is the mean group-commit batch; commit times include
	// bbolt's two fdatasyncs.
	WritesPerCommit float64 `json:"writes_per_commit"`
	CommitMeanMS    float64 `json:"commit_mean_ms"`
	CommitP50MS     float64 `json:"commit_p50_ms"`
	CommitP99MS     float64 `json:"commit_p99_ms"`
	Errors          int     `json:"errors"`
	RPS             float64 `json:"rps"`
	P50MS           float64 `json:"p50_ms"`
	P99MS           float64 `json:"p99_ms"`
	// PostgreSQL only: statements sent (pool acquisitions, one round trip
	// each once pgx cached the prepared statement), and the acquisitions
	// that waited for a free connection of the pool's PoolMaxConns.
	Statements        int64   `json:"statements,omitempty"`
	StatementsPerCall float64 `json:"statements_per_call,omitempty"`
	PoolWaits         int64   `json:"pool_waits,omitempty"`
	PoolWaitMeanMS    float64 `json:"pool_wait_mean_ms,omitempty"`
	PoolMaxConns      int32   `json:"pool_max_conns,omitempty"`
}

// target is one of the targets, evaluated.
type target struct {
	Target   string `json:"target"`
	At       string `json:"at"`
	Measured string `json:"measured"`
	Limit    string `json:"limit"`
	Met      bool   `json:"met"`
	Margin   string `json:"margin"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newCell(name string, conc int, lat time.Duration, r loadResult) cell {
	return cell{Scenario: name, Conc: conc, LatencyMS: ms(lat), Requests: r.measured, Errors: r.errors,
		FirstError: r.firstErr, Conns: r.dials, RPS: r.rps(), P50MS: ms(r.percentile(0.50)), P99MS: ms(r.percentile(0.99))}
}

// find returns the cell of scenario at conc and latency, or nil.
func (r *report) find(scenario string, conc int, latMS float64) *cell {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Scenario == scenario && c.Conc == conc && c.LatencyMS == latMS {
			return c
		}
	}
	return nil
}

// relate fills in the ratios against direct and passthrough.
func (r *report) relate() {
	for i := range r.Cells {
		c := &r.Cells[i]
		if d := r.find(scDirect, c.Conc, c.LatencyMS); d != nil && c.Scenario != scDirect && d.RPS > 0 {
			c.VsDirect = ptr(c.RPS / d.RPS)
			c.P50OverDirectMS = ptr(c.P50MS - d.P50MS)
		}
		if p := r.find(scPassthrough, c.Conc, c.LatencyMS); p != nil && c.Scenario != scPassthrough && p.RPS > 0 {
			c.VsPassthrough = ptr(c.RPS / p.RPS)
			c.P50OverPassthroughMS = ptr(c.P50MS - p.P50MS)
		}
	}
}

func ptr(f float64) *float64 { return &f }

// fmtRPS is a cell's req/s, followed by every round's when it ran in more
// than one.
func fmtRPS(c *cell) string {
	s := fmt.Sprintf("%.0f", c.RPS)
	if len(c.RoundsRPS) > 1 {
		rs := make([]string, len(c.RoundsRPS))
		for i, v := range c.RoundsRPS {
			rs[i] = fmt.Sprintf("%.0f", v)
		}
		s += " (" + strings.Join(rs, ", ") + ")"
	}
	return s
}

// write puts latest.json and latest.md into dir.
func (r *report) write(dir string, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "latest.md"), []byte(md), 0o644)
}

// markdown renders the report.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# toolguard benchmark\n\n")
	commit := r.Commit
	if r.Dirty {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "- started %s, took %s; commit %s\n", r.Started.Format(time.RFC3339), r.Elapsed, commit)
	fmt.Fprintf(&b, "- `%s`\n", r.Command)
	fmt.Fprintf(&b, "- %s, %d CPUs (GOMAXPROCS %d), shared by upstream, proxy and load clients\n", r.Go, r.CPUs, r.GOMAXPROCS)
	fmt.Fprintf(&b, "- %s measured per cell after %s of warm-up; closed-loop keep-alive clients; cells interleaved\n", r.Duration, r.Warmup)
	if r.Rounds > 1 {
		fmt.Fprintf(&b, "- every grid cell ran %d times, in interleaved rounds (each round runs every scenario of a concurrency and latency once); a row is the round with the median req/s, its req/s column lists every round's, and its errors are those of all rounds\n", r.Rounds)
	}
	for _, d := range r.Disk {
		fmt.Fprintf(&b, "- fdatasync of a 4 KiB write on the journal's file system, %s: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d syncs), %.0f µs of CPU each, so a guarded call at c1, two log appends of one fdatasync each, takes at least %.3f ms; a write shaped like one bbolt commit (%d pages, fdatasync, meta page, fdatasync), what a checkpoint costs: p50 %.3f ms\n",
			d.When, d.P50MS, d.P99MS, d.MaxMS, d.Syncs, d.CPUUS, 2*d.P50MS, commitPages, d.CommitP50MS)
	}
	if w := r.Wakeup; w != nil {
		fmt.Fprintf(&b, "- a wake-up of a process blocked in a read (one byte through a pipe to cat and back, %d round trips): p50 %.1f µs per round trip, %.1f µs of CPU for the woken process per wake-up; every context switch in the backends table costs at least that\n",
			w.RoundTrips, w.P50US, w.CPUUS)
	}
	fmt.Fprintln(&b)
	r.writeTargets(&b)
	for _, lat := range r.LatenciesMS {
		if slices.ContainsFunc(r.Cells, func(c cell) bool { return c.LatencyMS == lat }) {
			r.writeCells(&b, lat)
		}
	}
	r.writeMemory(&b)
	r.writeBackends(&b)
	r.writeScale(&b)
	r.writeJournal(&b)
	fmt.Fprintf(&b, "## Scenarios\n\n")
	for _, name := range allScenarios {
		if d, ok := r.Scenarios[name]; ok {
			fmt.Fprintf(&b, "- **%s**: %s\n", name, d)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(&b, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func (r *report) writeTargets(b io.Writer) {
	if len(r.Targets) == 0 {
		return
	}
	fmt.Fprintf(b, "## Targets\n\n| target | at | measured | limit | result | margin |\n| --- | --- | ---: | ---: | --- | ---: |\n")
	defer fmt.Fprintf(b, "\nMargin: headroom (+) or shortfall (−) against the limit.\n\n")
	for _, t := range r.Targets {
		res := "**missed**"
		if t.Met {
			res = "met"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", t.Target, t.At, t.Measured, t.Limit, res, t.Margin)
	}
}

func (r *report) writeCells(b io.Writer, lat float64) {
	fmt.Fprintf(b, "## Upstream latency %s ms\n\n", fmtNum(lat))
	fmt.Fprintf(b, "| scenario | conc | req/s | p50 ms | p99 ms | × direct | × passthrough | p50 − direct ms | p50 − passthrough ms | errors | conns | proxy peak RSS MiB | commits/call | CPU µs/call proxy | CPU µs/call machine |\n")
	fmt.Fprintf(b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, name := range allScenarios {
		for _, conc := range r.Concurrencies {
			c := r.find(name, conc, lat)
			if c == nil {
				continue
			}
			errs := fmt.Sprint(c.Errors)
			if c.Errors > 0 {
				errs = fmt.Sprintf("**%d**", c.Errors)
			}
			fmt.Fprintf(b, "| %s | %d | %s | %.3f | %.3f | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n",
				c.Scenario, c.Conc, fmtRPS(c), c.P50MS, c.P99MS, fmtRatio(c.VsDirect), fmtRatio(c.VsPassthrough),
				fmtDelta(c.P50OverDirectMS), fmtDelta(c.P50OverPassthroughMS), errs, c.Conns, fmtMiB(c.PeakRSSMiB), fmtCommits(c),
				fmtUS(c.ProxyCPUUS), fmtUS(&c.MachineCPUUS))
		}
	}
	fmt.Fprintf(b, "\ncommits/call: toolguard's journal commits per completed call, from its GET /metrics, with writes per group commit (w/c) and mean commit time (the log's fdatasync included). conns: connections the clients opened. CPU µs/call: user+system time per completed call (warm-up included), of the proxy process, and of the whole machine (busy time from /proc/stat: the load clients, the upstream and the proxy share its CPUs), in the median round; where the machine is busy, a scenario's req/s ratio is about the inverse ratio of its machine CPU per call, so the two columns split a ratio between the proxy's cost and its neighbours'.\n\n")
	for _, c := range r.Cells {
		if c.LatencyMS == lat && c.FirstError != "" {
			fmt.Fprintf(b, "- %s c%d: first error: `%s`\n", c.Scenario, c.Conc, c.FirstError)
		}
	}
	fmt.Fprintln(b)
}

// fmtUS is a CPU time per call in µs, or – when not measured.
func fmtUS(us *float64) string {
	if us == nil || *us == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", *us)
}

func (r *report) writeMemory(b io.Writer) {
	if len(r.Memory) == 0 {
		return
	}
	fmt.Fprintf(b, "## Memory (fresh process per proxy, upstream latency 0)\n\n")
	fmt.Fprintf(b, "| proxy | load | conc | body | req/s | errors | peak RSS (VmHWM) MiB | RSS after MiB | anon MiB | file MiB |\n")
	fmt.Fprintf(b, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, m := range r.Memory {
		fmt.Fprintf(b, "| %s | %s | %d | %d KiB | %.0f | %d | %.1f | %.1f | %.1f | %.1f |\n",
			m.Proxy, m.Load, m.Conc, m.BodyBytes>>10, m.RPS, m.Errors, m.PeakMiB, m.RSSMiB, m.AnonMiB, m.FileMiB)
	}
	fmt.Fprintln(b)
}

func (r *report) writeJournal(b io.Writer) {
	if len(r.Journal) == 0 {
		return
	}
	fmt.Fprintf(b, "## Journal commits and round trips per call (in-process toolguard, upstream latency 0)\n\n")
	fmt.Fprintf(b, "| backend | scenario | conc | calls | commits | commits/call | writes/commit | commit mean ms | commit p50 ms | commit p99 ms | statements/call | pool waits (mean ms) | req/s | p50 ms | p99 ms | errors |\n")
	fmt.Fprintf(b, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, j := range r.Journal {
		stmts, waits := "–", "–"
		if j.Backend == "postgres" {
			stmts = fmt.Sprintf("%.3f", j.StatementsPerCall)
			waits = fmt.Sprintf("%d of %d (%.3f), pool %d", j.PoolWaits, j.Statements, j.PoolWaitMeanMS, j.PoolMaxConns)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %.3f | %.1f | %.3f | %.3f | %.3f | %s | %s | %.0f | %.3f | %.3f | %d |\n",
			j.Backend, j.Scenario, j.Conc, j.Calls, j.Commits, j.CommitsPerCall, j.WritesPerCommit, j.CommitMeanMS, j.CommitP50MS, j.CommitP99MS,
			stmts, waits, j.RPS, j.P50MS, j.P99MS, j.Errors)
	}
	fmt.Fprintf(b, "\ncommits: the journal's own counter (bbolt: group commits; PostgreSQL: committed transition statements). statements/call (PostgreSQL): acquisitions of the journal's pgx pool per call, one per statement, each one round trip once pgx has cached its prepared statement (reads included); pool waits: acquisitions that found every connection busy.\n\n")
	if len(r.Profiles) > 0 {
		fmt.Fprintf(b, "Profiles of the in-process proxy (written as *.prof and *.trace, which .gitignore keeps out of commits):\n\n")
	}
	for _, p := range r.Profiles {
		switch {
		case strings.HasPrefix(filepath.Base(p), "cpu-"):
			fmt.Fprintf(b, "CPU profile: `go tool pprof -tagfocus role=proxy -top %s`\n\n", p)
		case strings.HasPrefix(filepath.Base(p), "trace-"):
			fmt.Fprintf(b, "Execution trace (guarded, conc 1): `go tool trace -pprof=syscall %s > syscall.pprof && go tool pprof -top syscall.pprof` (also sched, sync, net; or open it with `go tool trace %s`)\n\n", p, p)
		default:
			fmt.Fprintf(b, "Heap profile (guarded, 64 KiB bodies): `go tool pprof -sample_index alloc_space -focus 'toolguard|goproxy' -top %s`\n\n", p)
		}
	}
}

// fmtCommits shows commits per call, with the mean batch and commit time
// when there were commits.
func fmtCommits(c *cell) string {
	if c.CommitsPerCall == nil {
		return "–"
	}
	if c.CommitMeanMS == nil {
		return fmt.Sprintf("%.3f", *c.CommitsPerCall)
	}
	return fmt.Sprintf("%.3f (%.1f w/c, %.2f ms)", *c.CommitsPerCall, *c.WritesPerCommit, *c.CommitMeanMS)
}

func fmtRatio(f *float64) string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *f)
}

func fmtDelta(f *float64) string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%+.3f", *f)
}

func fmtMiB(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", f)
}

func fmtNum(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
