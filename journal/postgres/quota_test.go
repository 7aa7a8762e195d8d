package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// TestBudgetAcrossReplicas: replicas that create steps of one caller and
// route at once, each from its own pool, share the route's budget: of the
// creations racing at its edge, exactly the budget's calls are written.
func TestBudgetAcrossReplicas(t *testing.T) {
	j := openTest(t, Options{})
	replicas := []*Journal{j, openTest(t, Options{DSN: j.opts.DSN, Schema: j.Schema()}), openTest(t, Options{DSN: j.opts.DSN, Schema: j.Schema()})}
	const perReplica, calls = 6, 5
	budget := &journal.Budget{Calls: calls, Per: time.Minute}
	var written sync.WaitGroup
	var mu sync.Mutex
	var ok, over int
	start := make(chan struct{})
	for r, rep := range replicas {
		for i := range perReplica {
			written.Add(1)
			go func() {
				defer written.Done()
				<-start
				key := fmt.Sprintf("r%d-%d", r, i)
				_, err := rep.Apply(context.Background(), key, func(cur *journal.Step) (journal.Change, error) {
					ch, err := claim(key, time.Minute)(cur)
					ch.Step.CredentialMAC = "caller"
					ch.Budget = budget
					return ch, err
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, journal.ErrOverBudget):
					over++
				default:
					t.Errorf("%s: %v", key, err)
				}
			}()
		}
	}
	close(start)
	written.Wait()
	if ok != calls || over != len(replicas)*perReplica-calls {
		t.Fatalf("%d written, %d over budget; want %d and %d", ok, over, calls, len(replicas)*perReplica-calls)
	}
	mustCheck(t, j)
}
