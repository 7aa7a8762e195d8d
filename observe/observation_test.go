package observe

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// TestDecide: what enforcement would have done is the recovery table's
// answer on the key's record, as the journal and this process's
// observations show it, read without a claim.
func TestDecide(t *testing.T) {
	committed := journal.Step{Key: "k", Status: journal.StatusCommitted, BodyHash: "h"}
	tests := []struct {
		name string
		// journal is the key's record in the journal; nil: none.
		journal *journal.Step
		getErr  error
		// inFlight starts an observation of the key first; unsaved ends
		// one whose record is not written yet.
		inFlight bool
		unsaved  *journal.Step
		hold     bool // the version policy holds a new intent
		want     journal.Would
		wantWhy  string
		// newIntent: the version policy was asked.
		newIntent bool
	}{
		{name: "new key", want: journal.WouldForward, newIntent: true},
		{name: "new key, the version changed", hold: true, want: journal.WouldHoldAmbiguous, wantWhy: "version changed", newIntent: true},
		{name: "outcome stored", journal: &committed, want: journal.WouldReplay, wantWhy: "outcome stored"},
		{name: "journal unreadable", getErr: errors.New("disk on fire"), want: journal.WouldForward, wantWhy: "(the journal could not be read: disk on fire)", newIntent: true},
		{name: "the same call in flight here", inFlight: true, want: journal.WouldWait, wantWhy: "in flight"},
		{name: "an earlier observation, the same call in flight here", journal: &journal.Step{Key: "k", Status: journal.StatusCommitted, Observed: true},
			inFlight: true, want: journal.WouldWait, wantWhy: "in flight"},
		{name: "a guarded step, the same call in flight here", journal: &committed, inFlight: true, want: journal.WouldReplay},
		{name: "an answer not written yet", unsaved: &journal.Step{Key: "k", Status: journal.StatusCommitted, Observed: true}, want: journal.WouldReplay},
		{name: "a guarded step over an unsaved observation", journal: &journal.Step{Key: "k", Status: journal.StatusFailed, BodyHash: "h"},
			unsaved: &journal.Step{Key: "k", Status: journal.StatusCommitted, Observed: true}, want: journal.WouldReplay, wantWhy: "definitive failure"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig()
			g.j.getErr = tc.getErr
			if tc.journal != nil {
				g.j.steps = map[string]journal.Step{"k": *tc.journal}
			}
			if tc.inFlight {
				g.r.pending.start("k")
			}
			if tc.unsaved != nil {
				g.r.pending.start("k")
				g.r.pending.ended("k", tc.unsaved)
			}
			c := &fakeCall{hold: tc.hold}
			o := g.r.Start(t.Context(), c, testLine, fresh("k"))
			if o.would != tc.want {
				t.Errorf("would = %v (%s), want %v", o.would, o.why, tc.want)
			}
			if !strings.Contains(o.why, tc.wantWhy) {
				t.Errorf("why = %q, want it to say %q", o.why, tc.wantWhy)
			}
			if got := c.newIntent.Load() > 0; got != tc.newIntent {
				t.Errorf("version policy asked: %v, want %v", got, tc.newIntent)
			}
			if in, _ := g.r.pending.view("k"); !in {
				t.Error("the call is not counted in flight")
			}
		})
	}
}

// TestEnded: an ended observation writes its decision line and metrics
// at once and its record in the background, once; the record is an
// observation that joins no workflow and keeps no body.
func TestEnded(t *testing.T) {
	g := newRig()
	c := &fakeCall{}
	o := g.r.Start(t.Context(), c, testLine, fresh("k"))
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusCreated}, Head: []byte(`{"id":1}`), Sent: true}, "abc123")
	o.Ended(Attempt{Err: errors.New("again")}, "")
	o.Dropped()
	g.settle(t)

	if n := c.released.Load(); n != 1 {
		t.Errorf("released %d times, want once", n)
	}
	st := g.j.step(t, "k")
	if !st.Observed || st.Status != journal.StatusCommitted || st.Workflow != "" || st.Attempt != 1 {
		t.Errorf("record %+v; want a committed observation, attempt 1, no workflow", st)
	}
	if r := st.Response; r == nil || r.BodyHash != "abc123" || r.Body != nil || r.Status != http.StatusCreated {
		t.Errorf("response %+v; want 201, the answer's hash, no body", r)
	}
	wantMetrics := []string{"request shop create observed", "observed shop create forward"}
	if got := g.m.lines; strings.Join(got, "|") != strings.Join(wantMetrics, "|") {
		t.Errorf("metrics %q, want %q", got, wantMetrics)
	}
	lines := g.lines(t)
	if len(lines) != 1 {
		t.Fatalf("log lines %v, want one decision line", lines)
	}
	want := map[string]any{"msg": "observed call", "key": "k", "api": "shop", "route": "create", "mode": "observe",
		"would": "forward", "outcome": "observed", "status": float64(201)}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("decision line %s = %v, want %v", k, lines[0][k], v)
		}
	}
}

