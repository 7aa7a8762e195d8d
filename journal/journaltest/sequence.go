package journaltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// feedLag bounds how long the suite waits for written events to show in
// the feed: a backend may hold them back while older transactions of other
// sessions are open (PostgreSQL reads below the oldest open transaction,
// so that it never skips a late commit).
const feedLag = 10 * time.Second

// waitEvents returns the events after seq (at most limit, 0 for the
// default) once the feed shows at least want of them, or what it shows
// after feedLag.
func waitEvents(t *testing.T, s journal.Store, after uint64, limit, want int) []journal.Event {
	t.Helper()
	deadline := time.Now().Add(feedLag)
	for {
		evs, err := s.Events(after, limit)
		if err != nil {
			t.Fatalf("events after %d: %v", after, err)
		}
		if len(evs) >= want || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(20 * time.Millisecond) // the feed has no wake-up to wait on
	}
}

// keyEvents returns the events of key, in seq order, once the feed shows
// at least want of them (see waitEvents).
func keyEvents(t *testing.T, s journal.Store, key string, want int) []journal.Event {
	t.Helper()
	deadline := time.Now().Add(feedLag)
	for {
		evs := keyEventsNow(t, s, key)
		if len(evs) >= want || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func keyEventsNow(t *testing.T, s journal.Store, key string) []journal.Event {
	t.Helper()
	var out []journal.Event
	var after uint64
	for {
		evs, err := s.Events(after, 100)
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		if len(evs) == 0 {
			return out
		}
		for _, e := range evs {
			if e.Key == key {
				out = append(out, e)
			}
		}
		after = evs[len(evs)-1].Seq
	}
}

// checkKeySeq checks that key's events are numbered 1..n without gaps,
// in seq order, and that the step's Revision is n.
func checkKeySeq(t *testing.T, s journal.Store, key string, n int) {
	t.Helper()
	evs := keyEvents(t, s, key, n)
	if len(evs) != n {
		t.Fatalf("%s has %d events, want %d", key, len(evs), n)
	}
	for i, e := range evs {
		if e.KeySeq != uint64(i+1) {
			t.Fatalf("%s: event %d (seq %d) has key_seq %d, want %d", key, i, e.Seq, e.KeySeq, i+1)
		}
	}
	if st := get(t, s, key); st.Revision != uint64(n) {
		t.Fatalf("%s: revision %d, want %d", key, st.Revision, n)
	}
}

// testRevisionAndKeySeq: every event of a key has the next per-key
// number, extra events included; Revision is the last of them.
func testRevisionAndKeySeq(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "a", claim("a", ""))
	apply(t, s, "b", claim("b", ""))
	st := apply(t, s, "a", func(cur *journal.Step) (journal.Change, error) {
		next := *cur
		next.LastError = "timeout"
		return journal.Change{Step: next, Event: journal.EventOutcomeUnknown,
			Extra: []journal.Event{{Type: journal.EventVersionChanged, Reason: "x"}, {Type: journal.EventTakenOver, Reason: "y"}}}, nil
	})
	if st.Revision != 4 {
		t.Fatalf("revision after 1+3 events: %d, want 4", st.Revision)
	}
	apply(t, s, "b", commit(st.VerifyBy))
	apply(t, s, "a", commit(st.VerifyBy))
	checkKeySeq(t, s, "a", 5)
	checkKeySeq(t, s, "b", 2)
	evs := keyEvents(t, s, "a", 5)
	if evs[1].Type != journal.EventOutcomeUnknown || evs[2].Type != journal.EventVersionChanged || evs[3].Type != journal.EventTakenOver {
		t.Fatalf("events of one change out of order: %+v", evs[1:4])
	}
	// A refused change uses no number.
	if _, err := s.Apply(context.Background(), "a", journal.Fenced(1<<60, 1, commit(st.VerifyBy))); err == nil {
		t.Fatal("stale write accepted")
	}
	apply(t, s, "a", set(journal.EventResponseHashed, func(*journal.Step) {}))
	checkKeySeq(t, s, "a", 6)
}

// testConcurrentRevisions: concurrent writers of one key leave gapless
// per-key numbers and a global seq that increases with them.
func testConcurrentRevisions(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "k", claim("k", ""))
	const writers, each = 8, 5
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Apply(context.Background(), "k", set(journal.EventOutcomeUnknown, func(st *journal.Step) { st.Attempt++ })); err != nil {
					t.Errorf("apply: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	checkKeySeq(t, s, "k", 1+writers*each)
	evs := keyEvents(t, s, "k", 1+writers*each)
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("seq not increasing with key_seq: %d then %d", evs[i-1].Seq, evs[i].Seq)
		}
	}
}

