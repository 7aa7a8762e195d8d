package metrics

import (
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/rules"
)

// Metrics are toolguard's Prometheus metrics. Labels carry only rule names
// and fixed words, never a credential, a key or a body. A nil *Metrics
// records nothing: every method may be called on it.
type Metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	passthrough   prometheus.Counter // requests{outcome="passthrough"}, resolved once: it is on every read
	upstream      *prometheus.HistogramVec
	commit        prometheus.Histogram
	commitBatch   prometheus.Histogram
	recoveries    *prometheus.CounterVec
	verifications *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	truncated     prometheus.Counter
	swept         prometheus.Counter
	sweptAt       prometheus.Gauge
	holdsExpired  prometheus.Counter
	writeFailures prometheus.Counter
	observedCalls *prometheus.CounterVec
}

// New creates the metrics on a new registry, with Go runtime and process
// collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_requests_total",
			Help: "Proxied requests by api, route and outcome (forwarded, replayed, recovered, blocked, passthrough)."}, []string{"api", "route", "outcome"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolguard_upstream_duration_seconds",
			Help: "Duration of guarded upstream calls.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"api", "route"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "toolguard_journal_commit_duration_seconds",
			Help: "Duration of durable journal commits (fsync included).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14)}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "toolguard_journal_commit_batch_size",
			Help: "Journal writes carried by one group commit.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_recoveries_total",
			Help: "Interrupted calls resolved, by strategy (native, lookup, none) and result (resent, found, held)."}, []string{"strategy", "result"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_verifications_total",
			Help: "Verification results: verified, not_visible, discarded."}, []string{"result"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_rejected_total",
			Help: "Requests refused before anything was sent, by reason."}, []string{"reason"}),
		truncated: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolguard_responses_truncated_total",
			Help: "Guarded responses larger than limits.max_stored_response: passed on whole, stored as a hash."}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolguard_sweeper_removed_total",
			Help: "Steps removed by the retention sweeper."}),
		sweptAt: prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolguard_sweeper_last_run_timestamp_seconds",
			Help: "When the retention sweeper last finished a pass."}),
		holdsExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolguard_holds_expired_total",
			Help: "Holds for approval removed unapproved after journal.hold_expiry (never sent)."}),
		writeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolguard_journal_write_failures_total",
			Help: "Journal writes that failed (disk full, I/O error); the proxy is not ready until one succeeds again."}),
		observedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_observed_total",
			Help: "Calls of observe mode, forwarded untouched, by api, route and what enforcement would have done (forward, replay, wait, lookup, hold_approval, hold_ambiguous, refuse_invalid_body, refuse_payload_mismatch, refuse_body_too_large)."},
			[]string{"api", "route", "would"}),
	}
	m.passthrough = m.requests.WithLabelValues("", "", OutcomePassthrough)
	m.precreate()
	reg.MustRegister(m.requests, m.upstream, m.commit, m.commitBatch, m.recoveries, m.verifications, m.rejected, m.truncated, m.swept, m.sweptAt,
		m.holdsExpired, m.writeFailures, m.observedCalls, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Values of the outcome label of toolguard_requests_total: the words of
// the Toolguard-Outcome header (proxy.Outcome*, which a test keeps equal),
// and observed for a call of observe mode.
const (
	OutcomeForwarded   = "forwarded"
	OutcomeReplayed    = "replayed"
	OutcomeRecovered   = "recovered"
	OutcomeBlocked     = "blocked"
	OutcomePassthrough = "passthrough"
	OutcomeObserved    = "observed"
)

// Label values of the counters with a fixed vocabulary.
var (
	rejectReasons      = []string{"draining", "in_flight_limit", "body_buffer", "body_timeout", "body_too_large", "invalid_body", "headers_too_large", "unmatched", "egress", "no_credential", "too_many_holds"}
	recoveryResults    = []string{"resent", "found", "held"}
	verificationResult = []string{"verified", "not_visible", "discarded"}
)

// RejectReasons are the reasons of toolguard_rejected_total, each
// precreated at zero; Reject takes one of them.
func RejectReasons() []string { return slices.Clone(rejectReasons) }

// precreate makes every counter with a fixed vocabulary exist at zero from
// the start, so rates and alerts see a series before its first event.
func (m *Metrics) precreate() {
	for _, r := range rejectReasons {
		m.rejected.WithLabelValues(r)
	}
	for _, st := range []lifecycle.Strategy{lifecycle.StrategyNone, lifecycle.StrategyNative, lifecycle.StrategyLookup} {
		for _, r := range recoveryResults {
			m.recoveries.WithLabelValues(st.String(), r)
		}
	}
	for _, r := range verificationResult {
		m.verifications.WithLabelValues(r)
	}
	m.requests.WithLabelValues("", "", OutcomeBlocked) // refused before a route was known
}

// PrecreateRoutes makes the request counters of every route exist at
// zero, and the observation counters of every route of an API in observe
// mode (mode is the global one).
func (m *Metrics) PrecreateRoutes(set *rules.Set, mode policy.Mode) {
	if m == nil || set == nil {
		return
	}
	for _, api := range set.APIs {
		observe := api.GuardMode(mode) == policy.ModeObserve
		for _, r := range api.Routes {
			if !r.Effect.Guarded() {
				continue
			}
			for _, o := range []string{OutcomeForwarded, OutcomeReplayed, OutcomeRecovered, OutcomeBlocked} {
				m.requests.WithLabelValues(api.Name, r.Name, o)
			}
			if !observe {
				continue
			}
			m.requests.WithLabelValues(api.Name, r.Name, OutcomeObserved)
			for _, w := range journal.WouldNames() {
				m.observedCalls.WithLabelValues(api.Name, r.Name, w)
			}
		}
	}
}

// JournalWriteFailed counts a journal write that failed.
func (m *Metrics) JournalWriteFailed() {
	if m != nil {
		m.writeFailures.Inc()
	}
}

// Counter counts the journal's held steps without counting every step;
// journal.Store provides it.
type Counter interface {
	CountOpen() (journal.OpenCounts, error)
}

// Sizer is the journal file's size; journal.Maintainer provides it.
type Sizer interface {
	Size() int64
}

var (
	_ Counter = journal.Store(nil)
	_ Sizer   = journal.Maintainer(nil)
)

// WatchState registers gauges read at scrape time: calls in flight (as
// inFlight counts them), held steps by hold, and the journal file's size
// when the backend has a file (file is nil otherwise).
func (m *Metrics) WatchState(inFlight func() int, src Counter, file Sizer) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolguard_in_flight_calls",
		Help: "Guarded calls in flight upstream."}, func() float64 { return float64(inFlight()) }))
	for _, h := range []journal.Hold{journal.HoldAwaitingApproval, journal.HoldNeedsReview} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolguard_held_steps",
			Help: "Steps held for an operator, by hold.", ConstLabels: prometheus.Labels{"hold": h.String()}}, func() float64 {
			c, err := src.CountOpen()
			if err != nil {
				return 0
			}
			return float64(c.Held[h])
		}))
	}
	if file != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolguard_journal_size_bytes",
			Help: "Size of the journal file."}, func() float64 { return float64(file.Size()) }))
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registerer is the registry the metrics page shows, for the collectors
// of other packages (telemetry's); nil for a nil *Metrics.
func (m *Metrics) Registerer() prometheus.Registerer {
	if m == nil {
		return nil
	}
	return m.reg
}

