//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// Scenarios of the backends table that need two toolguard processes on
// one PostgreSQL database.
const (
	scCrossReplica = "cross-replica"
	scCrossDup     = "cross-dup"
)

var backendScenarioInfo = map[string]string{
	scGuarded:      "POST /v1/invoices, a new intent per call, through one toolguard",
	scReplay:       "POST /v1/invoices of committed intents, cycled, through one toolguard",
	scCrossReplica: "two toolguard processes on one database: a new intent forwarded by one replica, then the same intent replayed through the other (alternating which is which); req/s and latencies count each call",
	scCrossDup:     "two toolguard processes on one database: the same new intent sent to both at once (one forwards, the other waits for its outcome and replays it); a call is the pair, its latency the slower answer",
}

// loadCell is what one load measured on one toolguard: the backends
// table's cells and the scale cell share it.
type loadCell struct {
	Conc       int     `json:"concurrency"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	RPS        float64 `json:"rps"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	// CommitsPerCall is the journal commits per completed call (warm-up
	// included), from the toolguard processes' GET /metrics.
	CommitsPerCall *float64 `json:"commits_per_call,omitempty"`
	CommitMeanMS   *float64 `json:"commit_mean_ms,omitempty"`
	// CPU time per completed call (warm-up included) of the toolguard
	// processes and of the PostgreSQL server processes connected to the
	// bench database, in microseconds.
	ToolguardCPUUS float64  `json:"toolguard_cpu_us_per_call"`
	PostgresCPUUS  *float64 `json:"postgres_cpu_us_per_call,omitempty"`
	// ToolguardSwitches is the context switches of the toolguard
	// processes' threads per completed call (warm-up included): each is a
	// sleep and a wake-up, whose cost the report's wake-up probe gives.
	ToolguardSwitches float64 `json:"toolguard_switches_per_call"`
	// ToolguardFaults is the page faults of the toolguard processes per
	// completed call (warm-up included): on bbolt, mostly the kernel
	// mapping pages of the journal's file the call reads.
	ToolguardFaults float64 `json:"toolguard_faults_per_call"`
	// Postgres is the PostgreSQL server's other work per completed call
	// (warm-up included): WAL, block reads, auxiliary processes' CPU.
	Postgres *pgPerCall `json:"postgres_per_call,omitempty"`
}

// backendCell is one journal scenario at one concurrency on one backend
// (upstream latency 0).
type backendCell struct {
	Backend  string `json:"backend"`
	Scenario string `json:"scenario"`
	loadCell
	// EffectsPerIntent is the upstream effects per intent sent (cross-dup):
	// exactly 1 when no duplicate went through.
	EffectsPerIntent *float64 `json:"effects_per_intent,omitempty"`
	// Waits are the bench database's active server processes by what they
	// waited on (sampled every 5 ms; "CPU" when running): the mean number
	// of processes in each state, the five most frequent.
	Waits []string `json:"postgres_waits,omitempty"`
}

