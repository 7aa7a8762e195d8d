package notify

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a delivery attempt, the result label of
// toolguard_notify_deliveries_total.
const (
	// ResultDelivered: the endpoint answered 2xx.
	ResultDelivered = "delivered"
	// ResultFailed: an attempt failed (no answer, or not 2xx); it is
	// retried unless it was the last.
	ResultFailed = "failed"
	// ResultDropped: an event's last attempt failed; it is not delivered
	// to that webhook (counted besides that attempt's failed).
	ResultDropped = "dropped"
	// ResultRefused: the egress policy refused the address; nothing was
	// sent, and the event is not retried.
	ResultRefused = "refused"
)

var results = []string{ResultDelivered, ResultFailed, ResultDropped, ResultRefused}

// Metrics are the notifier's Prometheus metrics. Labels carry only the
// result and the webhook's position in notify.webhooks, never its URL
// (which may be a secret). A nil *Metrics records nothing.
type Metrics struct {
	deliveries *prometheus.CounterVec
	lag        *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (the admin
// API's registry, which /metrics exposes).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolguard_notify_deliveries_total",
			Help: "Hold notification deliveries by result: delivered, failed (an attempt), dropped (an event given up), refused (egress)."}, []string{"result"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolguard_notify_lag_seconds",
			Help: "Age of the oldest hold notification not yet delivered, by webhook (its index in notify.webhooks); 0 when caught up."}, []string{"webhook"}),
	}
	for _, r := range results {
		m.deliveries.WithLabelValues(r)
	}
	reg.MustRegister(m.deliveries, m.lag)
	return m
}

func (m *Metrics) delivery(result string) {
	if m != nil {
		m.deliveries.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) setLag(webhook string, d time.Duration) {
	if m != nil {
		m.lag.WithLabelValues(webhook).Set(max(d, 0).Seconds())
	}
}
