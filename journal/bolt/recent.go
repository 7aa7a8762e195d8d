package bolt

import "github.com/toolguard/toolguard/journal"

// Recent steps.
//
// A guarded call's outcome is written a few milliseconds after its claim,
// and reading the claim back inside the commit (a B-tree lookup on pages
// the previous commit has just rewritten, and a JSON decode) is most of
// what the outcome costs the committer before its own write. So the
// committer keeps the steps it last wrote, as written, and an Apply of
// such a key starts from that copy instead of the file. Only the committer
// touches the map; it fills it after a commit succeeds, and takes an entry
// out when it uses it, so a key written twice in one batch is read from
// the transaction the second time. Steps with a stored answer are not
// kept: they are rarely written again soon, and their bodies would make
// the map large. Every other writer of steps (Sweep,
// ExpireHolds) counts itself in b.sweeps before its transaction, and the
// committer drops the map when the count has moved: bbolt runs write
// transactions one at a time, so a commit that starts after such a write
// sees its count.
type recentSteps struct {
	m      map[string]recentStep
	sweeps uint64 // b.sweeps when m was last known to be right
}

type recentStep struct {
	step journal.Step
	ref  stepRef
}

// maxRecent bounds the map: about the calls in flight.
const maxRecent = 4096

// take returns the step of key as last written and forgets it.
func (rs *recentSteps) take(key string) (*journal.Step, stepRef, bool) {
	e, ok := rs.m[key]
	if !ok {
		return nil, stepRef{}, false
	}
	delete(rs.m, key)
	return &e.step, e.ref, true
}

// keep remembers the writes of a committed batch, in batch order.
func (rs *recentSteps) keep(batch []*request) {
	if rs.m == nil || len(rs.m) >= maxRecent {
		rs.m = make(map[string]recentStep, 256)
	}
	for _, r := range batch {
		switch {
		case !r.wrote || r.err != nil:
		case r.pending.step.Response != nil:
			delete(rs.m, r.key) // answered: rarely written again, and its body may be large
		default:
			rs.m[r.key] = recentStep{step: copyStep(&r.pending.step), ref: r.pending.ref}
		}
	}
}

// check drops everything when another writer has changed steps since.
func (rs *recentSteps) check(sweeps uint64) {
	if sweeps != rs.sweeps {
		clear(rs.m)
		rs.sweeps = sweeps
	}
}
