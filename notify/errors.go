package notify

import "errors"

// Errors of the notifier, grouped by operation. Classify them with
// errors.Is; they are wrapped as "verb object: %w".

// Delivery.
var (
	// ErrRefused means the dialer refused the webhook's address: one of
	// toolguard's own listeners, or inside egress.deny. A DialContext
	// reports a refusal by wrapping it. Nothing was sent, and the event is
	// not retried for that webhook.
	ErrRefused = errors.New("webhook address refused by the egress policy")
	// ErrStatus means the endpoint answered with a status other than 2xx.
	ErrStatus = errors.New("webhook answered with an error status")
	// ErrCursorMoved means another notifier moved a cursor since this one
	// read it (a replica that took over): the pass ends and the next one
	// reads the cursor again.
	ErrCursorMoved = errors.New("notification cursor moved by another notifier")
)

// New.
var (
	// ErrOptions means Options lack something New needs (a feed, cursors)
	// or hold a webhook that cannot be used.
	ErrOptions = errors.New("invalid notifier options")
)

// Verify.
var (
	// ErrNoSignature means the header is missing, or holds no t= or no v1=.
	ErrNoSignature = errors.New("no toolguard signature")
	// ErrSignature means no v1= signature matches the body and secret.
	ErrSignature = errors.New("toolguard signature does not match")
	// ErrTimestamp means the signature's timestamp is outside the
	// tolerance: a replay, or a clock far off.
	ErrTimestamp = errors.New("toolguard signature timestamp outside the tolerance")
)
