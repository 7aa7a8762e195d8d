package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/notify"
	"github.com/toolguard/toolguard/proxy"
)

// notifyCursorsPath is where a bbolt journal's notification cursors are
// kept: beside the journal.
func notifyCursorsPath(journalPath string) string { return journalPath + ".notify" }

// startNotify starts the hold notifications of cfg.Notify, delivering from
// j's event feed through the proxy's egress-checked dialer, and returns
// what stops them (and waits). With no webhook configured it starts
// nothing.
func startNotify(ctx context.Context, cfg config.Config, j journal.Store, nb notifyBackend, srv *proxy.Server,
	metrics *metrics.Metrics, log *slog.Logger, adminAddr string) (stop func(), err error) {
	if len(cfg.Notify.Webhooks) == 0 {
		return func() {}, nil
	}
	hooks := make([]notify.Webhook, 0, len(cfg.Notify.Webhooks))
	hosts := make([]string, 0, len(cfg.Notify.Webhooks))
	for _, w := range cfg.Notify.Webhooks {
		format, err := notify.ParseFormat(w.PayloadFormat.String())
		if err != nil {
			return nil, err
		}
		h := notify.Webhook{URL: w.URL, Format: format}
		if w.Secret != "" {
			h.Secret = []byte(w.Secret)
		}
		hooks = append(hooks, h)
		hosts = append(hosts, config.RedactURL(w.URL))
	}
	n, err := notify.New(notify.Options{
		Webhooks: hooks, Feed: j, Cursors: nb.cursors, Exclusive: nb.exclusive,
		DialContext: egressDial(srv), ConsoleURL: cfg.Notify.ConsoleBase(adminAddr),
		MaxAttempts: cfg.Notify.DeliveryAttempts, Backoff: cfg.Notify.Backoff, MaxBackoff: cfg.Notify.MaxBackoff,
		Timeout: cfg.Notify.DeliveryTimeout, UserAgent: "toolguard/" + version,
		Metrics: notify.NewMetrics(metrics.Registerer()), Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start hold notifications: %w", err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.Init(ictx); err != nil {
		return nil, fmt.Errorf("start hold notifications: %w", err)
	}
	rctx, stopRun := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(rctx); close(done) }()
	log.Info("hold notifications on", "webhooks", hosts, "console_url", cfg.Notify.ConsoleBase(adminAddr))
	return func() { stopRun(); <-done }, nil
}

// egressDial is the proxy's egress-checked dialer, its refusals marked as
// notify.ErrRefused so that they are not retried.
func egressDial(srv *proxy.Server) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := srv.EgressDial(ctx, network, addr)
		if errors.Is(err, egress.ErrRefused) {
			return nil, fmt.Errorf("%w: %w", notify.ErrRefused, err)
		}
		return c, err
	}
}
