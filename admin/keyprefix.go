package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/journal"
)

// MinKeyPrefix is the shortest abbreviation of a key that FindStep expands.
const MinKeyPrefix = 4

// maxCandidates is how many keys an ambiguous prefix lists.
const maxCandidates = 10

// AmbiguousKeyError names the keys an abbreviated key could mean.
type AmbiguousKeyError struct {
	Prefix     string
	Candidates []string // the first matching keys, in key order
	More       bool     // more keys match than Candidates holds
}

func (e *AmbiguousKeyError) Error() string {
	more := ""
	if e.More {
		more = ", …"
	}
	return fmt.Sprintf("key prefix %s is ambiguous: it starts %s%s; give more of the key",
		e.Prefix, strings.Join(e.Candidates, ", "), more)
}

// Unwrap makes errors.Is(err, ErrAmbiguousKey) true.
func (e *AmbiguousKeyError) Unwrap() error { return ErrAmbiguousKey }

// FindStep returns the step whose key is key or, as git does with commit
// ids, the one step whose key starts with key when key has at least
// MinKeyPrefix characters. No such step is journal.ErrNotFound; more than
// one is an *AmbiguousKeyError.
func FindStep(j KeyFinder, key string) (journal.Step, error) {
	st, err := j.Get(key)
	if !errors.Is(err, journal.ErrNotFound) || len(key) < MinKeyPrefix {
		return st, err
	}
	keys, perr := j.KeysWithPrefix(key, maxCandidates+1)
	switch {
	case perr != nil:
		return journal.Step{}, perr
	case len(keys) == 0:
		return journal.Step{}, err
	case len(keys) == 1:
		return j.Get(keys[0])
	}
	return journal.Step{}, &AmbiguousKeyError{Prefix: key, Candidates: keys[:min(len(keys), maxCandidates)],
		More: len(keys) > maxCandidates}
}
