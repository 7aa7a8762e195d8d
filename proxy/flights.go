package proxy

import (
	"time"

	"github.com/toolguard/toolguard/internal/flight"
)

// The calls in flight and the callers that came back for unfinished steps
// are kept by internal/flight. abandon.go still calls them by the names
// below; these wrappers go once it uses flight.Table and flight.Retries
// directly.

// flights is the server's flight.Table.
type flights struct{ *flight.Table }

func newFlights() *flights { return &flights{flight.NewTable()} }

func (f *flights) live(key string, now time.Time) *flight.Flight { return f.Live(key, now) }

// retries is the server's flight.Retries.
type retries struct{ flight.Retries }

func (r *retries) since(key string, cutoff time.Time) bool { return r.Since(key, cutoff) }
func (r *retries) forget(cutoff time.Time)                 { r.Forget(cutoff) }
