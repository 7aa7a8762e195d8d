package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Log keys.
const (
	logWebhook = "webhook" // index in the list
	logHost    = "host"    // scheme://host of its URL
	logSeq     = "seq"
	logKey     = "key"
	logType    = "type"
	logAttempt = "attempt"
	logError   = "error"
)

// hook is the worker of one webhook.
type hook struct {
	n *Notifier
	Webhook
	name  string // cursor name
	label string // index in the list: metrics and logs
	host  string // scheme://host: logs
	// lastErr is the last pass error logged, so that an outage is logged
	// when it starts and ends rather than at every poll.
	lastErr string
}

func (h *hook) logger() *slog.Logger {
	return h.n.log.With(slog.String(logWebhook, h.label), slog.String(logHost, h.host))
}

// run makes a pass at every poll until ctx ends.
func (h *hook) run(ctx context.Context) {
	tick := time.NewTicker(h.n.opts.PollInterval)
	defer tick.Stop()
	for {
		err := h.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		h.report(err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// report logs a pass's error when it differs from the last one, and the
// recovery.
func (h *hook) report(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case msg == h.lastErr:
	case errors.Is(err, ErrCursorMoved):
		h.logger().Info("notifications: another replica delivered meanwhile; reading the cursor again", logError, msg)
	case err != nil:
		h.logger().Warn("notifications: pass failed; retrying at the next poll", logError, msg)
	default:
		h.logger().Info("notifications: pass succeeded again")
	}
	h.lastErr = msg
}

// pass delivers what the feed holds after the cursor, under the
// exclusive lock of this webhook when replicas share the cursors.
func (h *hook) pass(ctx context.Context) error {
	if h.n.opts.Exclusive == nil {
		return h.drain(ctx)
	}
	ran, err := h.n.opts.Exclusive(ctx, "notify/"+h.name, h.drain)
	if !ran && err == nil {
		h.n.rec.setLag(h.label, 0) // another replica delivers
	}
	return err
}

// cursor loads the webhook's cursor, creating it at the feed's end when
// there is none. At start, a cursor beyond the feed's end (a bbolt journal
// restored from an older backup, or replaced by a new one, beside the
// cursor file) is brought back to it, or the holds of the new journal's
// first seqs would be skipped.
func (h *hook) cursor(ctx context.Context, atStart bool) (uint64, error) {
	seq, ok, err := h.n.opts.Cursors.Load(ctx, h.name)
	if err != nil {
		return 0, fmt.Errorf("load cursor of webhook %s: %w", h.label, err)
	}
	if ok && !atStart {
		return seq, nil
	}
	last, err := h.n.opts.Feed.LastSeq()
	if err != nil {
		return 0, fmt.Errorf("read the event feed's end: %w", err)
	}
	if ok && seq <= last {
		return seq, nil
	}
	if ok {
		h.logger().Warn("notifications: the event feed ends before this webhook's cursor (a journal restored from a backup, or a new one); starting at the feed's end",
			"cursor", seq, logSeq, last)
	}
	if _, err := h.n.opts.Cursors.Store(ctx, h.name, seq, last); err != nil {
		return 0, fmt.Errorf("create cursor of webhook %s: %w", h.label, err)
	}
	// Another notifier may have moved it first: read what won.
	existed := ok
	if seq, _, err = h.n.opts.Cursors.Load(ctx, h.name); err != nil {
		return 0, fmt.Errorf("load cursor of webhook %s: %w", h.label, err)
	}
	if !existed {
		h.logger().Info("notifications: new webhook starts at the event feed's end", logSeq, seq)
	}
	return seq, nil
}

// drain delivers every notifiable event after the cursor, in order,
// moving the cursor past each one delivered (or given up) and past the
// events that are not notified.
func (h *hook) drain(ctx context.Context) error {
	cur, err := h.cursor(ctx, false)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		evs, err := h.n.opts.Feed.Events(cur, batch)
		if err != nil {
			return fmt.Errorf("read events after %d: %w", cur, err)
		}
		if len(evs) == 0 {
			h.n.rec.setLag(h.label, 0)
			return nil
		}
		for _, e := range evs {
			kind, ok := KindOf(e)
			if !ok {
				continue
			}
			if err := h.deliver(ctx, e, kind); err != nil {
				return err
			}
			if err := h.advance(ctx, cur, e.Seq); err != nil {
				return err
			}
			cur = e.Seq
		}
		if last := evs[len(evs)-1].Seq; last > cur {
			if err := h.advance(ctx, cur, last); err != nil {
				return err
			}
			cur = last
		}
	}
	return ctx.Err()
}

// advance moves the cursor from prev to next.
func (h *hook) advance(ctx context.Context, prev, next uint64) error {
	stored, err := h.n.opts.Cursors.Store(ctx, h.name, prev, next)
	switch {
	case err != nil:
		return fmt.Errorf("move cursor of webhook %s to %d: %w", h.label, next, err)
	case !stored:
		return fmt.Errorf("move cursor of webhook %s from %d: %w", h.label, prev, ErrCursorMoved)
	}
	return nil
}

// deliver sends event e until the endpoint takes it, the attempts are
// spent, or the egress policy refuses the address; it returns an error
// only when the event must be tried again by a later pass (ctx ended, the
// step could not be read).
func (h *hook) deliver(ctx context.Context, e journal.Event, kind Kind) error {
	var step *journal.Step
	st, err := h.n.opts.Feed.Get(e.Key)
	switch {
	case err == nil:
		step = &st
	case !errors.Is(err, journal.ErrNotFound): // not found: removed by retention; say what the event says
		return fmt.Errorf("read step %s: %w", e.Key, err)
	}
	body, err := h.Format.Body(newPayload(e, kind, step, h.n.opts.ConsoleURL))
	if err != nil {
		return err
	}
	log := h.logger().With(slog.Uint64(logSeq, e.Seq), slog.String(logKey, e.Key), slog.String(logType, kind.String()))
	o := h.n.opts
	for attempt := 1; ; attempt++ {
		h.n.rec.setLag(h.label, o.Now().Sub(e.Time))
		err := h.send(ctx, e.Seq, body)
		switch {
		case err == nil:
			h.n.rec.delivery(ResultDelivered)
			log.Info("notification delivered", logAttempt, attempt)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrRefused):
			h.n.rec.delivery(ResultRefused)
			log.Error("notification not delivered: the address is refused (egress.deny or toolguard's own listener); fix notify.webhooks", logError, err.Error())
			return nil
		}
		h.n.rec.delivery(ResultFailed)
		if o.MaxAttempts > 0 && attempt >= o.MaxAttempts {
			h.n.rec.delivery(ResultDropped)
			log.Error("notification dropped: every attempt failed", logAttempt, attempt, logError, err.Error())
			return nil
		}
		wait := backoff(attempt, o.Backoff, o.MaxBackoff, o.Jitter)
		log.Warn("notification attempt failed; retrying", logAttempt, attempt, "retry_in", wait, logError, err.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// send makes one attempt at delivering body, the event seq's.
func (h *hook) send(ctx context.Context, seq uint64, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("post to %s: %w", h.host, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", h.n.opts.UserAgent)
	req.Header.Set(HeaderEventID, strconv.FormatUint(seq, 10))
	if h.Secret != nil {
		req.Header.Set(HeaderSignature, Sign(h.Secret, h.n.opts.Now(), body))
	}
	resp, err := h.n.client.Do(req)
	if err != nil {
		// *url.Error prints the whole URL, which may be a secret.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to %s: %w", h.host, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post to %s: %w: %s", h.host, ErrStatus, resp.Status)
	}
	return nil
}