// testEventsOrder: Events returns events after a seq, in increasing seq
// order, at most limit; LastSeq is the newest.
func testEventsOrder(t *testing.T, open Opener) {
	s := fresh(t, open)
	if seq, err := s.LastSeq(); err != nil || seq != 0 {
		t.Fatalf("empty journal: LastSeq %d, %v", seq, err)
	}
	if evs, err := s.Events(0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("empty journal: events %+v, %v", evs, err)
	}
	for i := 0; i < 7; i++ {
		apply(t, s, keyOf("e", i), claim(keyOf("e", i), ""))
	}
	all := waitEvents(t, s, 0, 0, 7)
	if len(all) != 7 {
		t.Fatalf("events: %d, want 7", len(all))
	}
	for i, e := range all {
		if e.Key != keyOf("e", i) || (i > 0 && e.Seq <= all[i-1].Seq) {
			t.Fatalf("event %d: %+v (previous seq %d)", i, e, all[max(i-1, 0)].Seq)
		}
	}
	last, err := s.LastSeq()
	if err != nil || last != all[6].Seq {
		t.Fatalf("LastSeq %d, %v; want %d", last, err, all[6].Seq)
	}
	page, err := s.Events(all[2].Seq, 3)
	if err != nil || len(page) != 3 || page[0].Seq != all[3].Seq || page[2].Seq != all[5].Seq {
		t.Fatalf("events after %d limit 3: %+v, %v", all[2].Seq, page, err)
	}
	if rest, err := s.Events(last, 10); err != nil || len(rest) != 0 {
		t.Fatalf("events after the last: %+v, %v", rest, err)
	}
}

// testReadYourWrites: a Get after Apply returns what Apply wrote, for
// every kind of write, including one that changed only a detail.
func testReadYourWrites(t *testing.T, open Opener) {
	s := fresh(t, open)
	for i := 0; i < 20; i++ {
		st := apply(t, s, "k", claim("k", ""))
		if got := get(t, s, "k"); got.Attempt != st.Attempt || got.Fence != st.Fence || got.Revision != st.Revision {
			t.Fatalf("round %d: Get attempt %d fence %d rev %d, Apply wrote %d %d %d", i, got.Attempt, got.Fence, got.Revision, st.Attempt, st.Fence, st.Revision)
		}
		apply(t, s, "k", set(journal.EventOutcomeUnknown, func(st *journal.Step) { st.LastError = keyOf("err", i) }))
		if got := get(t, s, "k"); got.LastError != keyOf("err", i) {
			t.Fatalf("round %d: Get sees last error %q", i, got.LastError)
		}
		if got := get(t, s, "k"); got.ReadAt.IsZero() {
			t.Fatal("Get left ReadAt zero")
		}
	}
	lst, err := s.List(journal.Filter{Status: journal.StatusStarted})
	if err != nil || len(lst) != 1 || lst[0].LastError != keyOf("err", 19) {
		t.Fatalf("List after writes: %+v, %v", lst, err)
	}
	if lst[0].ReadAt.IsZero() {
		t.Fatal("List left ReadAt zero")
	}
}

// testNoLostUpdates: concurrent read-modify-write mutations of one key
// each see the previous one's write (a backend that writes optimistically
// runs a mutation again on the newer record); readers never see a value
// older than one they saw before.
func testNoLostUpdates(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "k", claim("k", ""))
	const writers, each = 6, 8
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			seen := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, err := s.Get("k")
				if err != nil {
					t.Errorf("get: %v", err)
					return
				}
				if st.Attempt < seen {
					t.Errorf("stale read: attempt %d after %d", st.Attempt, seen)
					return
				}
				seen = st.Attempt
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				st, err := s.Apply(context.Background(), "k", set(journal.EventOutcomeUnknown, func(st *journal.Step) { st.Attempt++ }))
				if err != nil {
					t.Errorf("apply: %v", err)
					return
				}
				if got, err := s.Get("k"); err != nil || got.Attempt < st.Attempt {
					t.Errorf("Get after Apply: attempt %d (%v), Apply wrote %d", got.Attempt, err, st.Attempt)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if st := get(t, s, "k"); st.Attempt != 1+writers*each {
		t.Fatalf("attempt %d after %d increments: updates were lost", st.Attempt, 1+writers*each)
	}
}
