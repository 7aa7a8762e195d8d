package postgres

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGuardedCall measures a guarded call's journal work, the claim
// and the outcome of a new key, with 1 caller and with 64 at once.
//
//	TOOLGUARD_TEST_POSTGRES=... go test -run '^$' -bench GuardedCall -benchtime 2000x ./journal/postgres
func BenchmarkGuardedCall(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("c%d", callers), func(b *testing.B) {
			j := openBench(b, int32(callers))
			var n atomic.Int64
			b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("k%d", n.Add(1))
					s, err := j.Apply(context.Background(), key, claim(key, time.Minute))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := j.Apply(context.Background(), key, commit(s.Epoch, s.Fence, `{"id":"inv_1"}`)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkReplay measures the journal work of a replay: one read.
func BenchmarkReplay(b *testing.B) {
	j := openBench(b, 64)
	s, err := j.Apply(context.Background(), "k", claim("k", time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := j.Apply(context.Background(), "k", commit(s.Epoch, s.Fence, "ok")); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := j.Get("k"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func openBench(b *testing.B, conns int32) *Journal {
	b.Helper()
	return openTestTB(b, Options{MaxConns: min(max(conns, 4), 8)})
}