// runBackends measures guarded and replay on each backend, and the
// cross-replica scenarios on PostgreSQL, at every concurrency, each
// backend on fresh toolguard processes (and a fresh database).
func runBackends(ctx context.Context, o options, rep *report, up *upstreams, pg *pgServer, bin, tmp, rulesDir, configFile string) error {
	up.setLatency(0)
	for _, backend := range o.backends {
		dir := filepath.Join(tmp, "backends-"+backend)
		var envA, envB []string
		var dbName string
		if backend == "postgres" {
			dsn, err := pg.create(ctx, "backends")
			if err != nil {
				return err
			}
			dbName = pg.last()
			secret, err := writeSecret(dir)
			if err != nil {
				return err
			}
			envA = append(append([]string{}, o.toolguardEnv...), pgEnv(dsn, secret)...)
			envB = envA
		} else {
			envA = o.toolguardEnv
		}
		a, err := startToolguard(bin, filepath.Join(dir, "a"), rulesDir, configFile, envA)
		if err != nil {
			return err
		}
		defer a.stop()
		procs := []*proc{a}
		if backend == "postgres" {
			b, err := startToolguard(bin, filepath.Join(dir, "b"), rulesDir, configFile, envB)
			if err != nil {
				return err
			}
			defer b.stop()
			procs = append(procs, b)
			progress("backend postgres: replicas pid %d (%s) and %d (%s) on one database", a.pid(), a.proxyURL.Host, b.pid(), b.proxyURL.Host)
		} else {
			progress("backend bolt: toolguard pid %d (%s)", a.pid(), a.proxyURL.Host)
		}
		e := &env{up: up, toolguard: a.proxyURL, intents: newIntents()}
		if err := e.seedReplay(ctx, o.replaySet); err != nil {
			return err
		}
		scenarios := []string{scGuarded, scReplay}
		if len(procs) == 2 {
			scenarios = append(scenarios, scCrossReplica, scCrossDup)
		}
		for _, conc := range o.concs {
			for _, name := range scenarios {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var pgw *pgWatch
				var ws *waitSampler
				if dbName != "" {
					pgw = pg.watch(ctx, dbName)
					ws = pg.sampleWaits(ctx, dbName, 5*time.Millisecond)
				}
				c, err := runBackendCell(ctx, o, e, backend, name, conc, procs, pgw)
				if ws != nil {
					c.Waits = ws.finish()
					progress("  waits (mean active backends): %v", c.Waits)
				}
				if err != nil {
					return err
				}
				rep.Backends = append(rep.Backends, c)
			}
		}
		for _, p := range procs {
			p.stop()
		}
	}
	return nil
}

// runBackendCell runs scenario name at conc through procs and measures it,
// with the PostgreSQL server's share when pgw is set.
func runBackendCell(ctx context.Context, o options, e *env, backend, name string, conc int, procs []*proc, pgw *pgWatch) (backendCell, error) {
	runtime.GC()
	var before []commitStats
	var tgPIDs []int
	for _, p := range procs {
		tgPIDs = append(tgPIDs, p.pid())
	}
	tgCPU0 := cpuTimes(tgPIDs)
	var pg0 pgCounters
	if pgw != nil {
		pg0 = pgw.read(ctx)
	}
	sw0, pf0 := switchesOf(tgPIDs), faultsOf(tgPIDs)
	for _, p := range procs {
		s, _ := scrapeCommits(p.adminURL)
		before = append(before, s)
	}
	effects0 := e.up.effects.Load()
	var intents atomic.Int64
	var l load
	switch name {
	case scCrossReplica:
		l = crossReplicaLoad(e, conc, procs[0], procs[1])
	case scCrossDup:
		l = crossDupLoad(e, conc, procs[0], procs[1], &intents)
	default:
		l = e.load(name, conc)
	}
	res := l.run(ctx, o.warmup, o.duration)
	tgCPU := cpuTimes(tgPIDs) - tgCPU0
	sw, pf := switchesOf(tgPIDs)-sw0, faultsOf(tgPIDs)-pf0
	c := backendCell{Backend: backend, Scenario: name, loadCell: loadCell{Conc: conc, Requests: res.measured, Errors: res.errors,
		FirstError: res.firstErr, RPS: res.rps(), P50MS: ms(res.percentile(0.5)), P99MS: ms(res.percentile(0.99))}}
	c.ToolguardCPUUS = perCall(float64(tgCPU.Microseconds()), res.total)
	c.ToolguardSwitches = perCall(float64(sw), res.total)
	c.ToolguardFaults = perCall(float64(pf), res.total)
	if pgw != nil {
		pg1 := pgw.read(ctx)
		c.PostgresCPUUS = ptr(perCall(float64(pg0.backendCPU(pg1).Microseconds()), res.total))
		c.Postgres = pg0.perCall(pg1, res.total)
	}
	var d commitStats
	scraped := true
	for i, p := range procs {
		after, ok := scrapeCommits(p.adminURL)
		scraped = scraped && ok
		s := after.sub(before[i])
		d.Commits, d.Seconds = d.Commits+s.Commits, d.Seconds+s.Seconds
	}
	if scraped {
		c.CommitsPerCall = ptr(perCall(d.Commits, res.total))
		if d.Commits > 0 {
			c.CommitMeanMS = ptr(d.Seconds * 1000 / d.Commits)
		}
	}
	if name == scCrossDup {
		if n := intents.Load(); n > 0 {
			c.EffectsPerIntent = ptr(float64(e.up.effects.Load()-effects0) / float64(n))
		}
	}
	for _, p := range procs {
		if err := p.alive(); err != nil {
			return c, err
		}
	}
	extra := ""
	if c.CommitsPerCall != nil {
		extra = fmt.Sprintf("  %.3f commits/call", *c.CommitsPerCall)
	}
	extra += fmt.Sprintf("  CPU/call toolguard %.0f µs (%.1f switches, %.1f page faults)", c.ToolguardCPUUS, c.ToolguardSwitches, c.ToolguardFaults)
	if c.PostgresCPUUS != nil {
		extra += fmt.Sprintf(", postgres %.0f µs", *c.PostgresCPUUS)
	}
	if p := c.Postgres; p != nil {
		extra += fmt.Sprintf(" + aux %.0f µs; WAL %.0f B (%.2f full pages), %.1f blocks read", p.AuxCPUUS, p.WALBytes, p.WALFPI, p.BlocksRead)
	}
	if c.EffectsPerIntent != nil {
		extra += fmt.Sprintf("  %.4f effects/intent", *c.EffectsPerIntent)
	}
	progress("%-8s %-13s c%-3d %8.0f req/s  p50 %7.3f ms  p99 %7.3f ms  errors %d%s", backend, name, conc, c.RPS, c.P50MS, c.P99MS, c.Errors, extra)
	if c.FirstError != "" {
		progress("  first error: %s", c.FirstError)
	}
	return c, nil
}

