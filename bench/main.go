//go:build linux

// Command bench measures toolguard's throughput, latency, memory and journal
// commits per call against a local upstream, in one run:
//
//	go run ./bench                       # full grid, 5s per cell
//	go run ./bench -duration 3s          # full grid, shorter
//	go run ./bench -rounds 3             # each cell three times, interleaved: the median round is kept
//	go run ./bench -quick                # one concurrency, one latency, 2s per cell, no scale cell
//	go run ./bench -scale 200000         # a smaller pre-filled journal for the scale cell
//	go run ./bench -cpuprofile           # also profile the in-process proxy (guarded, replay; conc 64)
//	go run ./bench -memprofile           # and its heap (guarded, conc 256, 64 KiB bodies)
//	go run ./bench -trace                # and an execution trace of it (guarded, conc 1)
//	go run ./bench -toolguard-env TOOLGUARD_UPSTREAM_MAX_IDLE_CONNS_PER_HOST=512   # an experiment
//	go run ./bench -backend both -conc 1,64 -latency 0 -duration 2s -memory=false  # bbolt next to PostgreSQL
//	go run ./bench -backend postgres -grid=false -conc 64 -dsn 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&pool_max_conns=16' -pg-settings synchronous_commit=off
//
// # What runs
//
// The harness starts, all on 127.0.0.1:
//
//   - an upstream API (plain HTTP and a TLS twin) answering POST /v1/invoices
//     with a small JSON and GET /v1/ping, with a fixed added latency per cell;
//   - the real toolguard binary (built from ./cmd/toolguard) as a subprocess,
//     with a rule file that guards POST /v1/invoices on both upstreams;
//   - a bare, tuned goproxy (goproxy.NewProxyHttpServer with a keep-alive
//     transport) as a second subprocess: this same binary re-executed with
//     -serve-bare-goproxy, so both proxies run in their own process;
//   - closed-loop load clients: N goroutines with keep-alive, each sending its
//     next request as soon as the previous answer was read.
//
// # Scenarios
//
//	direct       GET /v1/ping straight to the upstream
//	bare         GET /v1/ping through the bare goproxy
//	passthrough  GET /v1/ping through toolguard (no rule matches: streamed)
//	guarded      POST /v1/invoices through toolguard, a new intent every call
//	replay       POST /v1/invoices of intents already committed (cycled)
//	https        GET /v1/ping to the TLS upstream through toolguard's
//	             interception (CONNECT, toolguard's CA, keep-alive)
//
// Every scenario runs at every concurrency and upstream latency; cells are
// interleaved (for each latency, for each concurrency, every scenario) so
// that drift in the machine's load hits all scenarios alike, and ratios are
// taken against direct and passthrough of the same cell. With -rounds N
// each cell runs N times in interleaved rounds, and the report keeps the
// round with the median req/s next to every round's. toolguard's peak
// RSS (VmHWM, reset before each cell) is read from /proc, and its journal
// commits per call (with writes per commit and commit time) from its admin
// GET /metrics, when the binary has one. Each cell also has the CPU time
// per call of the proxy process and of the whole machine (/proc/stat),
// which splits a ratio between the proxy's cost and its neighbours'.
//
// Then, on fresh proxies: peak RSS at concurrency 256 with 64 KiB bodies
// (guarded POSTs and passthrough GETs), and an in-process toolguard wired as
// cmd/toolguard wires it, whose journal reports the commits per guarded
// call and their durations; with -cpuprofile its CPU profiles under guarded
// and replay load at concurrency 64 are written with pprof labels
// role=proxy|client|upstream (go tool pprof -tagfocus role=proxy).
//
// # Journal backends
//
// -backend postgres or both adds a table of journal scenarios at every
// concurrency (upstream latency 0) on fresh toolguard processes per
// backend: guarded and replay on each, and on PostgreSQL two more with
// TWO toolguard processes on one database (sharing journal.secret_file):
//
//	cross-replica  a new intent forwarded by one replica, then replayed
//	               through the other (which is which alternates)
//	cross-dup      one new intent sent to both replicas at once: one must
//	               forward, the other replay; the upstream's effects per
//	               intent are counted (1 when none was doubled)
//
// Each row has the journal commits per call (GET /metrics of both
// replicas), the CPU time per call of the toolguard processes and of the
// PostgreSQL backends connected to the bench database (/proc: the server
// runs on this machine), and what those backends waited on, sampled from
// pg_stat_activity every 5 ms (a lock wait names its object); on
// PostgreSQL also the WAL bytes and full-page images per call
// (pg_stat_wal), the blocks read from outside shared_buffers, and the CPU
// of the checkpointer, background writer and WAL writer. The
// in-process toolguard runs on each backend too: on PostgreSQL its pgx
// pool's acquisitions count the statements per call (one round trip each
// once pgx has cached the prepared statement), and the acquisitions that
// waited for a free connection.
//
// -dsn names the server (default the local one, user postgres): the
// harness creates a fresh database per use (the grid with -backend
// postgres, the backends table, the in-process toolguard) and drops them
// all at the end; pool_max_conns and other pgxpool parameters in -dsn go to
// toolguard's journal only. -pg-settings sets name=value on those databases
// (ALTER DATABASE ... SET, e.g. synchronous_commit=off, commit_delay=200),
// never on the server. -grid=false skips the grid.
//
// # Journal size
//
// -scale N (default 1,000,000; 0 or -quick: none) measures guarded at
// concurrency 64, upstream latency 0, on a bbolt journal pre-filled with N
// committed steps and on an empty one, each on a fresh toolguard process.
// The pre-fill goes through the journal's own Apply, as the proxy writes a
// guarded call (a claim of a new key, then its outcome with the stored
// answer: the step, its events and every index), from 1024 goroutines that
// share group commits; the file is kept in -scale-cache (default
// $TMPDIR/toolguard-bench-cache), named by N, the journal's schema version
// and the fill's shape, so later runs reuse it, and each run measures a
// copy. With -backend postgres or both the same runs on PostgreSQL: the
// journal is filled through the postgres package's Apply into a database
// kept on the server (named by N, both schema versions and the fill's
// shape; DROP DATABASE reclaims it), vacuumed and analyzed as autovacuum
// would (VACUUM (ANALYZE), before every run: a server may run without
// autovacuum), and each measurement runs on a copy made with CREATE
// DATABASE ... TEMPLATE.
//
// # Targets
//
// The report's Targets table evaluates the performance issue's targets
// (bench/targets.go) from cells of the same run, each at every latency and
// concurrency it names that was run; a target whose cells were not run is
// left out.
//
// Before the grid and after the run, a probe times fdatasync of a 4 KiB
// write on the journal's file system: guarded calls are bounded by it, and
// it varies with the machine and with other I/O.
//
// Results go to stdout and to -out (default bench/results): latest.md and
// latest.json. Linux only: memory comes from /proc, and the child processes
// die with the harness (Pdeathsig).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the harness's flags.
type options struct {
	duration time.Duration
	warmup   time.Duration
	// rounds is how many times the grid runs each cell, in interleaved
	// rounds; the report keeps the round with the median req/s.
	rounds     int
	concs      []int
	latencies  []time.Duration
	scenarios  []string
	quick      bool
	out        string
	binary     string
	cpuprofile bool
	memprofile bool
	trace      bool
	// toolguardEnv are extra TOOLGUARD_* settings for the subprocesses.
	toolguardEnv []string
	memory       bool
	inproc       bool
	replaySet    int
	memConc      int
	memBody      int
	// backends are the journals to measure (bolt, postgres); dsn locates
	// the PostgreSQL server on which each run creates a fresh database,
	// with pgSettings (name=value) set on it.
	grid       bool
	backends   []string
	dsn        string
	pgSettings []string
	// scale is the number of steps of the pre-filled journal of the scale
	// cell (0: no scale cell); scaleCache is where the filled file is kept;
	// scaleDuration is each of its cells' measured time.
	scale         int
	scaleCache    string
	scaleDuration time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == bareFlag {
		serveBare()
		return
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var conc, lat, scen string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per cell")
	fs.IntVar(&o.rounds, "rounds", 1, "runs of each grid cell, in interleaved rounds (each round runs every scenario of a concurrency and latency once); the report keeps each cell's round with the median req/s and lists every round's")
	fs.DurationVar(&o.warmup, "warmup", 0, "unmeasured time before each cell (default duration/6, at most 500ms)")
	fs.StringVar(&conc, "conc", "1,16,64,256", "comma-separated client concurrencies")
	fs.StringVar(&lat, "latency", "0,5ms", "comma-separated upstream latencies")
	fs.StringVar(&scen, "scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios")
	fs.BoolVar(&o.quick, "quick", false, "development run: -conc 16 -latency 0 -duration 2s unless set")
	fs.StringVar(&o.out, "out", "bench/results", "directory for latest.md and latest.json (empty: stdout only)")
	fs.StringVar(&o.binary, "toolguard", "", "prebuilt toolguard binary (default: go build ./cmd/toolguard)")
	fs.BoolVar(&o.cpuprofile, "cpuprofile", false, "write CPU profiles of the in-process proxy (guarded and replay, conc 64) to -out")
	fs.BoolVar(&o.memprofile, "memprofile", false, "write a heap profile of the in-process proxy (guarded, -mem-conc, -mem-body) to -out")
	var tgEnv string
	fs.StringVar(&tgEnv, "toolguard-env", "", "comma-separated TOOLGUARD_*=value (or GOGC, GOMEMLIMIT, GOMAXPROCS) settings for the toolguard subprocesses, for experiments")
	fs.BoolVar(&o.memory, "memory", true, "measure peak RSS at -mem-conc with -mem-body bodies on a fresh toolguard")
	fs.BoolVar(&o.inproc, "inproc", true, "measure journal commits per call on an in-process toolguard")
	fs.BoolVar(&o.trace, "trace", false, "write an execution trace of the in-process proxy (guarded, conc 1) to -out: where a call waits (go tool trace -pprof=sched|syscall|sync|net)")
	fs.IntVar(&o.replaySet, "replay-set", 2048, "intents committed before the replay cells, then cycled")
	fs.IntVar(&o.memConc, "mem-conc", 256, "concurrency of the memory measurement")
	fs.IntVar(&o.memBody, "mem-body", 64<<10, "body size in bytes of the memory measurement")
	var backend, pgSet string
	fs.BoolVar(&o.grid, "grid", true, "run the grid of scenarios × concurrencies × latencies (false: only the backends table, memory and in-process measurements)")
	fs.StringVar(&backend, "backend", "bolt", "journal of the measured toolguard: bolt, postgres or both (postgres adds the cross-replica scenarios and a backends table)")
	fs.StringVar(&o.dsn, "dsn", defaultDSN, "PostgreSQL server URL (backend postgres): each run creates a fresh database there and drops it at the end")
	fs.StringVar(&pgSet, "pg-settings", "", "comma-separated name=value settings for the bench database (ALTER DATABASE ... SET), for experiments")
	fs.IntVar(&o.scale, "scale", 1000000, "steps of the pre-filled bbolt journal of the scale cell (guarded c64 on it and on an empty journal; 0: no scale cell; -quick: 0 unless set)")
	fs.DurationVar(&o.scaleDuration, "scale-duration", 10*time.Second, "measured time of each scale cell: a fresh toolguard on a large journal first maps the pages its calls read (default 10s, or -duration if longer)")
	fs.StringVar(&o.scaleCache, "scale-cache", "", "directory keeping pre-filled journals between runs, keyed by steps and schema version (default $TMPDIR/toolguard-bench-cache)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds: %d is not a positive number of rounds", o.rounds)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		if !set["conc"] {
			conc = "16"
		}
		if !set["latency"] {
			lat = "0"
		}
		if !set["duration"] {
			o.duration = 2 * time.Second
		}
		if !set["replay-set"] {
			o.replaySet = 512
		}
		if !set["scale"] {
			o.scale = 0
		}
	}
	for _, kv := range strings.Split(tgEnv, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || !(strings.HasPrefix(k, "TOOLGUARD_") || k == "GOGC" || k == "GOMEMLIMIT" || k == "GOMAXPROCS") {
			return o, fmt.Errorf("-toolguard-env: %q is not TOOLGUARD_NAME=value, GOGC=…, GOMEMLIMIT=… or GOMAXPROCS=…", kv)
		}
		o.toolguardEnv = append(o.toolguardEnv, kv)
	}
	switch backend {
	case "bolt", "postgres":
		o.backends = []string{backend}
	case "both":
		o.backends = []string{"bolt", "postgres"}
	default:
		return o, fmt.Errorf("-backend: %q is not bolt, postgres or both", backend)
	}
	for _, kv := range strings.Split(pgSet, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || !validSettingName(k) {
			return o, fmt.Errorf("-pg-settings: %q is not name=value", kv)
		}
		o.pgSettings = append(o.pgSettings, kv)
	}
	if o.scale < 0 {
		return o, fmt.Errorf("-scale: %d is negative", o.scale)
	}
	if !set["scale-duration"] {
		o.scaleDuration = max(o.scaleDuration, o.duration)
	}
	if o.scaleDuration <= 0 {
		return o, fmt.Errorf("-scale-duration: %v is not a positive duration", o.scaleDuration)
	}
	if o.warmup <= 0 {
		o.warmup = min(o.duration/6, 500*time.Millisecond).Round(time.Millisecond)
	}
	var err error
	if o.concs, err = parseInts(conc); err != nil {
		return o, fmt.Errorf("-conc: %w", err)
	}
	if o.latencies, err = parseDurations(lat); err != nil {
		return o, fmt.Errorf("-latency: %w", err)
	}
	if o.scenarios, err = parseScenarios(scen); err != nil {
		return o, fmt.Errorf("-scenarios: %w", err)
	}
	return o, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseDurations reads "0,5ms"; a bare 0 is allowed.
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration", f)
		}
		out = append(out, d)
	}
	return out, nil
}
