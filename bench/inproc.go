//go:build linux

package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/internal/wire"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/journal/postgres"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/tlsca"
)

// inproc is toolguard wired in this process by package wire, as
// cmd/toolguard's serve wires it (config defaults, the same transport,
// server and limits), so that the journal's commit counter can be read.
// Its serving goroutines and the journal's committer carry the pprof label
// role=proxy.
type inproc struct {
	journal inprocJournal
	// pool is the PostgreSQL journal's connection pool (nil on bbolt):
	// its acquisitions count the statements, one round trip each.
	pool    *pgxpool.Pool
	proxy   *proxy.Server
	commits *commitRecorder
	server  *http.Server
	url     *url.URL
	roots   *x509.CertPool
}

// inprocJournal is what the harness needs of either backend.
type inprocJournal interface {
	journal.Store
	Commits() uint64
}

// startInproc wires toolguard in this process on a bbolt journal in dir,
// or, when dsn is not empty, on the PostgreSQL database at dsn.
func startInproc(dir, rulesDir, upstreamCAFile, dsn string) (*inproc, error) {
	cfg := config.Default()
	cfg.Journal.Path = filepath.Join(dir, "tg.db")
	cfg.Upstream.CAFile = upstreamCAFile
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	set, err := rules.Load(rulesDir)
	if err != nil {
		return nil, err
	}
	ca, _, err := tlsca.LoadOrCreate(filepath.Join(dir, "ca"))
	if err != nil {
		return nil, err
	}
	secret, err := tlsca.LoadOrCreateSecret(cfg.Journal.Path + ".secret")
	if err != nil {
		return nil, err
	}
	metrics := metrics.New()
	rec := &commitRecorder{}
	onCommit := func(d time.Duration, batch int) {
		metrics.ObserveCommit(d, batch)
		rec.observe(d, batch)
	}
	// The journal's committer goroutine inherits the label too.
	var j inprocJournal
	var maint journal.Maintainer
	var pool *pgxpool.Pool
	pprof.Do(context.Background(), pprof.Labels("role", "proxy"), func(ctx context.Context) {
		if dsn == "" {
			var b *bolt.Journal
			b, err = bolt.Open(cfg.Journal.Path, bolt.Options{Timeout: cfg.Journal.OpenTimeout, Logger: log, OnCommit: onCommit})
			j, maint = b, b
			return
		}
		var pg *postgres.Journal
		pg, err = postgres.Open(ctx, postgres.Options{DSN: dsn, Secret: secret, Logger: log, OnCommit: onCommit})
		if err == nil {
			j, pool = pg, pg.Pool()
		}
	})
	if err != nil {
		return nil, err
	}
	srv, err := wire.Proxy(cfg, wire.Deps{Rules: set, Journal: j, Maintainer: maint, Secret: secret, CA: ca, Metrics: metrics, Logger: log})
	if err != nil {
		j.Close()
		return nil, err
	}
	srv.StartSweeper(0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		j.Close()
		return nil, err
	}
	hs := wire.HTTPServer(cfg, srv.Handler(), log)
	// Serve spawns every connection goroutine, which inherit the label.
	go pprof.Do(context.Background(), pprof.Labels("role", "proxy"), func(context.Context) { hs.Serve(ln) })
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &inproc{journal: j, pool: pool, proxy: srv, commits: rec, server: hs, url: &url.URL{Scheme: "http", Host: ln.Addr().String()}, roots: roots}, nil
}

func (p *inproc) close() {
	p.server.Close()
	p.proxy.Close()
	p.journal.Close()
}

// withCommits runs l and returns what it measured with the journal
// commits made meanwhile (warm-up included, as in res.total): the count
// from the journal's own counter, durations and batch sizes from OnCommit.
func (p *inproc) withCommits(ctx context.Context, l load, o options) (loadResult, uint64, commitStats, poolStats) {
	before, pb := p.journal.Commits(), p.poolStats()
	p.commits.take()
	res := l.run(ctx, o.warmup, o.duration)
	return res, p.journal.Commits() - before, p.commits.take(), p.poolStats().sub(pb)
}

// poolStats are a PostgreSQL journal's connection pool counters.
type poolStats struct {
	// Acquires counts statements (each acquires a connection once);
	// Waits the acquisitions that found no idle connection and waited
	// for one, WaitTime their total wait.
	Acquires, Waits int64
	WaitTime        time.Duration
	MaxConns        int32
}

func (p *inproc) poolStats() poolStats {
	if p.pool == nil {
		return poolStats{}
	}
	st := p.pool.Stat()
	return poolStats{Acquires: st.AcquireCount(), Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime(), MaxConns: st.MaxConns()}
}

func (s poolStats) sub(b poolStats) poolStats {
	return poolStats{Acquires: s.Acquires - b.Acquires, Waits: s.Waits - b.Waits, WaitTime: s.WaitTime - b.WaitTime, MaxConns: s.MaxConns}
}

// profileCPU writes a CPU profile of the whole harness to path while l runs
// on the in-process proxy.
func (p *inproc) profileCPU(ctx context.Context, l load, o options, path string) (loadResult, error) {
	return recordWhile(ctx, l, o, path, "CPU profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// trace writes an execution trace of the whole harness to path while l
// runs on the in-process proxy: where a call waits, not only where it
// burns CPU (go tool trace -pprof=sched|syscall|sync|net path).
func (p *inproc) trace(ctx context.Context, l load, o options, path string) (loadResult, error) {
	return recordWhile(ctx, l, o, path, "trace", trace.Start, trace.Stop)
}

// recordWhile runs l between start, writing to path, and stop.
func recordWhile(ctx context.Context, l load, o options, path, what string, start func(io.Writer) error, stop func()) (loadResult, error) {
	f, err := os.Create(path)
	if err != nil {
		return loadResult{}, err
	}
	defer f.Close()
	if err := start(f); err != nil {
		return loadResult{}, fmt.Errorf("start %s: %w", what, err)
	}
	res := l.run(ctx, o.warmup, o.duration)
	stop()
	return res, nil
}

// heapProfileGuarded writes a heap profile of the whole harness to path,
// taken halfway through guarded load at conc with bodies padded by pad
// bytes. Heap profiles carry no labels: focus on the proxy's frames
// (go tool pprof -sample_index alloc_space -focus 'toolguard|goproxy').
func (p *inproc) heapProfileGuarded(ctx context.Context, e *env, conc, pad int, o options, path string) (loadResult, error) {
	f, err := os.Create(path)
	if err != nil {
		return loadResult{}, err
	}
	defer f.Close()
	done := make(chan loadResult, 1)
	go func() { done <- e.guardedLoad(conc, pad).run(ctx, o.warmup, o.duration) }()
	select {
	case <-time.After(o.warmup + o.duration/2):
	case <-ctx.Done():
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	return <-done, err
}
