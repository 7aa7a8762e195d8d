package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// noCheckpoints keeps the committer's transaction open for the test, so
// that acknowledged writes are only in the log.
func noCheckpoints(t *testing.T) {
	t.Helper()
	prev := checkpointEvery
	checkpointEvery = time.Hour
	t.Cleanup(func() { checkpointEvery = prev })
}

// crashImage copies the journal file and its log as a crash would leave
// them: the file as of its last checkpoint (the open transaction's pages
// are not written until it commits) and the log as synced.
func crashImage(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "journal.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// writeCalls makes n guarded calls' writes (claim, then outcome) and
// returns the steps as acknowledged.
func writeCalls(t *testing.T, b *Journal, from, n int) []journal.Step {
	t.Helper()
	var out []journal.Step
	for i := from; i < from+n; i++ {
		mustApply(t, b, keyN(i), start(keyN(i), "flow"))
		out = append(out, mustApply(t, b, keyN(i), transition(journal.StatusCommitted, journal.HoldNone, false)))
	}
	return out
}

// Every write acknowledged before a crash is in the journal after it, with
// its events, counters and indexes, although no checkpoint committed it;
// and the journal goes on from there (fences, event numbers).
func TestLogReplayAfterCrash(t *testing.T) {
	noCheckpoints(t)
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{Now: testClock()})
	writeCalls(t, b, 0, 3) // committed by the next checkpoint
	if err := b.sync("test"); err != nil {
		t.Fatal(err)
	}
	want := writeCalls(t, b, 3, 40) // only in the log
	if b.checkpoints.Load() != 1 {
		t.Fatalf("%d checkpoints, want 1", b.checkpoints.Load())
	}
	image := crashImage(t, path)

	c := mustOpenPath(t, image, Options{Now: testClock()})
	for _, w := range want {
		got, err := c.Get(w.Key)
		if err != nil || got.Status != journal.StatusCommitted || got.Fence != w.Fence || got.Revision != w.Revision {
			t.Fatalf("%s after the crash: %+v, %v; want %+v", w.Key, got, err, w)
		}
	}
	if n, _ := c.Count(); n.Status[journal.StatusCommitted] != 43 || n.Steps != 43 {
		t.Errorf("counts %+v, want 43 steps, all committed", n)
	}
	if seq, _ := c.LastSeq(); seq != 86 {
		t.Errorf("last event %d, want 86", seq)
	}
	if wf, err := c.GetWorkflow("", "flow"); err != nil || wf.Counts.Done != 43 {
		t.Errorf("workflow after the crash: %+v, %v; want 43 done", wf, err)
	}
	s := mustApply(t, c, "next", start("next", ""))
	if s.Fence != 44 {
		t.Errorf("the next claim has fence %d, want 44 (after the logged ones)", s.Fence)
	}
}

// A frame torn by the crash was never acknowledged: the frames before it
// are applied, it is not, and neither is anything after it.
func TestLogTornFrame(t *testing.T) {
	noCheckpoints(t)
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{Now: testClock()})
	writeCalls(t, b, 0, 2)
	off := b.lg.log.off
	writeCalls(t, b, 2, 1)
	image := crashImage(t, path)
	// Tear the last frame: its last byte never reached the disk.
	data, _ := os.ReadFile(image + "-wal")
	data[b.lg.log.off-1] ^= 0xff
	if err := os.WriteFile(image+"-wal", data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpenPath(t, image, Options{Now: testClock()})
	if s, err := c.Get(keyN(1)); err != nil || s.Status != journal.StatusCommitted {
		t.Errorf("%s: %+v, %v; want committed", keyN(1), s, err)
	}
	if s, err := c.Get(keyN(2)); err != nil || s.Status != journal.StatusStarted {
		t.Errorf("%s: %+v, %v; want its claim only (its outcome's frame is torn)", keyN(2), s, err)
	}
	if off == 0 {
		t.Fatal("no frame before the torn one")
	}
}

// A log beside a file it does not belong to is ignored: another journal's,
// or one whose frames the file has applied.
func TestLogOfAnotherJournal(t *testing.T) {
	noCheckpoints(t)
	a := mustOpenPath(t, tempPath(t), Options{Now: testClock()})
	writeCalls(t, a, 0, 2)
	imageA := crashImage(t, a.path)

	pathB := tempPath(t)
	b := mustOpenPath(t, pathB, Options{Now: testClock()})
	writeCalls(t, b, 100, 1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(imageA + "-wal")
	if err := os.WriteFile(pathB+"-wal", data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpenPath(t, pathB, Options{Now: testClock()})
	if _, err := c.Get(keyN(0)); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a step of the other journal's log: %v, want ErrNotFound", err)
	}

	// The image's own log, applied once; opening again applies nothing.
	d := mustOpenPath(t, imageA, Options{Now: testClock()})
	seq, _ := d.LastSeq()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	e := mustOpenPath(t, imageA, Options{Now: testClock()})
	if again, _ := e.LastSeq(); again != seq || seq != 4 {
		t.Errorf("events %d, then %d after opening again; want 4 both times", seq, again)
	}
}

// A read-only Open of a crashed journal applies its log first, so that an
// operator inspecting it sees every acknowledged write.
func TestReadOnlyOpenAppliesLog(t *testing.T) {
	noCheckpoints(t)
	b := mustOpenPath(t, tempPath(t), Options{Now: testClock()})
	want := writeCalls(t, b, 0, 5)
	image := crashImage(t, b.path)
	ro := mustOpenPath(t, image, Options{ReadOnly: true})
	steps, err := ro.List(journal.Filter{})
	if err != nil || len(steps) != len(want) {
		t.Fatalf("read-only list: %d steps, %v; want %d", len(steps), err, len(want))
	}
}

// A checkpoint that fails keeps its writes: they stay in the log and in
// the rebuilt transaction, reads that need them fail with ErrUnavailable
// instead of missing them, and the next checkpoint commits them.
func TestCheckpointFailure(t *testing.T) {
	noCheckpoints(t)
	b := mustOpen(t)
	writeCalls(t, b, 0, 1)
	if err := b.sync("test"); err != nil {
		t.Fatal(err)
	}
	var size int64
	b.rawView("size", func(bk *buckets) error { size = bk.tx.Size(); return nil })
	b.db.MaxSize = int(size)
	big := journal.Step{Key: "big", Status: journal.StatusFailed, LastError: fmt.Sprintf("%0*d", 1<<20, 0)}
	mustApply(t, b, "big", put(big))
	want := writeCalls(t, b, 1, 3)
	if _, err := b.List(journal.Filter{}); !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("list while the checkpoint fails: %v, want ErrUnavailable", err)
	}
	// Writes go on, on the rebuilt transaction.
	more := writeCalls(t, b, 4, 1)
	for _, w := range append(want, more...) {
		if s, err := b.Get(w.Key); err != nil || s.Revision != w.Revision {
			t.Errorf("%s: %+v, %v; want revision %d", w.Key, s, err, w.Revision)
		}
	}
	b.db.MaxSize = 0
	steps, err := b.List(journal.Filter{})
	if err != nil || len(steps) != 6 {
		t.Fatalf("list after the disk recovered: %d steps, %v; want 6", len(steps), err)
	}
}

