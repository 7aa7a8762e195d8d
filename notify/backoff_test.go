package notify

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	none := func(int64) int64 { return 0 }
	most := func(n int64) int64 { return n - 1 }
	tests := []struct {
		name    string
		attempt int
		jitter  func(int64) int64
		want    time.Duration
	}{
		{name: "first", attempt: 1, jitter: none, want: time.Second},
		{name: "doubles", attempt: 2, jitter: none, want: 2 * time.Second},
		{name: "doubles again", attempt: 4, jitter: none, want: 8 * time.Second},
		{name: "capped", attempt: 10, jitter: none, want: time.Minute},
		{name: "capped far out", attempt: 1000, jitter: none, want: time.Minute},
		{name: "jitter takes up to half", attempt: 1, jitter: most, want: 500 * time.Millisecond},
		{name: "jitter of the cap", attempt: 50, jitter: most, want: 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoff(tc.attempt, time.Second, time.Minute, tc.jitter); got != tc.want {
				t.Errorf("backoff(%d) = %v, want %v", tc.attempt, got, tc.want)
			}
		})
	}
	var asked []int64
	backoff(3, time.Second, time.Minute, func(n int64) int64 { asked = append(asked, n); return 0 })
	if len(asked) != 1 || asked[0] != int64(2*time.Second)+1 {
		t.Errorf("jitter asked for %v, want [0, 2s] in nanoseconds", asked)
	}
}
