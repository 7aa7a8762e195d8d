package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// benchKey is a key shaped like the proxy's: a hex sha256.
func benchKey(i int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:])
}

// benchStart is the proxy's claim of a new step, with the fields it sets.
func benchStart(key string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		s := journal.Step{Key: key, API: "payments", Route: "create_invoice", Status: journal.StatusStarted, Attempt: 1,
			Method: http.MethodPost, Host: "127.0.0.1:8080", Path: "/v1/invoices",
			BodyHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
		return journal.Change{Step: s, Event: "started", Claim: true}, nil
	}
}

// benchOutcome is the proxy's record of a 201 answer.
func benchOutcome(epoch, fence uint64) journal.Mutation {
	return journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
		s := *cur
		s.Status = journal.StatusCommitted
		s.Response = &journal.Response{Status: 201,
			Header:   http.Header{"Content-Type": {"application/json"}},
			Body:     []byte(`{"id":"inv_000123","amount":4200,"currency":"eur","status":"open"}`),
			BodyHash: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"}
		return journal.Change{Step: s}, nil
	})
}

// BenchmarkCall is the journal side of a guarded call as the proxy makes
// it: a claim of a new key, then its outcome, from conc callers.
func BenchmarkCall(b *testing.B) {
	for _, conc := range []int{1, 64} {
		b.Run("conc="+strconv.Itoa(conc), func(b *testing.B) {
			j := mustOpenPath(b, tempPath(b), Options{})
			var next atomic.Int64
			var wg sync.WaitGroup
			var applyNS atomic.Int64
			j.onApplied = func(d time.Duration) { applyNS.Add(int64(d)) }
			before := j.db.Stats()
			b.ResetTimer()
			for range conc {
				wg.Go(func() {
					ctx := context.Background()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						key := benchKey(i)
						st, err := j.Apply(ctx, key, benchStart(key))
						if err == nil {
							_, err = j.Apply(ctx, key, benchOutcome(st.Epoch, st.Fence))
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			after := j.db.Stats()
			d := after.Sub(&before)
			commits := float64(j.Commits())
			n := float64(b.N)
			b.ReportMetric(2*n/commits, "writes/commit")
			b.ReportMetric(float64(applyNS.Load())/n/2, "apply-ns/write")
			b.ReportMetric(float64(d.TxStats.GetSpillTime())/n/2, "spill-ns/write")
			b.ReportMetric(float64(d.TxStats.GetWriteTime())/n/2, "io-ns/write")
			b.ReportMetric(float64(d.TxStats.GetWrite())/n/2, "pages/write")
		})
	}
}