// Between checkpoints, Get and GetWorkflow answer from the overlay what
// the open transaction holds, without asking for a checkpoint; other reads
// ask for one and see the same.
func TestReadsBetweenCheckpoints(t *testing.T) {
	noCheckpoints(t)
	b := mustOpen(t)
	writeCalls(t, b, 0, 1)
	if err := b.sync("test"); err != nil {
		t.Fatal(err)
	}
	before := b.checkpoints.Load()
	want := writeCalls(t, b, 1, 2)
	for _, w := range want {
		if s, err := b.Get(w.Key); err != nil || s.Revision != w.Revision || s.Status != journal.StatusCommitted {
			t.Errorf("get %s: %+v, %v; want %+v", w.Key, s, err, w)
		}
	}
	if wf, err := b.GetWorkflow("", "flow"); err != nil || wf.Counts.Done != 3 {
		t.Errorf("workflow: %+v, %v; want 3 done", wf, err)
	}
	if _, err := b.GetWorkflow("", "other"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("unknown workflow: %v, want ErrNotFound", err)
	}
	if got := b.checkpoints.Load(); got != before {
		t.Fatalf("%d checkpoints for Get and GetWorkflow, want none", got-before)
	}
	if n, err := b.Count(); err != nil || n.Steps != 3 {
		t.Errorf("count: %+v, %v; want 3 steps", n, err)
	}
	if got := b.checkpoints.Load(); got != before+1 {
		t.Errorf("%d checkpoints for Count, want 1", got-before)
	}
	if wf, err := b.GetWorkflow("", "flow"); err != nil || wf.Counts.Done != 3 {
		t.Errorf("workflow after the checkpoint: %+v, %v; want 3 done", wf, err)
	}
}

// A write outside the log (PutCheckpoint here) runs after a checkpoint and
// holding the committer's role: a read right after it sees it, not the
// overlay's older record, and the log never replays onto it.
func TestWriteOutsideTheLog(t *testing.T) {
	noCheckpoints(t)
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{Now: testClock()})
	writeCalls(t, b, 0, 2)
	if _, err := b.PutCheckpoint("", "flow", nil, []byte(`{"at":"step 2"}`)); err != nil {
		t.Fatal(err)
	}
	wf, err := b.GetWorkflow("", "flow")
	if err != nil || string(wf.Checkpoint) != `{"at":"step 2"}` || wf.Counts.Done != 2 {
		t.Fatalf("workflow right after PutCheckpoint: %+v, %v", wf, err)
	}
	writeCalls(t, b, 2, 1)
	image := crashImage(t, path)
	c := mustOpenPath(t, image, Options{Now: testClock()})
	wf, err = c.GetWorkflow("", "flow")
	if err != nil || string(wf.Checkpoint) != `{"at":"step 2"}` || wf.Counts.Done != 3 {
		t.Fatalf("workflow after the crash: %+v, %v; want the checkpoint and 3 done", wf, err)
	}
}

// FuzzLog feeds arbitrary bytes to the log's readers: a log is read after
// a crash, whatever it holds, and must end the replay, never panic.
func FuzzLog(f *testing.F) {
	p := &pending{step: journal.Step{Key: "k"}, data: []byte(`{"key":"k"}`), event: journal.Event{Key: "k", Type: "started"}, claimed: true}
	rec, err := appendRecord(nil, p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(appendFrame(nil, 7, 1, rec))
	f.Add(rec)
	f.Add([]byte(frameMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "j.db")
		if err := os.WriteFile(logPath(path), data, 0o600); err != nil {
			t.Fatal(err)
		}
		frames, err := scanLog(path, 7, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range append(frames, data) {
			recs, err := readRecords(fr)
			if err == nil {
				for _, r := range recs {
					if _, err := appendRecord(nil, &pending{step: journal.Step{Key: r.key}, data: r.data, event: r.event, extra: r.extra, claimed: r.claimed}); err != nil {
						t.Fatalf("a decoded record does not encode: %v", err)
					}
				}
			}
		}
	})
}
