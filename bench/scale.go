//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/journal/postgres"
)

// The scale cell: guarded throughput on a journal that already holds N
// committed steps, next to the same load on an empty journal, each on a
// fresh toolguard process, in the same run.

// scaleConc is the concurrency of the scale cell (the c64, upstream
// latency 0).
const scaleConc = 64

// fillShape numbers the shape of the steps fillBolt writes: a change to
// them must not reuse a file an older harness cached.
const fillShape = 1

// fillWorkers Apply concurrently during the fill: the journal's group
// commit takes up to 1024 queued writes per commit.
const fillWorkers = 1024

// scaleCell is the guarded load on one journal of Steps pre-filled steps,
// measured as the backends table's cells are.
type scaleCell struct {
	Backend string  `json:"backend"`
	Steps   int     `json:"journal_steps"`
	FileMiB float64 `json:"journal_file_mib,omitempty"`
	loadCell
}

// scaleFill says where the pre-filled journal came from.
type scaleFill struct {
	Backend string `json:"backend"`
	Steps   int    `json:"steps"`
	Path    string `json:"path"`
	// Cached: the file was filled by an earlier run and reused.
	Cached bool `json:"cached"`
	// FillSeconds is the time this run spent filling it (0 when cached).
	FillSeconds float64 `json:"fill_seconds,omitempty"`
	FileMiB     float64 `json:"file_mib"`
}

