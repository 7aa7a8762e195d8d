package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
)

func TestMigrateFreshThenIdempotent(t *testing.T) {
	opts := Options{DSN: pgtest.DSN(t), Schema: pgtest.Schema(t)}
	from, to, err := Migrate(context.Background(), opts)
	if err != nil || from != 0 || to != SchemaVersion {
		t.Fatalf("first Migrate = %d, %d, %v; want 0, %d, nil", from, to, err, SchemaVersion)
	}
	from, to, err = Migrate(context.Background(), opts)
	if err != nil || from != SchemaVersion || to != SchemaVersion {
		t.Fatalf("second Migrate = %d, %d, %v; want %d, %d, nil", from, to, err, SchemaVersion, SchemaVersion)
	}
	j := openTest(t, opts)
	mustCheck(t, j)
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	opts := Options{DSN: pgtest.DSN(t), Schema: pgtest.Schema(t), Secret: []byte("0123456789abcdef0123456789abcdef")}
	const n = 6
	var wg sync.WaitGroup
	epochs := make([]uint64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := Open(context.Background(), opts)
			errs[i] = err
			if err == nil {
				epochs[i] = j.Epoch()
				j.Close()
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		if epochs[i] == 0 || seen[epochs[i]] {
			t.Errorf("Open %d: epoch %d is zero or not unique (%v)", i, epochs[i], epochs)
		}
		seen[epochs[i]] = true
	}
	j := openTest(t, opts)
	var rows int
	if err := j.pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_version").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion {
		t.Errorf("schema_version has %d rows, want %d (one per migration)", rows, SchemaVersion)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	j := openTest(t, Options{})
	if _, err := j.pool.Exec(context.Background(), "INSERT INTO schema_version (version) VALUES ($1)", SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	opts := Options{DSN: j.opts.DSN, Schema: j.Schema()}
	for name, open := range map[string]func() error{
		"Open":          func() error { _, err := Open(context.Background(), opts); return err },
		"Open readonly": func() error { o := opts; o.ReadOnly = true; _, err := Open(context.Background(), o); return err },
		"Migrate":       func() error { _, _, err := Migrate(context.Background(), opts); return err },
	} {
		err := open()
		if !errors.Is(err, ErrSchemaNewer) {
			t.Errorf("%s: %v, want ErrSchemaNewer", name, err)
			continue
		}
		want := fmt.Sprintf("is at version %d, newer than this toolguard's %d; upgrade toolguard", SchemaVersion+1, SchemaVersion)
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q, want one line containing %q", name, err, want)
		}
	}
}

func TestReadOnlyRefusesUnmigrated(t *testing.T) {
	_, err := Open(context.Background(), Options{DSN: pgtest.DSN(t), Schema: pgtest.Schema(t), ReadOnly: true})
	if !errors.Is(err, ErrSchemaOlder) {
		t.Fatalf("read-only Open of an empty schema: %v, want ErrSchemaOlder", err)
	}
}

// N writers claim one key at once: exactly one claim commits, every other
// writer re-reads and sees it.
func TestApplyRaceOneClaimWins(t *testing.T) {
	j := openTest(t, Options{})
	const n = 16
	var runs, wins atomic.Int32
	var wg sync.WaitGroup
	results := make([]journal.Step, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := j.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
				runs.Add(1)
				ch, err := claim("k", time.Minute)(cur)
				if err == nil {
					ch.Step.Path = fmt.Sprintf("/writer/%d", i)
				}
				return ch, err
			})
			if err != nil {
				t.Errorf("Apply %d: %v", i, err)
			}
			if s.Path == fmt.Sprintf("/writer/%d", i) {
				wins.Add(1)
			}
			results[i] = s
		}()
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d writers got their own claim back, want exactly 1", wins.Load())
	}
	for i, s := range results {
		if s.Path != results[0].Path || s.Fence != 1 || s.Revision != 1 {
			t.Errorf("writer %d saw path %s fence %d revision %d, want the one winner's (path %s, fence 1, revision 1)",
				i, s.Path, s.Fence, s.Revision, results[0].Path)
		}
	}
	if runs.Load() < n {
		t.Errorf("mutation ran %d times for %d writers", runs.Load(), n)
	}
	evs, err := j.Events(0, 0)
	if err != nil || len(evs) != 1 || evs[0].KeySeq != 1 || evs[0].Type != "started" {
		t.Fatalf("events = %+v, %v; want the one started event, key_seq 1", evs, err)
	}
	mustCheck(t, j)
}

