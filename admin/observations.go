package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Observations: what enforcement would have done with the calls of observe
// mode (journal.EventObserved), counted by route from the event log, for
// GET /v1/observations and `toolguard report`.

// ObservationReport summarises the observations journaled since Since.
type ObservationReport struct {
	Since time.Time `json:"since"`
	// Observed counts the observed calls; Would counts them by what
	// enforcement would have done (journal.Would names).
	Observed int            `json:"observed"`
	Would    map[string]int `json:"would"`
	// Stopped counts the duplicates enforcement would have kept from the
	// provider (replay, wait); Held the calls it would have held for an
	// operator; Refused those it would have refused.
	Stopped int `json:"stopped"`
	Held    int `json:"held"`
	Refused int `json:"refused"`
	// Routes break the counts down by route, in api and route order.
	Routes []RouteObservations `json:"routes"`
}

// RouteObservations are the observations of one route.
type RouteObservations struct {
	API      string         `json:"api"`
	Route    string         `json:"route"`
	Observed int            `json:"observed"`
	Would    map[string]int `json:"would"`
	Stopped  int            `json:"stopped"`
	Held     int            `json:"held"`
	Refused  int            `json:"refused"`
	// Examples are keys of the calls enforcement would have stopped, held
	// or refused: up to MaxExamples for each would, the first ones seen.
	Examples map[string][]string `json:"examples,omitempty"`
}

// MaxExamples bounds the example keys of each route and would.
const MaxExamples = 3

// DefaultObservationWindow is how far back GET /v1/observations looks
// without ?since=.
const DefaultObservationWindow = 24 * time.Hour

// EventLog is the part of a journal observations are read from.
type EventLog interface {
	// Events returns up to limit events after seq, in order.
	Events(after uint64, limit int) ([]journal.Event, error)
	// LastSeq returns the seq of the newest event.
	LastSeq() (uint64, error)
	// Get returns the key's record or an error wrapping
	// journal.ErrNotFound.
	Get(key string) (journal.Step, error)
}

// observationPage is how many events one read of the log takes.
const observationPage = 1000

// Observations counts the observations of log recorded at or after since,
// of the steps show accepts (nil: all). An observation whose step is gone
// (removed by retention) is not counted: its route is not known anymore.
func Observations(log EventLog, since time.Time, show func(*journal.Step) bool) (ObservationReport, error) {
	out := ObservationReport{Since: since.UTC(), Would: map[string]int{}}
	after, err := firstAfter(log, since)
	if err != nil {
		return out, err
	}
	steps := map[string]*journal.Step{} // by key; nil: gone or not shown
	routes := map[[2]string]*RouteObservations{}
	for {
		evs, err := log.Events(after, observationPage)
		if err != nil {
			return out, fmt.Errorf("read observations: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
		for i := range evs {
			w, ok := evs[i].Would()
			if !ok || evs[i].Time.Before(since) {
				continue
			}
			st, err := stepOf(log, steps, evs[i].Key, show)
			if err != nil {
				return out, err
			}
			if st == nil {
				continue
			}
			id := [2]string{st.API, st.Route}
			r := routes[id]
			if r == nil {
				r = &RouteObservations{API: st.API, Route: st.Route, Would: map[string]int{}}
				routes[id] = r
			}
			r.count(w, st.Key)
			out.count(w)
		}
	}
	for _, r := range routes {
		out.Routes = append(out.Routes, *r)
	}
	slices.SortFunc(out.Routes, func(a, b RouteObservations) int {
		return strings.Compare(a.API+"\x00"+a.Route, b.API+"\x00"+b.Route)
	})
	if out.Routes == nil {
		out.Routes = []RouteObservations{}
	}
	return out, nil
}

// stepOf reads key's step once, through the cache steps; nil when it is
// gone or show refuses it.
func stepOf(log EventLog, steps map[string]*journal.Step, key string, show func(*journal.Step) bool) (*journal.Step, error) {
	if st, seen := steps[key]; seen {
		return st, nil
	}
	st, err := log.Get(key)
	switch {
	case err == nil && (show == nil || show(&st)):
		steps[key] = &st
	case err == nil, errors.Is(err, journal.ErrNotFound):
		steps[key] = nil
	default:
		return nil, fmt.Errorf("read observations: %w", err)
	}
	return steps[key], nil
}

func (r *ObservationReport) count(w journal.Would) {
	r.Observed++
	r.Would[w.String()]++
	switch {
	case w.Stopped():
		r.Stopped++
	case w.Held():
		r.Held++
	case w.Refused():
		r.Refused++
	}
}

func (r *RouteObservations) count(w journal.Would, key string) {
	r.Observed++
	r.Would[w.String()]++
	switch {
	case w.Stopped():
		r.Stopped++
	case w.Held():
		r.Held++
	case w.Refused():
		r.Refused++
	default:
		return
	}
	if r.Examples == nil {
		r.Examples = map[string][]string{}
	}
	if ex := r.Examples[w.String()]; len(ex) < MaxExamples && !slices.Contains(ex, key) {
		r.Examples[w.String()] = append(ex, key)
	}
}

// firstAfter finds where the events at or after since begin: the
// greatest seq after which the log holds no earlier event, found by
// bisecting the seqs (events are in time order, give or take the clock
// skew of concurrent writers, which Observations filters out).
func firstAfter(log EventLog, since time.Time) (uint64, error) {
	last, err := log.LastSeq()
	if err != nil {
		return 0, fmt.Errorf("read observations: %w", err)
	}
	// The first event after lo may be early; none after hi is. Should the
	// times go back somewhere (lo passing hi), hi is where to start.
	lo, hi := uint64(0), last
	for lo < hi {
		mid := lo + (hi-lo)/2
		evs, err := log.Events(mid, 1)
		if err != nil {
			return 0, fmt.Errorf("read observations: %w", err)
		}
		if len(evs) == 0 || !evs[0].Time.Before(since) {
			hi = mid
		} else {
			lo = evs[0].Seq
		}
	}
	return hi, nil
}

// observations answers GET /v1/observations?since=: the report of the
// observations since a duration ago (24h, the default) or an RFC 3339
// time; an agent's, of its own scope.
func (a *API) observations(w http.ResponseWriter, r *http.Request) {
	since, err := parseSince(r.URL.Query().Get("since"), time.Now())
	if err != nil {
		a.fail(w, badRequest(err))
		return
	}
	rep, err := Observations(a.opts.Journal, since, func(st *journal.Step) bool { return visible(r, st.CredentialMAC) })
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// parseSince reads a since parameter: a duration before now, or a time in
// RFC 3339; empty is DefaultObservationWindow.
func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return now.Add(-DefaultObservationWindow), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("since: want a duration such as 24h or an RFC 3339 time (got %q)", v)
}