// runScale measures guarded c64 on an empty journal and on a copy of one
// pre-filled with o.scale committed steps, each on a fresh toolguard: on
// bbolt, and on PostgreSQL when pg is set.
func runScale(ctx context.Context, o options, rep *report, up *upstreams, pg *pgServer, bin, tmp, rulesDir, configFile string) error {
	up.setLatency(0)
	rep.ScaleSeconds = o.scaleDuration.Seconds()
	cacheDir := o.scaleCache
	if cacheDir == "" {
		cacheDir = filepath.Join(os.TempDir(), "toolguard-bench-cache")
	}
	path, fill, err := prefilledBolt(ctx, cacheDir, o.scale)
	if err != nil {
		return fmt.Errorf("pre-fill a bbolt journal of %d steps: %w", o.scale, err)
	}
	rep.ScaleFill = append(rep.ScaleFill, fill)
	for _, n := range []int{0, o.scale} {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dir := filepath.Join(tmp, "scale-bolt-"+strconv.Itoa(n))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if n > 0 {
			progress("scale: copying the pre-filled journal (%.0f MiB)", fill.FileMiB)
			t0 := time.Now()
			if err := copyFile(path, filepath.Join(dir, "tg.db")); err != nil {
				return err
			}
			progress("scale: copied and synced in %.1f s", time.Since(t0).Seconds())
		}
		sc, err := runScaleCell(ctx, o, up, bin, dir, rulesDir, configFile, "bolt", n, nil, "", "")
		if err != nil {
			return err
		}
		if st, err := os.Stat(filepath.Join(dir, "tg.db")); err == nil {
			sc.FileMiB = mib(st.Size())
		}
		rep.Scale = append(rep.Scale, sc)
	}
	if pg == nil {
		return nil
	}
	template, fill, err := prefilledPG(ctx, pg, o.scale)
	if err != nil {
		return fmt.Errorf("pre-fill a PostgreSQL journal of %d steps: %w", o.scale, err)
	}
	rep.ScaleFill = append(rep.ScaleFill, fill)
	for _, n := range []int{0, o.scale} {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Both databases are copies made the same way (template1 is the
		// empty one CREATE DATABASE copies by default), so that both loads
		// start right after the checkpoint FILE_COPY makes.
		from := "template1"
		if n > 0 {
			from = template
			progress("scale: copying the pre-filled database %s (%.0f MiB)", template, fill.FileMiB)
		}
		dsn, err := pg.createFrom(ctx, "scale"+strconv.Itoa(n), from)
		if err != nil {
			return err
		}
		dir := filepath.Join(tmp, "scale-postgres-"+strconv.Itoa(n))
		sc, err := runScaleCell(ctx, o, up, bin, dir, rulesDir, configFile, "postgres", n, pg, dsn, pg.last())
		if err != nil {
			return err
		}
		sc.FileMiB = pg.size(ctx, pg.last())
		rep.Scale = append(rep.Scale, sc)
	}
	return nil
}

// runScaleCell runs guarded at scaleConc on a fresh toolguard whose journal
// is in dir (bbolt) or at dsn (PostgreSQL, database db).
func runScaleCell(ctx context.Context, o options, up *upstreams, bin, dir, rulesDir, configFile, backend string, n int, pg *pgServer, dsn, db string) (scaleCell, error) {
	tgEnv := o.toolguardEnv
	if dsn != "" {
		secret, err := writeSecret(dir)
		if err != nil {
			return scaleCell{}, err
		}
		tgEnv = append(append([]string{}, tgEnv...), pgEnv(dsn, secret)...)
	}
	p, err := startToolguard(bin, dir, rulesDir, configFile, tgEnv)
	if err != nil {
		return scaleCell{}, err
	}
	defer p.stop()
	var pgw *pgWatch
	if pg != nil {
		pgw = pg.watch(ctx, db)
	}
	e := &env{up: up, toolguard: p.proxyURL, intents: newIntents()}
	o.duration = o.scaleDuration
	bc, err := runBackendCell(ctx, o, e, backend, scGuarded, scaleConc, []*proc{p}, pgw)
	if err != nil {
		return scaleCell{}, err
	}
	sc := scaleCell{Backend: backend, Steps: n, loadCell: bc.loadCell}
	progress("scale: %s journal of %d steps: guarded c%d %.0f req/s, p50 %.3f ms, p99 %.3f ms, errors %d",
		backend, n, scaleConc, sc.RPS, sc.P50MS, sc.P99MS, sc.Errors)
	return sc, nil
}

// prefilledPG returns a database of the server holding a journal of n
// committed steps, to be copied (CREATE DATABASE ... TEMPLATE): one an
// earlier run left (named by n, the journal's schema versions and the
// fill's shape), else filled now and kept. Unlike the run's own databases
// it is not dropped at the end.
func prefilledPG(ctx context.Context, pg *pgServer, n int) (string, scaleFill, error) {
	name := fmt.Sprintf("toolguard_bench_scale_j%d_pg%d_f%d_%d", journal.SchemaVersion, postgres.SchemaVersion, fillShape, n)
	fill := scaleFill{Backend: "postgres", Steps: n, Path: "database " + name}
	conn, err := pgx.Connect(ctx, pg.adminDSN())
	if err != nil {
		return "", fill, err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fill, err
	}
	if exists {
		fill.Cached, fill.FileMiB = true, pg.size(ctx, name)
		progress("scale: using the cached database %s of %d steps (%.0f MiB)", name, n, fill.FileMiB)
		return name, fill, vacuum(ctx, pg, name)
	}
	partial := name + "_partial"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{partial}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", fill, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{partial}.Sanitize()); err != nil {
		return "", fill, err
	}
	started := time.Now()
	// No secret: the copies' toolguard stores its own fingerprint on first use.
	j, err := postgres.Open(ctx, postgres.Options{DSN: pg.dsnFor(partial), MaxConns: fillPGConns})
	if err == nil {
		progress("scale: filling a PostgreSQL journal with %d committed steps (%d writers, %d connections)", n, fillPGWorkers, fillPGConns)
		err = errors.Join(fillSteps(ctx, j, n, fillPGWorkers), j.Close())
	}
	if err == nil {
		_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{partial}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize())
	}
	if err != nil {
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{partial}.Sanitize()+" WITH (FORCE)")
		return "", fill, err
	}
	fill.FillSeconds, fill.FileMiB = time.Since(started).Seconds(), pg.size(ctx, name)
	progress("scale: filled %d steps in %.1f s (%.0f MiB) into database %s", n, fill.FillSeconds, fill.FileMiB, name)
	return name, fill, vacuum(ctx, pg, name)
}

// vacuum does to the pre-filled database what autovacuum does to a
// journal in service, which a test server may run without
// (autovacuum = off): it removes the dead row versions each outcome left
// behind in the table and its indexes, and gathers the planner's
// statistics. The copies inherit both. A database vacuumed before takes a
// moment.
func vacuum(ctx context.Context, pg *pgServer, name string) error {
	u, err := url.Parse(pg.adminDSN())
	if err != nil {
		return err
	}
	u.Path = "/" + name
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("vacuum %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	started := time.Now()
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("vacuum %s: %w", name, err)
	}
	progress("scale: vacuumed and analyzed %s in %.1f s", name, time.Since(started).Seconds())
	return nil
}

// The PostgreSQL fill's writers and pool.
const (
	fillPGWorkers = 64
	fillPGConns   = 32
)

