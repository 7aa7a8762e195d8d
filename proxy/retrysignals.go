package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// retrySignals are what an upstream answer says about retrying it.
type retrySignals struct {
	// after is how long to wait before a retry; zero when not said.
	after time.Duration
	// should is the provider's explicit advice: +1 retry, -1 do not,
	// 0 not said.
	should int8
}

// Retry headers providers send.
const (
	headerRetryAfter        = "Retry-After"
	headerRetryAfterMs      = "Retry-After-Ms"
	headerStripeShouldRetry = "Stripe-Should-Retry"
	headerXShouldRetry      = "X-Should-Retry"
)

// readRetrySignals reads retry-after-ms (preferred: more precise), then
// Retry-After as delay-seconds or an HTTP date relative to now, and
// Stripe-Should-Retry or x-should-retry ("true" or "false"). Malformed
// and negative values count as not said.
func readRetrySignals(h http.Header, now time.Time) retrySignals {
	var s retrySignals
	if v := strings.TrimSpace(h.Get(headerRetryAfterMs)); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			s.after = time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get(headerRetryAfter)); v != "" && s.after == 0 {
		if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
			s.after = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			s.after = t.Sub(now)
		}
	}
	for _, name := range []string{headerStripeShouldRetry, headerXShouldRetry} {
		switch strings.ToLower(strings.TrimSpace(h.Get(name))) {
		case "true":
			s.should = 1
		case "false":
			s.should = -1
		default:
			continue
		}
		break
	}
	return s
}

// retryable decides whether a 4xx failure may be executed again: the
// provider's explicit advice wins; otherwise 408, 425 and 429 are.
func (s retrySignals) retryable(code int) bool {
	switch s.should {
	case 1:
		return true
	case -1:
		return false
	}
	return retryableStatus(code)
}

// backoff reports whether a retryable failed step's stored answer asked
// to wait (Retry-After, retry-after-ms) longer than has passed since it
// was recorded.
func backoff(st *journal.Step, now time.Time) bool {
	if st.Status != journal.StatusFailed || !st.Retryable || st.Response == nil {
		return false
	}
	after := readRetrySignals(st.Response.Header, st.UpdatedAt).after
	return after > 0 && now.Before(st.UpdatedAt.Add(after))
}
