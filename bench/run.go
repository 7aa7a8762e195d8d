//go:build linux

package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// run measures everything o asks for and writes the report.
func run(ctx context.Context, o options) error {
	started := time.Now()
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "toolguard-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	up := startUpstreams()
	defer up.close()
	rulesDir, configFile, err := up.writeSetup(tmp)
	if err != nil {
		return err
	}
	bin := o.binary
	if bin == "" {
		progress("building ./cmd/toolguard")
		if bin, err = buildToolguard(ctx, root, tmp); err != nil {
			return err
		}
	}
	rep := newReport(ctx, o, root, started)
	probe := func(when string) {
		if d, err := probeDisk(tmp, when, time.Second); err == nil {
			rep.Disk = append(rep.Disk, d)
			progress("fdatasync %s: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d syncs), %.0f µs of CPU each", when, d.P50MS, d.P99MS, d.MaxMS, d.Syncs, d.CPUUS)
		} else {
			progress("disk probe: %v", err)
		}
	}
	probe("before the grid")
	if w, err := probeWakeup(time.Second); err == nil {
		rep.Wakeup = &w
		progress("wake-up across processes: p50 %.1f µs per round trip, %.1f µs of CPU per wake-up (%d round trips)", w.P50US, w.CPUUS, w.RoundTrips)
	} else {
		progress("wake-up probe: %v", err)
	}

	var pg *pgServer
	if slices.Contains(o.backends, "postgres") {
		pg = newPGServer(o.dsn, o.pgSettings)
		defer pg.drop()
		if rep.PGServer, err = pg.serverSettings(ctx); err != nil {
			return fmt.Errorf("read PostgreSQL settings: %w", err)
		}
		rep.PGSettings = o.pgSettings
		progress("PostgreSQL %v", rep.PGServer)
	}
	gridEnv := o.toolguardEnv
	rep.GridBackend = "bolt"
	if len(o.backends) == 1 && o.backends[0] == "postgres" && usesToolguard(o.scenarios) {
		dsn, err := pg.create(ctx, "grid")
		if err != nil {
			return err
		}
		secret, err := writeSecret(filepath.Join(tmp, "grid-secret"))
		if err != nil {
			return err
		}
		gridEnv = append(append([]string{}, gridEnv...), pgEnv(dsn, secret)...)
		rep.GridBackend = "postgres"
		rep.Notes = append(rep.Notes, "The grid's toolguard journals on PostgreSQL (-backend postgres).")
	}
	if o.grid {
		if err := runGrid(ctx, o, rep, up, bin, tmp, rulesDir, configFile, gridEnv); err != nil {
			return err
		}
	}
	if pg != nil && ctx.Err() == nil {
		if err := runBackends(ctx, o, rep, up, pg, bin, tmp, rulesDir, configFile); err != nil {
			return err
		}
	}
	if o.scale > 0 && ctx.Err() == nil {
		if err := runScale(ctx, o, rep, up, pg, bin, tmp, rulesDir, configFile); err != nil {
			return err
		}
	}
	if o.memory && ctx.Err() == nil {
		if err := runMemory(ctx, o, rep, up, bin, tmp, rulesDir, configFile); err != nil {
			return err
		}
	}
	if o.inproc && ctx.Err() == nil {
		for _, backend := range o.backends {
			dsn := ""
			if backend == "postgres" {
				if dsn, err = pg.create(ctx, "inproc"); err != nil {
					return err
				}
			}
			if err := runInproc(ctx, o, rep, up, tmp, rulesDir, filepath.Join(tmp, "upstream-ca.pem"), backend, dsn); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	probe("after the run")
	rep.relate()
	rep.evaluate()
	rep.measuredNotes()
	rep.Elapsed = time.Since(started).Round(time.Second).String()
	md := rep.markdown()
	fmt.Print(md)
	if o.out != "" {
		dir := o.out
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		if err := rep.write(dir, md); err != nil {
			return err
		}
		progress("wrote %s and %s", filepath.Join(dir, "latest.md"), filepath.Join(dir, "latest.json"))
	}
	return nil
}

func newReport(ctx context.Context, o options, root string, started time.Time) *report {
	r := &report{
		Started:       started.UTC(),
		Command:       "go run ./bench " + strings.Join(os.Args[1:], " "),
		Go:            runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:          runtime.NumCPU(),
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
		Duration:      o.duration.String(),
		Warmup:        o.warmup.String(),
		Rounds:        o.rounds,
		Concurrencies: o.concs,
		Scenarios:     map[string]string{},
		Notes: []string{
			"One machine runs the upstream, the proxies and the load clients (and whatever else it is doing): compare ratios within a run, not absolute numbers across runs.",
			"Guarded calls wait for the journal's durable commits: see the commit times and writes per commit, and the fdatasync probe.",
			"Peak RSS in the grid is VmHWM reset before each cell; the Go runtime keeps heap it grew in earlier cells, so the fresh-process memory table is the one to judge.",
		},
	}
	for _, l := range o.latencies {
		r.LatenciesMS = append(r.LatenciesMS, ms(l))
	}
	for _, s := range o.scenarios {
		r.Scenarios[s] = scenarioInfo[s]
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		r.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		r.Dirty = len(strings.TrimSpace(string(out))) > 0
	}
	return r
}

// runGrid runs every scenario at every latency and concurrency against
// one toolguard and one bare goproxy.
func runGrid(ctx context.Context, o options, rep *report, up *upstreams, bin, tmp, rulesDir, configFile string, tgEnv []string) error {
	e := &env{up: up, intents: newIntents(), mcpCalls: &mcpCalls{nonce: strconv.FormatInt(time.Now().UnixNano(), 36)}}
	procs := map[string]*proc{}
	if usesToolguard(o.scenarios) {
		tg, err := startToolguard(bin, filepath.Join(tmp, "grid"), rulesDir, configFile, tgEnv)
		if err != nil {
			return err
		}
		defer tg.stop()
		if e.roots, err = loadRoots(tg.caFile); err != nil {
			return err
		}
		e.toolguard = tg.proxyURL
		for _, s := range []string{scPassthrough, scGuarded, scReplay, scHTTPS, scMCPGuarded, scMCPReplay} {
			procs[s] = tg
		}
		progress("toolguard pid %d listening on %s", tg.pid(), tg.proxyURL.Host)
	}
	if slices.Contains(o.scenarios, scBare) {
		bare, err := startBare()
		if err != nil {
			return err
		}
		defer bare.stop()
		e.bare = bare.proxyURL
		procs[scBare] = bare
		progress("bare goproxy pid %d listening on %s", bare.pid(), bare.proxyURL.Host)
	}
	if slices.Contains(o.scenarios, scReplay) {
		progress("seeding %d intents for replay", o.replaySet)
		if err := e.seedReplay(ctx, o.replaySet); err != nil {
			return err
		}
	}
	if slices.Contains(o.scenarios, scMCPReplay) {
		progress("seeding %d MCP intents for replay", o.replaySet)
		if err := e.seedMCPReplay(ctx, o.replaySet); err != nil {
			return err
		}
	}
	for _, lat := range o.latencies {
		up.setLatency(lat)
		for _, conc := range o.concs {
			runs := map[string][]cell{}
			for range o.rounds {
				for _, name := range o.scenarios {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					c, err := runCell(ctx, o, e, name, conc, lat, procs[name])
					if err != nil {
						return err
					}
					runs[name] = append(runs[name], c)
				}
			}
			for _, name := range o.scenarios {
				rep.Cells = append(rep.Cells, medianRound(runs[name]))
			}
		}
	}
	up.setLatency(0)
	return nil
}

// medianRound is the round of one cell with the median req/s (the
// higher of the middle two for an even number), with every round's req/s
// and the errors of all rounds, so that a round's errors are never hidden
// by another's.
func medianRound(rounds []cell) cell {
	if len(rounds) == 1 {
		return rounds[0]
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b cell) int { return cmp.Compare(a.RPS, b.RPS) })
	c := sorted[len(sorted)/2]
	c.Errors, c.FirstError = 0, ""
	for _, r := range rounds {
		c.RoundsRPS = append(c.RoundsRPS, r.RPS)
		c.Errors += r.Errors
		if c.FirstError == "" {
			c.FirstError = r.FirstError
		}
	}
	return c
}

func usesToolguard(scenarios []string) bool {
	for _, s := range scenarios {
		if s != scDirect && s != scBare {
			return true
		}
	}
	return false
}

// runCell runs one cell; p is the proxy serving it (nil for direct), whose
// peak RSS is reset before and read after.
func runCell(ctx context.Context, o options, e *env, name string, conc int, lat time.Duration, p *proc) (cell, error) {
	runtime.GC() // the previous cell's garbage is not this cell's cost
	if p != nil {
		resetPeak(p.pid())
	}
	before, scraped := commitStats{}, false
	if p != nil && p.adminURL != "" {
		before, scraped = scrapeCommits(p.adminURL)
	}
	var proxyCPU0 time.Duration
	if p != nil {
		proxyCPU0 = cpuTime(p.pid())
	}
	busy0 := machineBusy()
	res := e.load(name, conc).run(ctx, o.warmup, o.duration)
	busy := machineBusy() - busy0
	c := newCell(name, conc, lat, res)
	c.MachineCPUUS = perCall(float64(busy.Microseconds()), res.total)
	if p != nil {
		c.ProxyCPUUS = ptr(perCall(float64((cpuTime(p.pid()) - proxyCPU0).Microseconds()), res.total))
	}
	if scraped {
		if after, ok := scrapeCommits(p.adminURL); ok {
			d := after.sub(before)
			c.CommitsPerCall = ptr(perCall(d.Commits, res.total))
			if d.Commits > 0 {
				c.WritesPerCommit = ptr(d.Writes / d.Commits)
				c.CommitMeanMS = ptr(d.Seconds * 1000 / d.Commits)
			}
		}
	}
	if p != nil {
		if err := p.alive(); err != nil {
			return c, err
		}
		if m, err := readMem(p.pid()); err == nil {
			c.PeakRSSMiB, c.AnonMiB, c.FileMiB = mib(m.Peak), mib(m.Anon), mib(m.File)
		}
	}
	progress("%-11s c%-3d lat %-4s %8.0f req/s  p50 %7.3f ms  p99 %7.3f ms  errors %d  conns %d%s%s",
		name, conc, lat, c.RPS, c.P50MS, c.P99MS, c.Errors, c.Conns, rssNote(c.PeakRSSMiB), commitNote(c))
	if c.FirstError != "" {
		progress("  first error: %s", c.FirstError)
	}
	return c, nil
}

func perCall(commits float64, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return commits / float64(calls)
}

func commitNote(c cell) string {
	if c.CommitsPerCall == nil || c.CommitMeanMS == nil {
		return ""
	}
	return fmt.Sprintf("  %.3f commits/call, %.1f writes/commit, commit mean %.3f ms", *c.CommitsPerCall, *c.WritesPerCommit, *c.CommitMeanMS)
}

func rssNote(peak float64) string {
	if peak == 0 {
		return ""
	}
	return fmt.Sprintf("  peak RSS %.1f MiB", peak)
}

// runMemory measures peak RSS at o.memConc with bodies of o.memBody bytes,
// each load on a freshly started proxy (the Go runtime keeps what an
// earlier load grew): guarded POSTs and passthrough GETs on toolguard, and
// the same passthrough on the bare goproxy for reference.
func runMemory(ctx context.Context, o options, rep *report, up *upstreams, bin, tmp, rulesDir, configFile string) error {
	up.setLatency(0)
	blob := up.plain.URL + "/v1/blob"
	getBlob := func(int, int) *http.Request { r, _ := http.NewRequest(http.MethodGet, blob, nil); return r }
	kib := strconv.Itoa(o.memBody>>10) + " KiB"
	for i, m := range []struct {
		proxy, load string
		body        int
		scenario    string
	}{
		{"toolguard", "guarded POST, body " + kib, o.memBody, scGuarded},
		{"toolguard", "passthrough GET, answer 64 KiB", blobSize, scPassthrough},
		{"bare goproxy", "passthrough GET, answer 64 KiB", blobSize, scBare},
	} {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var p *proc
		var err error
		if m.proxy == "toolguard" {
			p, err = startToolguard(bin, filepath.Join(tmp, "memory"+strconv.Itoa(i)), rulesDir, configFile, o.toolguardEnv)
		} else {
			p, err = startBare()
		}
		if err != nil {
			return err
		}
		e := &env{up: up, toolguard: p.proxyURL, bare: p.proxyURL, intents: newIntents()}
		l := e.load(m.scenario, o.memConc)
		if m.scenario == scGuarded {
			l = e.guardedLoad(o.memConc, o.memBody)
		} else {
			l.next = getBlob
		}
		runtime.GC()
		res := l.run(ctx, o.warmup, o.duration)
		st, err := readMem(p.pid())
		if aerr := p.alive(); aerr != nil {
			err = aerr
		}
		p.stop()
		if err != nil {
			return err
		}
		mc := memCell{Proxy: m.proxy, Load: m.load, Conc: o.memConc, BodyBytes: m.body, RPS: res.rps(), Errors: res.errors,
			PeakMiB: mib(st.Peak), RSSMiB: mib(st.RSS), AnonMiB: mib(st.Anon), FileMiB: mib(st.File)}
		rep.Memory = append(rep.Memory, mc)
		progress("memory %-12s %-34s %7.0f req/s  peak RSS %.1f MiB (now anon %.1f, file %.1f)  errors %d",
			m.proxy, m.load, mc.RPS, mc.PeakMiB, mc.AnonMiB, mc.FileMiB, mc.Errors)
		if res.firstErr != "" {
			progress("  first error: %s", res.firstErr)
		}
	}
	return nil
}

// runInproc measures journal commits per guarded and replayed call on an
// in-process toolguard, and profiles it when asked.
func runInproc(ctx context.Context, o options, rep *report, up *upstreams, tmp, rulesDir, caFile, backend, dsn string) error {
	up.setLatency(0)
	p, err := startInproc(filepath.Join(tmp, "inproc-"+backend), rulesDir, caFile, dsn)
	if err != nil {
		return fmt.Errorf("in-process toolguard: %w", err)
	}
	defer p.close()
	e := &env{up: up, toolguard: p.url, roots: p.roots, intents: newIntents()}
	if err := e.seedReplay(ctx, o.replaySet); err != nil {
		return err
	}
	for _, name := range []string{scGuarded, scReplay} {
		for _, conc := range o.concs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			runtime.GC()
			res, commits, st, ps := p.withCommits(ctx, e.load(name, conc), o)
			jc := journalCell{Backend: backend, Scenario: name, Conc: conc, Calls: res.total, Commits: commits,
				CommitsPerCall: perCall(float64(commits), res.total), Errors: res.errors,
				RPS: res.rps(), P50MS: ms(res.percentile(0.5)), P99MS: ms(res.percentile(0.99)),
				CommitP50MS: ms(st.P50), CommitP99MS: ms(st.P99)}
			if st.Commits > 0 {
				jc.WritesPerCommit = st.Writes / st.Commits
				jc.CommitMeanMS = st.Seconds * 1000 / st.Commits
			}
			if backend == "postgres" {
				jc.Statements, jc.StatementsPerCall = ps.Acquires, perCall(float64(ps.Acquires), res.total)
				jc.PoolWaits, jc.PoolMaxConns = ps.Waits, ps.MaxConns
				if ps.Waits > 0 {
					jc.PoolWaitMeanMS = ms(ps.WaitTime / time.Duration(ps.Waits))
				}
				progress("in-process postgres %s c%d: %.3f statements/call, %d of %d acquisitions waited (mean %.3f ms), pool %d",
					name, conc, jc.StatementsPerCall, ps.Waits, ps.Acquires, jc.PoolWaitMeanMS, ps.MaxConns)
			}
			rep.Journal = append(rep.Journal, jc)
			progress("in-process %s %-8s c%-3d %8.0f req/s  %d calls, %d commits = %.3f commits/call, %.1f writes/commit, commit p50 %.3f ms p99 %.3f ms  errors %d",
				backend, name, conc, res.rps(), res.total, commits, jc.CommitsPerCall, jc.WritesPerCommit, jc.CommitP50MS, jc.CommitP99MS, res.errors)
		}
	}
	if (o.cpuprofile || o.memprofile || o.trace) && ctx.Err() == nil {
		dir := o.out
		if dir == "" {
			dir = tmp
		} else if !filepath.IsAbs(dir) {
			root, _ := moduleRoot(ctx)
			dir = filepath.Join(root, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, name := range []string{scGuarded, scReplay} {
			if !o.cpuprofile {
				break
			}
			path := filepath.Join(dir, "cpu-"+name+"-c64.prof")
			if backend != "bolt" {
				path = filepath.Join(dir, "cpu-"+backend+"-"+name+"-c64.prof")
			}
			res, err := p.profileCPU(ctx, e.load(name, 64), o, path)
			if err != nil {
				return err
			}
			rep.Profiles = append(rep.Profiles, path)
			progress("CPU profile of %s c64 (%.0f req/s) in %s", name, res.rps(), path)
		}
		if o.trace && backend == "bolt" {
			path := filepath.Join(dir, "trace-guarded-c1.trace")
			res, err := p.trace(ctx, e.load(scGuarded, 1), o, path)
			if err != nil {
				return err
			}
			rep.Profiles = append(rep.Profiles, path)
			progress("execution trace of guarded c1 (%.0f req/s) in %s", res.rps(), path)
		}
		if o.memprofile && backend == "bolt" {
			path := filepath.Join(dir, fmt.Sprintf("heap-guarded-c%d-%dk.prof", o.memConc, o.memBody>>10))
			res, err := p.heapProfileGuarded(ctx, e, o.memConc, o.memBody, o, path)
			if err != nil {
				return err
			}
			rep.Profiles = append(rep.Profiles, path)
			progress("heap profile of guarded c%d, %d KiB bodies (%.0f req/s) in %s", o.memConc, o.memBody>>10, res.rps(), path)
		}
	}
	return nil
}

func loadRoots(caFile string) (*x509.CertPool, error) {
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read toolguard CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	return pool, nil
}

// progress writes a line to stderr as the run goes.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
