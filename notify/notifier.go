package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Feed is what the notifier reads of the journal: the event feed and the
// steps the events are about. Every journal backend is one.
type Feed interface {
	// Events returns up to limit events with seq > after, in seq order.
	Events(after uint64, limit int) ([]journal.Event, error)
	// LastSeq returns the seq of the newest event the feed shows.
	LastSeq() (uint64, error)
	// Get returns the key's step, or an error wrapping journal.ErrNotFound.
	Get(key string) (journal.Step, error)
}

// Webhook is one endpoint notified.
type Webhook struct {
	// URL receives a POST per event. It may be a secret: logs show only
	// its scheme and host.
	URL string
	// Secret keys the Toolguard-Signature header; nil sends none.
	Secret []byte
	// Format is the body's shape.
	Format Format
}

// Options configure a Notifier. Feed and Cursors are required; the zero
// value of every other field has the meaning its comment gives.
type Options struct {
	Webhooks []Webhook
	Feed     Feed
	Cursors  Cursors
	// Exclusive runs fn unless another notifier sharing the cursors runs
	// work of the same name (ran false); PostgreSQL's RunExclusive is
	// one. nil means this process is the only notifier of its journal
	// (bbolt).
	Exclusive func(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error)
	// DialContext opens the connections to the webhooks; serve passes the
	// proxy's egress-checked dialer, whose refusals wrap ErrRefused. nil
	// means a plain net.Dialer, with no egress checks (tests).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConsoleURL is the web console's base URL, for the step links of
	// the payloads; "" leaves them out.
	ConsoleURL string
	// MaxAttempts bounds the attempts at one event per webhook; 0 means
	// until delivered.
	MaxAttempts int
	// Backoff is the wait after a first failed attempt (0: 1s), doubled
	// for each further failure up to MaxBackoff (0: 5m), with jitter.
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one attempt (0: 10s).
	Timeout time.Duration
	// PollInterval is how often an idle worker reads the feed (0: 500ms).
	PollInterval time.Duration
	// UserAgent is sent with every delivery; "" sends "toolguard".
	UserAgent string
	// Metrics receives delivery counts and lags; nil records nothing.
	Metrics *Metrics
	// Logger receives deliveries, failures and refusals; nil discards.
	Logger *slog.Logger
	// Now returns the time deliveries are signed with; nil is time.Now.
	Now func() time.Time
	// Jitter returns a random number in [0, n); nil is math/rand/v2.
	Jitter func(n int64) int64
}

// batch is how many events a worker reads at once.
const batch = 500

// maxAnswer bounds what is read of an endpoint's answer (then dropped).
const maxAnswer = 64 << 10

// Notifier delivers hold notifications to its webhooks.
type Notifier struct {
	opts   Options
	hooks  []*hook
	client *http.Client
	log    *slog.Logger
	rec    recorder // opts.Metrics; tests observe it
}

// recorder is where workers report deliveries and lags.
type recorder interface {
	delivery(result string)
	setLag(webhook string, d time.Duration)
}

// New checks opts and builds a Notifier; it touches neither the journal
// nor the network.
func New(opts Options) (*Notifier, error) {
	if opts.Feed == nil || opts.Cursors == nil {
		return nil, fmt.Errorf("new notifier: %w: a feed and cursors are required", ErrOptions)
	}
	setDefaults(&opts)
	n := &Notifier{opts: opts, log: opts.Logger, rec: opts.Metrics}
	dial := opts.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	n.client = &http.Client{
		// No proxy from the environment: webhooks are dialled directly,
		// through the egress checks. No redirects: a 3xx is a failure.
		Transport: &http.Transport{DialContext: dial, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	seen := map[string]bool{}
	for i, w := range opts.Webhooks {
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("new notifier: %w: webhook %d: want an absolute http(s) URL", ErrOptions, i)
		}
		if _, err := w.Format.Body(Payload{}); err != nil {
			return nil, fmt.Errorf("new notifier: webhook %d: %w", i, err)
		}
		h := &hook{n: n, Webhook: w, name: cursorName(w.URL), label: strconv.Itoa(i), host: u.Scheme + "://" + u.Host}
		if seen[h.name] {
			return nil, fmt.Errorf("new notifier: %w: webhook %d: the same URL twice", ErrOptions, i)
		}
		seen[h.name] = true
		n.hooks = append(n.hooks, h)
	}
	return n, nil
}

func setDefaults(o *Options) {
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	o.MaxBackoff = max(o.MaxBackoff, o.Backoff)
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.UserAgent == "" {
		o.UserAgent = "toolguard"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = rand.Int64N
	}
}

// cursorName names a webhook's cursor after a hash of its URL, so that
// the URL (maybe a secret) is not stored, and the cursor follows the
// webhook whatever its position in the list.
func cursorName(u string) string {
	sum := sha256.Sum256([]byte(u))
	return "webhook-" + hex.EncodeToString(sum[:8])
}

// Init creates the cursor of every webhook that has none at the feed's
// end: a webhook added to the configuration is told of the events from
// then on, not of the journal's history. A cursor beyond the feed's end
// (the journal was replaced) is brought back to it. Call it before the
// proxy serves, so that no hold journaled after the start can fall before
// a new cursor.
func (n *Notifier) Init(ctx context.Context) error {
	for _, h := range n.hooks {
		if _, err := h.cursor(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// Run delivers until ctx ends, a worker per webhook, and returns when
// they all stopped. A delivery cut short by the end is made again by the
// next run: its cursor did not move.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range n.hooks {
		wg.Go(func() { h.run(ctx) })
	}
	wg.Wait()
	n.client.CloseIdleConnections()
}