// ObserveCommit records one group commit; pass it as bolt.Options.OnCommit
// or postgres.Options.OnCommit.
func (m *Metrics) ObserveCommit(d time.Duration, batch int) {
	if m == nil {
		return
	}
	m.commit.Observe(d.Seconds())
	m.commitBatch.Observe(float64(batch))
}

// PassedThrough counts a request that no rule guards, passed through.
func (m *Metrics) PassedThrough() {
	if m != nil {
		m.passthrough.Inc()
	}
}

// Request counts a guarded request of api and route by its outcome (the
// words of the Toolguard-Outcome header, or OutcomeObserved).
func (m *Metrics) Request(api, route, outcome string) {
	if m != nil {
		m.requests.WithLabelValues(api, route, outcome).Inc()
	}
}

// Observed counts a call of observe mode by what enforcement would have
// done.
func (m *Metrics) Observed(api, route string, w journal.Would) {
	if m != nil {
		m.observedCalls.WithLabelValues(api, route, w.String()).Inc()
	}
}

// UpstreamCall records the duration of a guarded upstream call.
func (m *Metrics) UpstreamCall(api, route string, d time.Duration) {
	if m != nil {
		m.upstream.WithLabelValues(api, route).Observe(d.Seconds())
	}
}

// Recovery counts an interrupted call resolved by strategy, with result
// resent, found or held.
func (m *Metrics) Recovery(strategy lifecycle.Strategy, result string) {
	if m != nil {
		m.recoveries.WithLabelValues(strategy.String(), result).Inc()
	}
}

// Verification counts a verification result: verified, not_visible or
// discarded.
func (m *Metrics) Verification(result string) {
	if m != nil {
		m.verifications.WithLabelValues(result).Inc()
	}
}

// Reject counts a request refused before anything was sent, by reason
// (one of the fixed vocabulary precreated at zero).
func (m *Metrics) Reject(reason string) {
	if m != nil {
		m.rejected.WithLabelValues(reason).Inc()
	}
}

// Refused counts a request refused before any route guarded it: under
// requests{outcome="blocked"} with no api or route, and under
// rejected{reason} when reason is set.
func (m *Metrics) Refused(reason string) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues("", "", OutcomeBlocked).Inc()
	if reason != "" {
		m.rejected.WithLabelValues(reason).Inc()
	}
}

// TruncatedResponse counts a guarded response larger than
// limits.max_stored_response, stored as a hash.
func (m *Metrics) TruncatedResponse() {
	if m != nil {
		m.truncated.Inc()
	}
}

// Swept records a retention pass that removed n steps.
func (m *Metrics) Swept(n int) {
	if m != nil {
		m.swept.Add(float64(n))
		m.sweptAt.SetToCurrentTime()
	}
}

// Expired counts holds removed by the hold expiry.
func (m *Metrics) Expired(n int) {
	if m != nil {
		m.holdsExpired.Add(float64(n))
	}
}