// prefilledBolt returns a bbolt journal of n committed steps, from dir when
// an earlier run left one there (keyed by n, the journal's schema version
// and the fill's shape), else filled now and kept there.
func prefilledBolt(ctx context.Context, dir string, n int) (string, scaleFill, error) {
	path := filepath.Join(dir, fmt.Sprintf("journal-bolt-schema%d-shape%d-%d.db", journal.SchemaVersion, fillShape, n))
	fill := scaleFill{Backend: "bolt", Steps: n, Path: path}
	if st, err := os.Stat(path); err == nil {
		fill.Cached, fill.FileMiB = true, mib(st.Size())
		progress("scale: using the cached journal of %d steps %s (%.0f MiB)", n, path, fill.FileMiB)
		return path, fill, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fill, err
	}
	// Filled under another name and renamed once complete: an interrupted
	// fill is never taken for a cached one.
	partial := path + ".partial"
	os.Remove(partial)
	started := time.Now()
	if err := fillBolt(ctx, partial, n); err != nil {
		os.Remove(partial)
		return "", fill, err
	}
	if err := os.Rename(partial, path); err != nil {
		return "", fill, err
	}
	fill.FillSeconds = time.Since(started).Seconds()
	if st, err := os.Stat(path); err == nil {
		fill.FileMiB = mib(st.Size())
	}
	progress("scale: filled %d steps in %.1f s (%.0f MiB) into %s", n, fill.FillSeconds, fill.FileMiB, path)
	return path, fill, nil
}

// fillBolt writes n steps into a new bbolt journal at path (fillSteps).
func fillBolt(ctx context.Context, path string, n int) error {
	j, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		return err
	}
	progress("scale: filling a bbolt journal with %d committed steps (%d writers)", n, fillWorkers)
	err = fillSteps(ctx, j, n, fillWorkers)
	return errors.Join(err, j.Close())
}

// applier is the journal's write method (journal.Store's Apply).
type applier interface {
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
}

// fillSteps writes n steps through the journal's own API, as the proxy
// makes a guarded call: a claim of a new key (started), then its outcome
// (committed, with the stored answer), so that the step records, their
// events and every index are what the journal writes. workers goroutines
// Apply at once (on bbolt they share group commits).
func fillSteps(ctx context.Context, j applier, n, workers int) error {
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		cancel()
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		started := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d := done.Load()
				progress("scale: filled %d of %d steps (%.0f%%, %.0f steps/s)", d, n, 100*float64(d)/float64(n), float64(d)/time.Since(started).Seconds())
			}
		}
	}()
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				key := fillKey(i)
				st, err := j.Apply(ctx, key, fillStart(key, i))
				if err == nil {
					_, err = j.Apply(ctx, key, fillOutcome(st.Epoch, st.Fence, i))
				}
				if err != nil {
					fail(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// fillKey is a key shaped like the proxy's: 64 hex digits of a sha256
// (the proxy's is an HMAC; these never collide with the load's).
func fillKey(i int64) string {
	var b [16]byte
	copy(b[:8], "benchfil")
	binary.BigEndian.PutUint64(b[8:], uint64(i))
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:])
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// fillStart is the proxy's claim of a new step for the bench's rule
// (api bench, route create_invoice, the body keyed whole but trace_id),
// with the fields the proxy sets (cf. journal/bolt's benchStart).
func fillStart(key string, i int64) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		s := journal.Step{Key: key, API: "bench", Route: "create_invoice", Status: journal.StatusStarted, Attempt: 1,
			Method: http.MethodPost, Host: "127.0.0.1:40000", Path: "/v1/invoices", Scheme: "http",
			CredentialMAC: hexSum("credential"),
			BodyHash:      hexSum(fmt.Sprintf(`{"amount":%d,"currency":"eur","customer":"cus_%d","reference":"fill-%d"}`, 100+i, i%1000, i)),
			KeyFields:     []journal.KeyField{{Field: "amount"}, {Field: "currency"}, {Field: "customer"}, {Field: "reference"}},
			KeyForm:       2}
		return journal.Change{Step: s, Event: journal.EventStarted, Claim: true}, nil
	}
}