// Concurrent changes of one existing key are all applied, one after the
// other, with gapless per-key numbers.
func TestApplyRaceSerializesChanges(t *testing.T) {
	j := openTest(t, Options{})
	mustApply(t, j, "k", claim("k", 0))
	const n = 12
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := j.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
				s := *cur
				s.Attempt++
				return journal.Change{Step: s, Event: "attempt"}, nil
			})
			if err != nil {
				t.Errorf("Apply: %v", err)
			}
		}()
	}
	wg.Wait()
	s, err := j.Get("k")
	if err != nil || s.Attempt != n || s.Revision != n+1 {
		t.Fatalf("Get = attempt %d revision %d, %v; want %d, %d", s.Attempt, s.Revision, err, n, n+1)
	}
	evs, _ := j.Events(0, 0)
	for i, e := range evs {
		if e.KeySeq != uint64(i+1) || (i > 0 && e.Seq <= evs[i-1].Seq) {
			t.Errorf("event %d: seq %d key_seq %d; want key_seq %d and increasing seqs", i, e.Seq, e.KeySeq, i+1)
		}
	}
	mustCheck(t, j)
}

// A replica takes a step over; the first owner's late outcome is refused
// and changes nothing.
func TestStaleOwnerFenced(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{DSN: a.opts.DSN, Schema: a.Schema()})
	if a.Epoch() == b.Epoch() {
		t.Fatalf("two Opens share epoch %d", a.Epoch())
	}
	first := mustApply(t, a, "k", claim("k", time.Minute))
	taken := mustApply(t, b, "k", func(cur *journal.Step) (journal.Change, error) {
		s := *cur
		s.Hold, s.HoldReason = journal.HoldNeedsReview, "owner lost"
		return journal.Change{Step: s, Claim: true, Event: "takeover"}, nil
	})
	if taken.Epoch != b.Epoch() || taken.Fence != first.Fence+1 {
		t.Fatalf("takeover claim = epoch %d fence %d, want %d, %d", taken.Epoch, taken.Fence, b.Epoch(), first.Fence+1)
	}
	_, err := a.Apply(context.Background(), "k", commit(first.Epoch, first.Fence, "late"))
	var fe *journal.FencedError
	if !errors.As(err, &fe) || fe.Epoch != b.Epoch() || fe.Fence != taken.Fence {
		t.Fatalf("late outcome: %v, want a FencedError naming the new claim", err)
	}
	if err := a.Renew(context.Background(), "k", first.Epoch, first.Fence, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("stale Renew: %v, want ErrFenced", err)
	}
	got, _ := b.Get("k")
	if got.Status != journal.StatusStarted || got.Response != nil || got.Revision != taken.Revision {
		t.Fatalf("step after the stale write = %+v, want the takeover's", got)
	}
	mustCheck(t, b)
}

// Leases run on the database's clock, whatever the replica's; Renew moves
// them for the owner only.
func TestLeaseUsesDatabaseClock(t *testing.T) {
	skewed := func() time.Time { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }
	j := openTest(t, Options{Now: skewed})
	s := mustApply(t, j, "k", claim("k", 30*time.Second))
	var dbNow time.Time
	if err := j.pool.QueryRow(context.Background(), "SELECT now()").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if d := s.LeaseUntil.Sub(dbNow); d < 25*time.Second || d > 31*time.Second {
		t.Fatalf("LeaseUntil is %v after the database's now, want about 30s (ReadAt %v, skewed stamp %v)", d, s.ReadAt, s.UpdatedAt)
	}
	if d := s.LeaseUntil.Sub(s.ReadAt); d < 29*time.Second || d > 31*time.Second {
		t.Fatalf("LeaseUntil - ReadAt = %v, want about 30s", d)
	}
	if !s.UpdatedAt.Equal(skewed()) {
		t.Fatalf("UpdatedAt = %v, want the Now option's %v", s.UpdatedAt, skewed())
	}
	if err := j.Renew(context.Background(), "k", s.Epoch, s.Fence, time.Hour); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	got, err := j.Get("k")
	if err != nil || got.LeaseUntil.Sub(got.ReadAt) < 59*time.Minute {
		t.Fatalf("after Renew: lease until %v read at %v, %v; want an hour ahead", got.LeaseUntil, got.ReadAt, err)
	}
	// A non-claiming change keeps the lease.
	done := mustApply(t, j, "k", commit(s.Epoch, s.Fence, "ok"))
	if !done.LeaseUntil.Equal(got.LeaseUntil) {
		t.Errorf("outcome changed the lease: %v, want %v", done.LeaseUntil, got.LeaseUntil)
	}
	if err := j.Renew(context.Background(), "missing", 1, 1, time.Hour); !errors.Is(err, journal.ErrFenced) {
		t.Errorf("Renew of a missing step: %v, want ErrFenced", err)
	}
}

