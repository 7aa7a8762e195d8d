package notify

import "time"

// backoff is the wait after the failed attempt number attempt (1 for the
// first): base doubled for each earlier failure, capped at ceiling, less
// a random part of up to half of it, so that webhooks failing together
// do not retry together. jitter returns a number in [0, n).
func backoff(attempt int, base, ceiling time.Duration, jitter func(n int64) int64) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return d - time.Duration(jitter(int64(d/2)+1))
}