// crossReplicaLoad: worker w's even calls post a new intent through one
// replica (forwarded), its odd calls the same intent through the other
// (replayed); which replica forwards alternates.
func crossReplicaLoad(e *env, conc int, a, b *proc) load {
	dials := new(atomic.Int64)
	clients := [2]*http.Client{newClient(conc, a.proxyURL, nil, dials), newClient(conc, b.proxyURL, nil, dials)}
	last := make([][]byte, conc) // worker w's intent, touched by w only
	u := e.up.plain.URL + "/v1/invoices"
	forwarded, replayed := expect(201, "forwarded"), expect(201, "replayed")
	l := load{conc: conc, client: clients[0], dials: dials}
	l.do = func(ctx context.Context, w, i int) error {
		r := (w + i/2) % 2
		if i%2 == 0 {
			last[w] = e.intents.body(0)
			return send(clients[r], newPost(u, last[w]).WithContext(ctx), forwarded)
		}
		return send(clients[1-r], newPost(u, last[w]).WithContext(ctx), replayed)
	}
	return withClose(l, clients[1])
}

// crossDupLoad: each call sends one new intent to both replicas at once;
// one answer must be forwarded and the other replayed.
func crossDupLoad(e *env, conc int, a, b *proc, intents *atomic.Int64) load {
	dials := new(atomic.Int64)
	clients := [2]*http.Client{newClient(conc, a.proxyURL, nil, dials), newClient(conc, b.proxyURL, nil, dials)}
	u := e.up.plain.URL + "/v1/invoices"
	l := load{conc: conc, client: clients[0], dials: dials}
	l.do = func(ctx context.Context, w, i int) error {
		body := e.intents.body(0)
		intents.Add(1)
		outcomes := make(chan string, 2)
		errs := make(chan error, 2)
		for _, c := range clients {
			go func() {
				var outcome string
				errs <- send(c, newPost(u, body).WithContext(ctx), func(resp *http.Response) error {
					outcome = resp.Header.Get("Toolguard-Outcome")
					if resp.StatusCode != 201 {
						return fmt.Errorf("%w: status %d (Toolguard-Outcome %q)", errUnexpected, resp.StatusCode, outcome)
					}
					return nil
				})
				outcomes <- outcome
			}()
		}
		err := errors.Join(<-errs, <-errs)
		o1, o2 := <-outcomes, <-outcomes
		if err == nil && !(o1 == "forwarded" && o2 == "replayed" || o1 == "replayed" && o2 == "forwarded") {
			err = fmt.Errorf("%w: outcomes %q and %q, want one forwarded and one replayed", errUnexpected, o1, o2)
		}
		return err
	}
	return withClose(l, clients[1])
}