func TestResponseBodyRoundTrip(t *testing.T) {
	j := openTest(t, Options{})
	s := mustApply(t, j, "k", claim("k", 0))
	body := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<16)
	mustApply(t, j, "k", commit(s.Epoch, s.Fence, string(body)))
	got, err := j.Get("k")
	if err != nil || got.Response == nil || !bytes.Equal(got.Response.Body, body) {
		t.Fatalf("Get: body of %d bytes, %v; want the %d bytes written", len(got.Response.Body), err, len(body))
	}
	var inRecord bool
	if err := j.pool.QueryRow(context.Background(), "SELECT record->'response' ? 'body' FROM steps WHERE key = 'k'").Scan(&inRecord); err != nil || inRecord {
		t.Fatalf("response body kept in the JSON record (%v, %v); want it only in response_body", inRecord, err)
	}
	mustCheck(t, j)
}

// A transaction that started writing before an Apply but commits after it
// does not get skipped by a reader following the feed.
func TestEventsFeedWaitsForLateCommit(t *testing.T) {
	j := openTest(t, Options{})
	ctx := context.Background()
	late, err := j.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	// The late writer gets its transaction id first...
	if _, err := late.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	// ...then an Apply commits...
	mustApply(t, j, "early", claim("early", 0))
	evs, err := j.Events(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cursor uint64
	for _, e := range evs {
		cursor = e.Seq
	}
	if len(evs) != 0 {
		t.Fatalf("feed showed %d events while an older transaction was open, want 0", len(evs))
	}
	if last, _ := j.LastSeq(); last != cursor {
		t.Fatalf("LastSeq = %d, want %d (what the feed shows)", last, cursor)
	}
	// ...and the late writer records its event and commits last.
	if _, err := late.Exec(ctx, `INSERT INTO events (seq, xid, key, key_seq, time, type, from_status, to_status, hold,
		reason, note, epoch, fence) SELECT (pg_current_xact_id()::text::bigint << 10) + 1, pg_current_xact_id(),
		'late', 1, now(), 'started', 0, 2, 0, '', '', 0, 0`); err != nil {
		t.Fatal(err)
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Other sessions of the server (other tests) may still hold the feed
	// back for a moment; it never skips, so wait for both events.
	var keys []string
	for deadline := time.Now().Add(10 * time.Second); len(keys) < 2 && time.Now().Before(deadline); {
		evs, err = j.Events(cursor, 0)
		if err != nil {
			t.Fatal(err)
		}
		keys = keys[:0]
		for _, e := range evs {
			keys = append(keys, e.Key)
		}
		if len(keys) < 2 {
			time.Sleep(20 * time.Millisecond) // the feed has no wake-up to wait on
		}
	}
	if strings.Join(keys, ",") != "late,early" {
		t.Fatalf("feed after %d = %v, want late,early (the late commit not skipped, in transaction order)", cursor, keys)
	}
}

func TestSecretFingerprintMismatchRefused(t *testing.T) {
	dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
	a := openTest(t, Options{DSN: dsn, Schema: schema, Secret: []byte("secret-of-replica-a-0123456789abc")})
	var stored string
	if err := a.pool.QueryRow(context.Background(), "SELECT value FROM meta WHERE name = 'secret_fingerprint'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != Fingerprint([]byte("secret-of-replica-a-0123456789abc")) || strings.Contains(stored, "replica-a") {
		t.Fatalf("stored fingerprint %q is not the secret's fingerprint", stored)
	}
	openTest(t, Options{DSN: dsn, Schema: schema, Secret: []byte("secret-of-replica-a-0123456789abc")})
	_, err := Open(context.Background(), Options{DSN: dsn, Schema: schema, Secret: []byte("secret-of-replica-b-0123456789abc")})
	if !errors.Is(err, ErrSecretMismatch) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "journal.secret_file") {
		t.Fatalf("Open with another secret: %v; want one line wrapping ErrSecretMismatch that names journal.secret_file", err)
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	p := pgtest.NewCutProxy(t, "127.0.0.1:1")
	p.SetMode(pgtest.Refuse)
	_, err := Open(context.Background(), Options{DSN: "postgres://postgres@" + p.Addr() + "/test?sslmode=disable", Schema: "unused"})
	if !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("Open of an unreachable database: %v, want ErrUnavailable", err)
	}
}

// openThrough opens a journal whose connections pass through a cutProxy.
// The pool has one connection, so that a test can prepare the statements
// on it first.
func openThrough(t *testing.T) (*Journal, *pgtest.CutProxy) { return openThroughConns(t, 1) }

func openThroughConns(t *testing.T, conns int32) (*Journal, *pgtest.CutProxy) {
	dsn, p := pgtest.Through(t, pgtest.DSN(t))
	return openTest(t, Options{DSN: dsn, MaxConns: conns}), p
}

// The database goes away between the read and the write: the claim is
// refused as unavailable and nothing is written; once it is back, the
// journal recovers by itself.
func TestCutBeforeWriteIsUnavailable(t *testing.T) {
	j, p := openThrough(t)
	_, err := j.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
		p.SetMode(pgtest.Refuse)
		j.pool.Reset()
		return claim("k", 0)(cur)
	})
	if !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("Apply with the database gone: %v, want ErrUnavailable", err)
	}
	if _, err := j.Get("k"); !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("Get with the database gone: %v, want ErrUnavailable", err)
	}
	p.SetMode(pgtest.Pass)
	if _, err := j.Get("k"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get after the database is back: %v, want ErrNotFound (nothing was written)", err)
	}
	mustApply(t, j, "k", claim("k", 0))
}