// fillOutcome is the proxy's record of the upstream's 201 answer.
func fillOutcome(epoch, fence uint64, i int64) journal.Mutation {
	return journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
		s := *cur
		s.Status, s.Retryable, s.LastError = journal.StatusCommitted, false, ""
		body := fmt.Sprintf(`{"id":"inv_%d","status":"open","amount":%d,"currency":"eur"}`, i, 100+i)
		s.Response = &journal.Response{Status: http.StatusCreated,
			Header:   http.Header{"Content-Type": {"application/json"}},
			Body:     []byte(body),
			BodyHash: hexSum(body)}
		s.OperationID = "inv_" + strconv.FormatInt(i, 10)
		s.Evidence = "upstream answered 201 Created"
		return journal.Change{Step: s, Event: journal.EventCommitted, Reason: s.Evidence}, nil
	})
}

// copyFile copies src to dst (copy_file_range where the kernel has it)
// and syncs it: dirty pages of the copy left to the kernel's writeback
// would be written by toolguard's first fdatasync of the file, inside the
// measurement.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (r *report) writeScale(b io.Writer) {
	if len(r.Scale) == 0 {
		return
	}
	fmt.Fprintf(b, "## Journal size (guarded, c%d, upstream latency 0, fresh toolguard per journal, %gs measured per cell)\n\n", scaleConc, r.ScaleSeconds)
	for _, f := range r.ScaleFill {
		how := fmt.Sprintf("filled by this run in %.1f s", f.FillSeconds)
		if f.Cached {
			how = "cached: filled by an earlier run"
		}
		kept := "kept as " + f.Path
		if f.Backend == "postgres" {
			kept = "kept on the server as " + f.Path + " (DROP DATABASE to reclaim it), vacuumed and analyzed as autovacuum would (VACUUM (ANALYZE)), copied with CREATE DATABASE … TEMPLATE"
		}
		fmt.Fprintf(b, "- Pre-filled %s journal: %d committed steps (a claim, then its outcome, through the journal's Apply as the proxy writes a guarded call), %.0f MiB, %s; %s; each measurement runs on a copy.\n",
			f.Backend, f.Steps, f.FileMiB, how, kept)
	}
	fmt.Fprintf(b, "\n| backend | journal steps | journal MiB | req/s | × empty | p50 ms | p99 ms | errors | commits/call | commit mean ms | CPU µs/call toolguard | page faults/call toolguard | CPU µs/call PostgreSQL | %s |\n", pgColumns)
	fmt.Fprintf(b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |%s\n", pgColumnsAlign)
	opt := func(f *float64, format string) string {
		if f == nil {
			return "–"
		}
		return fmt.Sprintf(format, *f)
	}
	for _, c := range r.Scale {
		ratio := "–"
		if e := r.findScale(c.Backend, 0); e != nil && e.RPS > 0 && c.Steps > 0 {
			ratio = fmt.Sprintf("%.2f", c.RPS/e.RPS)
		}
		errs := fmt.Sprint(c.Errors)
		if c.Errors > 0 {
			errs = fmt.Sprintf("**%d**", c.Errors)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %s | %.3f | %.3f | %s | %s | %s | %.0f | %.1f | %s | %s |\n", c.Backend, c.Steps, fmtMiB(c.FileMiB), c.RPS, ratio,
			c.P50MS, c.P99MS, errs, opt(c.CommitsPerCall, "%.3f"), opt(c.CommitMeanMS, "%.3f"), c.ToolguardCPUUS, c.ToolguardFaults, opt(c.PostgresCPUUS, "%.0f"), c.Postgres.cells())
	}
	fmt.Fprintf(b, "\njournal MiB: the bbolt file, or pg_database_size of the PostgreSQL database, after the load. Columns as in the backends table; page faults/call: minor and major faults of the toolguard process per completed call (/proc/PID/stat), on bbolt mostly the kernel mapping pages of the journal's file that a call reads. Both PostgreSQL databases are made with CREATE DATABASE … STRATEGY FILE_COPY, which checkpoints: each load starts right after a checkpoint, when the first change to a page writes a full-page image to the WAL (more pages are touched on the larger database), as it does after every checkpoint of a running server.\n\n")
	for _, c := range r.Scale {
		if c.FirstError != "" {
			fmt.Fprintf(b, "- %s %d steps: first error: `%s`\n", c.Backend, c.Steps, c.FirstError)
		}
	}
}

func (r *report) findScale(backend string, steps int) *scaleCell {
	for i := range r.Scale {
		if c := &r.Scale[i]; c.Backend == backend && c.Steps == steps {
			return c
		}
	}
	return nil
}
