package samples

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/rules"
)

// Sample is one request of a samples file: JSON lines of
//
//	{"name", "method", "url", "content_type", "headers", "body",
//	 "multipart", "same_key_as", "key_differs_from"}
//
// body is a JSON value sent as its encoding, or a JSON string sent as it
// is (form bodies). multipart, instead of body, is a list of parts sent as
// a multipart/form-data body (see Part). same_key_as and key_differs_from name an earlier or
// later sample of the same file and route whose key must be equal (a request that
// differs only in ignored fields) or different (one that differs in a key
// field).
type Sample struct {
	Name           string            `json:"name,omitempty"`
	Method         string            `json:"method"`
	URL            string            `json:"url"`
	ContentType    string            `json:"content_type,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Body           json.RawMessage   `json:"body,omitempty"`
	Multipart      []Part            `json:"multipart,omitempty"`
	SameKeyAs      string            `json:"same_key_as,omitempty"`
	KeyDiffersFrom string            `json:"key_differs_from,omitempty"`

	// File and Line say where the sample was read, for messages.
	File string `json:"-"`
	Line int    `json:"-"`
}

// Pos is the sample's file:line.
func (s *Sample) Pos() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Read reads a samples file; file names it in messages. Unknown
// members, a relative url and a name used twice are errors.
func Read(file string, r io.Reader) ([]Sample, error) {
	var out []Sample
	names := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		s := Sample{File: file, Line: line}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
		if u, err := url.Parse(s.URL); err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s:%d: url must be absolute (got %q)", file, line, s.URL)
		}
		if err := s.checkMultipart(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
		if prev, dup := names[s.Name]; dup && s.Name != "" {
			return nil, fmt.Errorf("%s:%d: duplicate sample name %q (also on line %d)", file, line, s.Name, prev)
		}
		names[s.Name] = line
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read samples %s: %w", file, err)
	}
	return out, nil
}

// Report is what Check found.
type Report struct {
	// Problems are "file:line: message" lines, in the order found; the
	// rule set fails the check when there are any.
	Problems []string
	// Held are "file:line: ..." lines, in sample order, naming the samples
	// toolguard would hold for an operator instead of sending (see
	// held.go); they are not problems.
	Held []string
	// Routes holds, for every route some sample matched, what its samples
	// cover.
	Routes map[*rules.Route]*Coverage

	index    map[*Sample]int // of each sample, to sort its problems
	sampleOf []problemAt
}

// Coverage counts a route's samples and checked pairs.
type Coverage struct {
	Samples, Same, Differ int
	docs                  [][]byte
}

// Gaps lists, one line each, the routes of set that lack a sample, a
// same_key_as pair or a key_differs_from pair (pairs only for guarded
// routes: safe and none routes have no key to compare).
func (rep *Report) Gaps(set *rules.Set) []string {
	var out []string
	for _, a := range set.APIs {
		for _, r := range a.Routes {
			c := rep.Routes[r]
			if c == nil {
				c = &Coverage{}
			}
			var lack []string
			if c.Samples == 0 {
				lack = append(lack, "no sample")
			}
			// An unguarded route has no key for a pair to test.
			if c.Same == 0 && r.Effect.Guarded() {
				lack = append(lack, "no same_key_as pair")
			}
			if c.Differ == 0 && r.Effect.Guarded() {
				lack = append(lack, "no key_differs_from pair")
			}
			if len(lack) > 0 {
				out = append(out, fmt.Sprintf("%s: route %s/%s: %s", r.Pos, a.Name, r.Name, strings.Join(lack, ", ")))
			}
		}
	}
	return out
}

// derived is a sample's route and key.
type derived struct {
	route  *rules.Route
	key    string
	sample *Sample
}

// Check derives the key of every sample with d and reports: samples
// no route matches, bodies that cannot be keyed (every missing required
// field of each sample), pairs whose keys break same_key_as or
// key_differs_from, and optional key fields that no sample of their route
// holds (a typo, or a path into another shape of body).
func Check(set *rules.Set, samples []Sample, d *rules.Deriver) *Report {
	rep := &Report{Routes: map[*rules.Route]*Coverage{}, index: map[*Sample]int{}}
	byName := map[string]derived{}
	got := make([]derived, len(samples))
	holds := newHolds()
	for i := range samples {
		s := &samples[i]
		rep.index[s] = i
		route, it, in, h, err := derive(set, s, d)
		if it != nil && err == nil {
			if why := holds.held(route, it, in, h); why != "" {
				rep.Held = append(rep.Held, fmt.Sprintf("%s: route %s/%s: %s", s.Pos(), apiName(route), route.Name, why))
			}
		}
		switch {
		case route == nil && err != nil:
			rep.problem(s, "%v", err) // a GraphQL request no route selects
			continue
		case route == nil:
			rep.problem(s, "no route matches %s %s", s.Method, s.URL)
			continue
		case errors.As(err, new(*rules.MissingFieldsError)):
			rep.problem(s, "%v", err) // names the route
		case err != nil:
			rep.problem(s, "route %s/%s: %v", apiName(route), route.Name, err)
		}
		c := rep.Routes[route]
		if c == nil {
			c = &Coverage{}
			rep.Routes[route] = c
		}
		c.Samples++
		got[i].sample = s
		if it != nil {
			got[i] = derived{route, it.Key, s}
			c.docs = append(c.docs, it.Doc)
		}
		if s.Name != "" {
			byName[s.File+"\x00"+s.Name] = got[i]
		}
	}
	for i := range samples {
		rep.checkPair(&samples[i], got[i], byName)
	}
	// One file's problems in line order, then those of the rules.
	slices.SortStableFunc(rep.sampleOf, func(a, b problemAt) int { return a.index - b.index })
	for _, p := range rep.sampleOf {
		rep.Problems = append(rep.Problems, p.msg)
	}
	rep.checkOptional(set)
	return rep
}

// problemAt is a problem of the sample at index.
type problemAt struct {
	index int
	msg   string
}

func (rep *Report) problem(s *Sample, format string, args ...any) {
	rep.sampleOf = append(rep.sampleOf, problemAt{rep.index[s], s.Pos() + ": " + fmt.Sprintf(format, args...)})
}

// Derive matches a sample to its route and derives its intent, as Check
// does: route is nil when no route matches (err then says why, for a
// GraphQL request no route selects). Golden tests of rule packs print each
// sample's Intent.Material and Intent.Key.
func Derive(set *rules.Set, s *Sample, d *rules.Deriver) (*rules.Route, *rules.Intent, error) {
	route, it, _, _, err := derive(set, s, d)
	return route, it, err
}

// derive is Derive that also returns what the intent was derived from:
// the input and the sample's headers.
func derive(set *rules.Set, s *Sample, d *rules.Deriver) (*rules.Route, *rules.Intent, rules.Input, http.Header, error) {
	u, _ := url.Parse(s.URL)
	route, params := set.Match(u.Host, strings.ToUpper(s.Method), u.EscapedPath())
	if route == nil {
		return nil, nil, rules.Input{}, nil, nil
	}
	body, contentType := s.body()
	route, pass, err := rules.SelectGraphQL(route, body)
	switch {
	case err != nil:
		return nil, nil, rules.Input{}, nil, err
	case pass:
		return nil, nil, rules.Input{}, nil, errors.New("the GraphQL query passes through unguarded: no route selects it")
	case route == nil:
		return nil, nil, rules.Input{}, nil, errors.New("no route selects this GraphQL mutation")
	}
	h := http.Header{}
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	in := rules.Input{ContentType: contentType, Body: body, RawQuery: u.RawQuery, PathValues: params, EscapedPath: u.EscapedPath(), Workflow: h.Get(rules.HeaderWorkflow), Host: u.Host}
	in.Credential = route.API.CallerCredential(h)
	it, err := d.Derive(route, in)
	return route, it, in, h, err
}

// checkPair checks a sample's same_key_as or key_differs_from.
func (rep *Report) checkPair(s *Sample, me derived, byName map[string]derived) {
	for _, rel := range []struct {
		field, name string
		same        bool
	}{{"same_key_as", s.SameKeyAs, true}, {"key_differs_from", s.KeyDiffersFrom, false}} {
		if rel.name == "" {
			continue
		}
		other, ok := byName[s.File+"\x00"+rel.name]
		switch {
		case !ok:
			rep.problem(s, "%s: no sample is named %q", rel.field, rel.name)
		case me.route == nil || other.route == nil:
			// not matched or not keyed: reported already
		case other.route.API != me.route.API || other.route.Name != me.route.Name:
			// (the routes of unlisted writes, one per method, are one)
			rep.problem(s, "%s: sample %q is of route %s/%s, this one of %s/%s", rel.field, rel.name,
				apiName(other.route), other.route.Name, apiName(me.route), me.route.Name)
		case other.key == "" || me.key == "":
		case sameRequest(s, other.sample):
			rep.problem(s, "%s: the request is identical to sample %q's; a pair must differ (in an ignored field, or a key field)", rel.field, rel.name)
		case rel.same && other.key != me.key:
			rep.problem(s, "key differs from sample %q's, but same_key_as says they are one intent (is a field that should be ignored part of the key?)", rel.name)
		case !rel.same && other.key == me.key:
			rep.problem(s, "key equals sample %q's, but key_differs_from says they are different intents (is a key field missing from the rule?)", rel.name)
		case rel.same:
			rep.Routes[me.route].Same++
		default:
			rep.Routes[me.route].Differ++
		}
	}
}

// apiName is the name of r's API, "" for a route without one.
func apiName(r *rules.Route) string {
	if r.API == nil {
		return ""
	}
	return r.API.Name
}

// sameRequest reports whether two samples are the same request.
func sameRequest(a, b *Sample) bool {
	return a.Method == b.Method && a.URL == b.URL && a.ContentType == b.ContentType &&
		bytes.Equal(a.Body, b.Body) && maps.Equal(a.Headers, b.Headers) &&
		slices.Equal(a.Multipart, b.Multipart)
}

// checkOptional reports optional key fields that no sample of their route
// holds. Required fields need no such check: every sample lacking one is
// reported already.
func (rep *Report) checkOptional(set *rules.Set) {
	for _, a := range set.APIs {
		for _, r := range a.Routes {
			c := rep.Routes[r]
			if c == nil || len(c.docs) == 0 {
				continue
			}
			for _, f := range r.Key.Optional {
				if !slices.ContainsFunc(c.docs, func(doc []byte) bool { return gjson.GetBytes(doc, f).Exists() }) {
					rep.Problems = append(rep.Problems, fmt.Sprintf("%s: key.optional: %q is in none of the %d sample bodies of route %s: a typo, or a path into another shape of body?",
						r.Pos, f, len(c.docs), r.Name))
				}
			}
		}
	}
}