// The connection breaks after the write was sent but before the server
// saw it: the outcome is unknown to the caller, and the re-read shows that
// nothing was written.
func TestCutRequestIsCommitUnknown(t *testing.T) {
	j, p := openThrough(t)
	mustApply(t, j, "warm-up", claim("warm-up", 0))
	_, err := j.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
		p.SetMode(pgtest.DropRequests)
		return claim("k", 0)(cur)
	})
	if !errors.Is(err, journal.ErrCommitUnknown) {
		t.Fatalf("Apply with its request lost: %v, want ErrCommitUnknown", err)
	}
	p.SetMode(pgtest.Pass)
	if _, err := j.Get("k"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("re-read: %v, want ErrNotFound", err)
	}
}

// The connection breaks after COMMIT, before its acknowledgement: the
// caller hears ErrCommitUnknown, never success, and the re-read after
// reconnecting finds the claim committed.
func TestCutAfterCommitIsCommitUnknown(t *testing.T) {
	j, p := openThrough(t)
	mustApply(t, j, "warm-up", claim("warm-up", 0)) // prepares the statement: next time it executes at once
	_, err := j.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
		p.SetMode(pgtest.DropReplies)
		return claim("k", 0)(cur)
	})
	if !errors.Is(err, journal.ErrCommitUnknown) {
		t.Fatalf("Apply with its acknowledgement lost: %v, want ErrCommitUnknown", err)
	}
	p.SetMode(pgtest.Pass)
	s, err := j.Get("k")
	if err != nil || s.Status != journal.StatusStarted || s.Epoch != j.Epoch() {
		t.Fatalf("re-read: %+v, %v; want the committed claim", s, err)
	}
	mustCheck(t, j)
}

// A replica's final transition wakes another replica's watcher through
// NOTIFY.
func TestWatchWakesOtherReplica(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{DSN: a.opts.DSN, Schema: a.Schema()})
	s := mustApply(t, a, "k", claim("k", 0))
	ch, stop := b.Watch("k")
	defer stop()
	other, stopOther := b.Watch("other")
	defer stopOther()
	<-b.watch.listening
	mustApply(t, a, "k", commit(s.Epoch, s.Fence, "ok"))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10s of another replica's commit")
	}
	select {
	case <-other:
		t.Fatal("the watcher of another key was woken")
	default:
	}
	// Its own commits wake its own watchers without the database.
	own, stopOwn := a.Watch("k2")
	defer stopOwn()
	mustApply(t, a, "k2", claim("k2", 0))
	select {
	case <-own:
	default:
		t.Fatal("own write did not wake its watcher")
	}
}

