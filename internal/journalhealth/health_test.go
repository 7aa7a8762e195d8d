package journalhealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
)

// A mutation's own refusal (a payload mismatch, a fenced write) is not a
// journal failure.
func TestMonitorClassifies(t *testing.T) {
	mutErr := fmt.Errorf("approve: %w", errors.New("step is not held")) // a mutation's own refusal
	tests := []struct {
		name      string
		err, merr error
		wantReady bool
	}{
		{name: "success", wantReady: true},
		{name: "no change", merr: journal.ErrNoChange, wantReady: true},
		{name: "mutation refused", err: mutErr, merr: mutErr, wantReady: true},
		{name: "fenced", err: journal.ErrFenced, wantReady: true},
		{name: "cancelled caller", err: fmt.Errorf("apply step k: %w", context.Canceled), wantReady: true},
		{name: "disk full", err: fmt.Errorf("write step k: %w", syscall.ENOSPC), wantReady: false},
		{name: "closed", err: fmt.Errorf("apply step k: %w", journal.ErrClosed), wantReady: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &Monitor{} // a nil Log discards
			m.Record(tc.err, tc.merr)
			if got := m.failedAt.Load() == 0; got != tc.wantReady {
				t.Fatalf("healthy = %v, want %v", got, tc.wantReady)
			}
		})
	}
}

// store is a journal whose Apply runs the mutation on an empty step and
// then fails with err, and whose Ping answers ping.
type store struct {
	journal.Store
	err   error
	ping  error
	pings int
}

func (s *store) Apply(_ context.Context, _ string, m journal.Mutation) (journal.Step, error) {
	if _, err := m(nil); err != nil {
		return journal.Step{}, fmt.Errorf("apply: %w", err)
	}
	return journal.Step{}, s.err
}

func (s *store) Ping(context.Context) error { s.pings++; return s.ping }

// Every Apply through Recording is classified, the mutation's own error
// included, and a failure is counted and logged once.
func TestRecording(t *testing.T) {
	var logs strings.Builder
	m := &Monitor{Metrics: metrics.New(), Log: slog.New(slog.NewTextHandler(&logs, nil))}
	j := &store{}
	rec := m.Recording(j)
	refuse := func(*journal.Step) (journal.Change, error) { return journal.Change{}, errors.New("not held") }
	write := func(*journal.Step) (journal.Change, error) { return journal.Change{}, nil }

	for _, tc := range []struct {
		name      string
		err       error
		mutation  journal.Mutation
		wantReady bool
		wantLog   string // a line logged by this step
	}{
		{name: "write", mutation: write, wantReady: true},
		{name: "mutation refused", mutation: refuse, wantReady: true},
		{name: "disk full", err: syscall.ENOSPC, mutation: write, wantLog: "journal write failed"},
		{name: "disk still full", err: syscall.ENOSPC, mutation: write},
		{name: "refused while failing", mutation: refuse},
		{name: "write again", mutation: write, wantReady: true, wantLog: "journal writes succeed again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			j.err = tc.err
			rec.Apply(context.Background(), "k", tc.mutation)
			if got := m.failedAt.Load() == 0; got != tc.wantReady {
				t.Errorf("healthy = %v, want %v", got, tc.wantReady)
			}
			if got := logs.String(); !strings.Contains(got, tc.wantLog) || tc.wantLog == "" && got != "" {
				t.Errorf("logged %q, want %q", got, tc.wantLog)
			}
		})
	}
}

// Ready probes a failed journal at most once a second, and a probe that
// answers makes it ready again.
func TestReady(t *testing.T) {
	var logs strings.Builder
	m := &Monitor{Log: slog.New(slog.NewTextHandler(&logs, nil))}
	j := &store{}
	if !m.Ready(j) || j.pings != 0 {
		t.Fatalf("healthy: Ready false or probed (%d pings)", j.pings)
	}
	m.Record(syscall.EIO, nil)
	j.ping = syscall.EIO
	if m.Ready(j) || j.pings != 1 {
		t.Fatalf("failed journal that does not answer: Ready true or %d pings, want false, 1", j.pings)
	}
	j.ping = nil
	if m.Ready(j) || j.pings != 1 {
		t.Fatalf("within a second of a probe: Ready true or %d pings, want false, no new probe", j.pings)
	}
	m.probedAt.Store(0) // a second has passed
	logs.Reset()
	if !m.Ready(j) || j.pings != 2 {
		t.Fatalf("journal answering again: Ready false or %d pings, want true, 2", j.pings)
	}
	if !strings.Contains(logs.String(), "journal answers again: ready") {
		t.Errorf("logged %q, want the readiness back", logs.String())
	}
	if !m.Ready(j) || j.pings != 2 {
		t.Fatal("once ready again, Ready probes")
	}
}
