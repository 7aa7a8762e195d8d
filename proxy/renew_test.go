package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// renewSpy reports each Renew by key and holds it until proceed lets it
// return.
type renewSpy struct {
	*memReplica
	calls   chan string
	proceed chan struct{}
}

func (r renewSpy) Renew(_ context.Context, key string, _, _ uint64, _ time.Duration) error {
	r.calls <- key
	<-r.proceed
	return nil
}

// Renewals repeat while a call runs; stop waits for one under way, and
// none starts after it.
func TestRenewWhileStop(t *testing.T) {
	mem := newMemJournal(time.Now)
	spy := renewSpy{memReplica: mem.replica(), calls: make(chan string, 16), proceed: make(chan struct{})}
	srv := newProxyOn(t, spy, mem.now, nativeRoute, nil, Options{}).srv
	const lease = 3 * time.Millisecond
	fenced := func(err error) { t.Errorf("fenced: %v", err) }

	stopA := srv.renewWhile(journal.Step{Key: "a", LeaseUntil: time.Now()}, lease, fenced, nil)
	for range 2 {
		if k := <-spy.calls; k != "a" {
			t.Fatalf("renewed %q, want a", k)
		}
		spy.proceed <- struct{}{}
	}
	if k := <-spy.calls; k != "a" { // a third renewal, under way
		t.Fatalf("renewed %q, want a", k)
	}
	stoppedA := make(chan struct{})
	go func() { stopA(); close(stoppedA) }()
	// A window, not a synchronisation: stop must not return within it.
	select {
	case <-stoppedA:
		t.Fatal("stop returned while a renewal was under way")
	case <-time.After(20 * time.Millisecond):
	}
	spy.proceed <- struct{}{}
	<-stoppedA

	// b's renewals span several of a's periods: a renewal of a now would
	// come among them.
	stopB := srv.renewWhile(journal.Step{Key: "b", LeaseUntil: time.Now()}, lease, fenced, nil)
	for range 4 {
		if k := <-spy.calls; k != "b" {
			t.Fatalf("renewed %q after its stop returned", k)
		}
		spy.proceed <- struct{}{}
	}
	close(spy.proceed)
	stopB()
}