// A step whose final transition committed between the waiter's read and
// its Watch sent no NOTIFY (nobody watched it yet): Watch wakes the waiter
// at once instead of leaving it to its polling. A step still in flight,
// or already marked by another waiter, does not.
func TestWatchWakesAtOnceForAStepAlreadyFinal(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{DSN: a.opts.DSN, Schema: a.Schema()})
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	s := mustApply(t, a, "k", claim("k", 0))
	inFlight, stop1 := b.Watch("k")
	defer stop1()
	if woken(inFlight) {
		t.Fatal("Watch woke its caller for a step still in flight")
	}
	mustApply(t, a, "k", commit(s.Epoch, s.Fence, "ok"))

	// Marked before (by the first watcher), final now: a second waiter
	// that read the step before the commit is woken at once.
	late, stop2 := b.Watch("k")
	defer stop2()
	if !woken(late) {
		t.Error("Watch of a step already committed (and marked before) did not wake its caller")
	}

	// Never marked, final before the mark.
	s2 := mustApply(t, a, "k2", claim("k2", 0))
	mustApply(t, a, "k2", commit(s2.Epoch, s2.Fence, "ok"))
	ch, stop3 := b.Watch("k2")
	defer stop3()
	if !woken(ch) {
		t.Error("Watch of a step committed before it was ever watched did not wake its caller")
	}

	// No step yet: nothing to wake for.
	none, stop4 := b.Watch("absent")
	defer stop4()
	if woken(none) {
		t.Error("Watch woke its caller for a step that does not exist")
	}
}

// countingTracer counts the statements sent.
// countingTracer counts the statements of calls, not the NOTIFYs the
// notifier sends after commits, off the caller's path (notify.go).
type countingTracer struct{ n atomic.Int32 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "pg_notify($1, k)") {
		c.n.Add(1)
	}
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A guarded call as the proxy makes it costs three statements: the Get
// that finds no step, the claim and the outcome, each write sent at once on
// what the journal knows (hints.go). A replay costs one read; an Apply
// with nothing known reads first.
func TestRoundTripsPerCall(t *testing.T) {
	tr := &countingTracer{}
	var observed atomic.Int32
	j := openTest(t, Options{tracer: tr, OnCommit: func(d time.Duration, batch int) {
		if d > 0 && batch == 1 {
			observed.Add(1)
		}
	}})
	mustApply(t, j, "warm", claim("warm", time.Minute)) // prepares the statements on the connection
	s := mustApply(t, j, "warm", commit(j.Epoch(), 1, "ok"))
	commitsBefore := j.Commits()
	for _, tc := range []struct {
		name string
		do   func()
		want int32
	}{
		{name: "get of a new key", want: 1, do: func() {
			if _, err := j.Get("k"); !errors.Is(err, journal.ErrNotFound) {
				t.Fatalf("get of a new key: %v", err)
			}
		}},
		{name: "claim", want: 1, do: func() { s = mustApply(t, j, "k", claim("k", time.Minute)) }},
		{name: "outcome", want: 1, do: func() { mustApply(t, j, "k", commit(s.Epoch, s.Fence, "ok")) }},
		{name: "replay", want: 1, do: func() {
			if _, err := j.Get("k"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "duplicate claim (no change)", want: 1, do: func() { mustApply(t, j, "k", claim("k", time.Minute)) }},
		{name: "claim, nothing known", want: 2, do: func() { mustApply(t, j, "k2", claim("k2", time.Minute)) }},
	} {
		before := tr.n.Load()
		tc.do()
		if got := tr.n.Load() - before; got != tc.want {
			t.Errorf("%s: %d statements, want %d", tc.name, got, tc.want)
		}
	}
	if got := j.Commits() - commitsBefore; got != 3 {
		t.Errorf("%d commits for two claims, an outcome, a replay and a duplicate; want 3", got)
	}
	if got := observed.Load(); got != 5 {
		t.Errorf("OnCommit saw %d commits, want 5 (2 warm-up, 2 claims, outcome)", got)
	}
}

// A schema name that needs quoting (capitals, a dash) is used as given.
func TestSchemaNameQuoted(t *testing.T) {
	name := "TG-Quoted_" + strings.TrimPrefix(pgtest.Schema(t), "tg_test_")
	j := openTest(t, Options{Schema: name})
	t.Cleanup(func() {
		_, _ = j.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	})
	mustApply(t, j, "k", claim("k", 0))
	var n int
	if err := j.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{name, "steps"}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("steps in schema %q: %d, %v", name, n, err)
	}
}

// Regression: Open ran CREATE SCHEMA IF NOT EXISTS, which PostgreSQL
// refuses to a role without CREATE on the database even when the schema
// exists. A role that may not create schemas uses the schema a DBA created
// for it.
func TestPrecreatedSchemaWithoutCreatePrivilege(t *testing.T) {
	admin := openTest(t, Options{}) // any connection with rights to set up the role
	ctx := context.Background()
	schema := pgtest.Schema(t)
	role := schema + "_role"
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"CREATE SCHEMA " + schema + " AUTHORIZATION " + role,
	} {
		if _, err := admin.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = admin.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		_, _ = admin.pool.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	cfg, err := pgx.ParseConfig(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, cfg.Database)
	var canCreate bool
	if err := admin.pool.QueryRow(ctx, "SELECT has_database_privilege($1, current_database(), 'CREATE')", role).Scan(&canCreate); err != nil || canCreate {
		t.Fatalf("the role may create schemas (%v, %v): the test would prove nothing", canCreate, err)
	}
	j, err := Open(ctx, Options{DSN: dsn, Schema: schema})
	if err != nil {
		t.Fatalf("Open as a role without CREATE on the database: %v", err)
	}
	defer j.Close()
	mustApply(t, j, "k", claim("k", 0))
}

func TestPingFollowsTheDatabase(t *testing.T) {
	j, p := openThrough(t)
	if err := j.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	p.SetMode(pgtest.Refuse)
	if err := j.Ping(context.Background()); !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("Ping with the database down: %v, want ErrUnavailable", err)
	}
	p.SetMode(pgtest.Pass)
	if err := j.Ping(context.Background()); err != nil {
		t.Fatalf("Ping after the database is back: %v", err)
	}
}