// withClose makes l close other's idle connections too when it ends: the
// load closes its own client's only.
func withClose(l load, other *http.Client) load {
	l.done = other.CloseIdleConnections
	return l
}

func (r *report) writeBackends(b io.Writer) {
	if len(r.Backends) == 0 {
		return
	}
	fmt.Fprintf(b, "## Journal backends (upstream latency 0, fresh toolguard processes per backend)\n\n")
	if len(r.PGServer) > 0 {
		fmt.Fprintf(b, "PostgreSQL server: `%v`", r.PGServer)
		if len(r.PGSettings) > 0 {
			fmt.Fprintf(b, "; set on the bench database: `%v`", r.PGSettings)
		}
		fmt.Fprintf(b, "\n\n")
	}
	fmt.Fprintf(b, "| backend | scenario | conc | req/s | p50 ms | p99 ms | errors | commits/call | commit mean ms | effects/intent | CPU µs/call toolguard | switches/call toolguard | CPU µs/call PostgreSQL | %s |\n", pgColumns)
	fmt.Fprintf(b, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |%s\n", pgColumnsAlign)
	opt := func(f *float64, format string) string {
		if f == nil {
			return "–"
		}
		return fmt.Sprintf(format, *f)
	}
	for _, c := range r.Backends {
		errs := fmt.Sprint(c.Errors)
		if c.Errors > 0 {
			errs = fmt.Sprintf("**%d**", c.Errors)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.0f | %.3f | %.3f | %s | %s | %s | %s | %.0f | %.1f | %s | %s |\n", c.Backend, c.Scenario, c.Conc, c.RPS, c.P50MS, c.P99MS,
			errs, opt(c.CommitsPerCall, "%.3f"), opt(c.CommitMeanMS, "%.3f"), opt(c.EffectsPerIntent, "%.4f"), c.ToolguardCPUUS, c.ToolguardSwitches, opt(c.PostgresCPUUS, "%.0f"), c.Postgres.cells())
	}
	fmt.Fprintf(b, "\ncommits/call: journal commits per completed call from GET /metrics (both replicas summed): bbolt group commits (shared by concurrent writes), PostgreSQL transactions (one per transition, each its own WAL flush unless the server groups them). The round trips are in the in-process table below. CPU µs/call: user+system time of the toolguard process(es) and of the PostgreSQL backends connected to the bench database per completed call, from /proc (10 ms ticks); the WAL writer's, checkpointer's and background writer's are the aux column. %s switches/call: context switches of the toolguard process(es)' threads per completed call, from /proc/PID/task/*/status; each is a sleep and a wake-up, priced by the wake-up probe at the top.\n\n", pgColumnsNote)
	fmt.Fprintf(b, "PostgreSQL waits: the bench database's active backends sampled every 5 ms during the cell (warm-up included), mean number per state; CPU = running or runnable.\n\n")
	for _, c := range r.Backends {
		if len(c.Waits) > 0 {
			fmt.Fprintf(b, "- %s %s c%d: %s\n", c.Backend, c.Scenario, c.Conc, strings.Join(c.Waits, ", "))
		}
	}
	fmt.Fprintln(b)
	for _, c := range r.Backends {
		if c.FirstError != "" {
			fmt.Fprintf(b, "- %s %s c%d: first error: `%s`\n", c.Backend, c.Scenario, c.Conc, c.FirstError)
		}
	}
	fmt.Fprintf(b, "\n")
	for _, name := range []string{scGuarded, scReplay, scCrossReplica, scCrossDup} {
		fmt.Fprintf(b, "- **%s**: %s\n", name, backendScenarioInfo[name])
	}
	fmt.Fprintln(b)
}