// TestEndedWithoutAnswer: an attempt that got no answer is on the line
// with status 0 and the upstream's error, and stays started.
func TestEndedWithoutAnswer(t *testing.T) {
	g := newRig()
	o := g.r.Start(t.Context(), &fakeCall{}, testLine, fresh("k"))
	o.Ended(Attempt{Err: errors.New("connection reset"), Sent: true}, "")
	g.settle(t)
	if st := g.j.step(t, "k"); st.Status != journal.StatusStarted || !st.Observed {
		t.Errorf("record %s observed=%v; want a started observation", st.Status, st.Observed)
	}
	l := g.lines(t)[0]
	if l["status"] != float64(0) || !strings.HasSuffix(l["why"].(string), "; upstream: connection reset") {
		t.Errorf("decision line status %v why %q; want 0 and the upstream's error", l["status"], l["why"])
	}
}

// TestStartRefused: a call enforcement would have refused is observed
// as that refusal, without reading the journal.
func TestStartRefused(t *testing.T) {
	g := newRig()
	g.j.getErr = errors.New("not to be read")
	c := &fakeCall{}
	o := g.r.StartRefused(t.Context(), c, testLine, fresh("refused"), journal.WouldRefuseInvalidBody, "missing field amount")
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusBadRequest}, Sent: true}, "")
	g.settle(t)
	if n := c.newIntent.Load(); n != 0 {
		t.Errorf("version policy asked %d times, want never", n)
	}
	g.j.getErr = nil
	if st := g.j.step(t, "refused"); !st.Observed {
		t.Errorf("record %+v; want an observation", st)
	}
	l := g.lines(t)[0]
	if l["would"] != journal.WouldRefuseInvalidBody.String() || l["why"] != "missing field amount" {
		t.Errorf("decision line would %v why %v; want the refusal", l["would"], l["why"])
	}
}

// TestDropped: a call that was not sent journals nothing and logs
// nothing, and is no longer in flight.
func TestDropped(t *testing.T) {
	g := newRig()
	c := &fakeCall{}
	o := g.r.Start(t.Context(), c, testLine, fresh("k"))
	o.Dropped()
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusOK}, Sent: true}, "")
	g.settle(t)
	if _, err := g.j.Get("k"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get = %v; want nothing journaled", err)
	}
	if n := c.released.Load(); n != 1 {
		t.Errorf("released %d times, want once", n)
	}
	if len(g.m.lines) != 0 || g.log.String() != "" {
		t.Errorf("metrics %v, log %q; want none", g.m.lines, g.log.String())
	}
}

// TestWriteFails: a journal that fails loses the observation, with a
// warning; the answer was not delayed, and the recorder becomes idle.
func TestWriteFails(t *testing.T) {
	g := newRig()
	g.j.applyErr = errors.New("journal unavailable")
	o := g.r.Start(t.Context(), &fakeCall{}, testLine, fresh("k"))
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusOK}, Sent: true}, "")
	g.settle(t)
	lines := g.lines(t)
	if len(lines) != 2 || lines[1]["msg"] != "observation not journaled" || lines[1]["key"] != "k" || lines[1]["level"] != "WARN" {
		t.Errorf("log lines %v; want the decision line, then a warning", lines)
	}
}

// TestWaitForWrites: Wait returns once the writes of ended observations
// are done, not before.
func TestWaitForWrites(t *testing.T) {
	g := newRig()
	g.j.block = make(chan struct{})
	o := g.r.Start(t.Context(), &fakeCall{}, testLine, fresh("k"))
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusOK}, Sent: true}, "")
	done := make(chan struct{})
	go func() {
		g.r.Wait()
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Wait returned while a write was in progress")
	case <-g.r.Idle():
		t.Fatal("idle while a write was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	close(g.j.block)
	<-done
	<-g.r.Idle()
	g.j.step(t, "k")
}

// TestNewRecorderDefaults: no metrics and no logger count and log
// nowhere.
func TestNewRecorderDefaults(t *testing.T) {
	j := &memJournal{}
	r := NewRecorder(j, nil, nil)
	o := r.Start(t.Context(), &fakeCall{}, testLine, fresh("k"))
	o.Ended(Attempt{Resp: &http.Response{StatusCode: http.StatusOK}, Sent: true}, "")
	<-r.Idle()
	r.Wait()
	j.step(t, "k")
}