// Regression: a write whose session the server ended (FATAL 57P01) was
// reported as ErrUnavailable (not written), though a session can end after
// its commit. A backend terminated by the server while it writes: the write's outcome
// is unknown to the caller, never reported as not written.
func TestTerminatedBackendIsCommitUnknown(t *testing.T) {
	j := openTest(t, Options{MaxConns: 1})
	admin := openTest(t, Options{DSN: j.opts.DSN, Schema: j.Schema()})
	mustApply(t, j, "warm", claim("warm", 0))
	var pid uint32
	if err := j.pool.AcquireFunc(context.Background(), func(c *pgxpool.Conn) error {
		pid = c.Conn().PgConn().PID()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The write waits for a row lock the test holds; the backend is
	// terminated meanwhile.
	tx, err := admin.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), "SELECT 1 FROM steps WHERE key = 'warm' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := j.Apply(context.Background(), "warm", commit(j.Epoch(), 1, "ok"))
		done <- err
	}()
	eventually(t, func() bool {
		var waiting bool
		err := admin.pool.QueryRow(context.Background(),
			"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&waiting)
		return err == nil && waiting
	})
	if _, err := admin.pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, journal.ErrCommitUnknown) {
		t.Fatalf("Apply whose backend was terminated: %v, want ErrCommitUnknown", err)
	}
}

// eventually polls cond every 10ms for up to 10s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

// After an outage that killed the pool's idle connections, the first read
// does not fail on a dead connection: reads are tried once more.
func TestFirstReadAfterOutageSucceeds(t *testing.T) {
	j, p := openThrough(t)
	mustApply(t, j, "k", claim("k", 0))
	p.SetMode(pgtest.Refuse) // kills the idle connection
	p.SetMode(pgtest.Pass)
	if _, err := j.Get("k"); err != nil {
		t.Fatalf("first Get after the outage: %v", err)
	}
}

// An outage kills every pooled connection; the first write after it does
// not land on one of the dead ones.
func TestFirstCallAfterOutageWithManyConnections(t *testing.T) {
	j, p := openThroughConns(t, 4)
	var wg sync.WaitGroup
	for i := range 4 { // fill the pool
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("warm%d", i)
			mustApply(t, j, key, claim(key, 0))
		}()
	}
	wg.Wait()
	if n := j.pool.Stat().TotalConns(); n < 2 {
		t.Logf("the pool holds %d connections only", n)
	}
	p.SetMode(pgtest.Refuse)
	p.SetMode(pgtest.Pass)
	for i := range 4 {
		key := fmt.Sprintf("after%d", i)
		if _, err := j.Apply(context.Background(), key, claim(key, 0)); err != nil {
			t.Fatalf("call %d after the outage: %v", i, err)
		}
	}
}
