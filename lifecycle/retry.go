package lifecycle

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// RetrySignals are what an upstream answer says about retrying it.
type RetrySignals struct {
	// After is how long to wait before a retry; zero when not said.
	After time.Duration
	// Should is the provider's explicit advice: +1 retry, -1 do not,
	// 0 not said.
	Should int8
}

// Retry headers providers send.
const (
	HeaderRetryAfter        = "Retry-After"
	HeaderRetryAfterMs      = "Retry-After-Ms"
	HeaderStripeShouldRetry = "Stripe-Should-Retry"
	HeaderXShouldRetry      = "X-Should-Retry"
)

// ReadRetrySignals reads retry-after-ms (preferred: more precise), then
// Retry-After as delay-seconds or an HTTP date relative to now, and
// Stripe-Should-Retry or x-should-retry ("true" or "false"). Malformed
// and negative values count as not said.
func ReadRetrySignals(h http.Header, now time.Time) RetrySignals {
	var s RetrySignals
	if v := strings.TrimSpace(h.Get(HeaderRetryAfterMs)); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			s.After = time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get(HeaderRetryAfter)); v != "" && s.After == 0 {
		if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
			s.After = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			s.After = t.Sub(now)
		}
	}
	for _, name := range []string{HeaderStripeShouldRetry, HeaderXShouldRetry} {
		switch strings.ToLower(strings.TrimSpace(h.Get(name))) {
		case "true":
			s.Should = 1
		case "false":
			s.Should = -1
		default:
			continue
		}
		break
	}
	return s
}

// Retryable decides whether a 4xx failure may be executed again: the
// provider's explicit advice wins; otherwise 408, 425 and 429 are.
func (s RetrySignals) Retryable(code int) bool {
	switch s.Should {
	case 1:
		return true
	case -1:
		return false
	}
	return RetryableStatus(code)
}

// Backoff reports whether a retryable failed step's stored answer asked
// to wait (Retry-After, retry-after-ms) longer than has passed since it
// was recorded.
func Backoff(st *journal.Step, now time.Time) bool {
	if st.Status != journal.StatusFailed || !st.Retryable || st.Response == nil {
		return false
	}
	after := ReadRetrySignals(st.Response.Header, st.UpdatedAt).After
	return after > 0 && now.Before(st.UpdatedAt.Add(after))
}

// RetryableStatus reports 4xx answers that mean "not done, try again".
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooEarly || code == http.StatusTooManyRequests
}
