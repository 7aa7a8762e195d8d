package journal

import (
	"time"
)

// Change is what a Mutation decides to write.
type Change struct {
	// Step is the new record. Its Key must be the key passed to Apply, its
	// Status one of the stored states and its Hold a known hold; a committed
	// or verified step needs a Response or Evidence. Apply stamps
	// Schema, CreatedAt and UpdatedAt itself; whatever the mutation put there
	// is overwritten.
	Step Step
	// Event is the event type recorded for this transition, e.g.
	// EventStarted; empty means the name of the new status.
	Event EventType
	// Reason and Note are carried into the event.
	Reason string
	Note   string
	// Extra events are recorded after the transition's own, with the same
	// time, key, status and claim; set Type, Reason and Note.
	Extra []Event
	// Claim stamps Step with the journal's current epoch and a new fencing
	// token before it is written. Without Claim the step keeps the Epoch and
	// Fence of the current record (zero for a new step), whatever the
	// mutation set: only a claim changes ownership. A change that must fence
	// out the current owner (an operator's resolve of a step that may still
	// be in flight) sets Claim.
	Claim bool
	// Lease, with Claim, is how long the claim lasts without a Renew: the
	// backend sets Step.LeaseUntil to its clock's now plus Lease. Backends
	// that keep leases in the process (bbolt) ignore it and leave
	// LeaseUntil zero.
	Lease time.Duration
	// Budget, on a change that creates a step (no current record), counts
	// the new step against the budget of its caller, API and route
	// (Step.CredentialMAC, API, Route): when Budget.Calls steps counted
	// against them were created within Budget.Per before now, by the
	// journal's clock, Apply writes nothing and returns an error wrapping
	// ErrOverBudget; otherwise the step is written with Budgeted set. The
	// count and the write are atomic, across replicas too: of changes that
	// race at the budget's edge, only those within it are written. nil
	// counts nothing; ignored on a change of an existing step.
	Budget *Budget
	// MaxHolds, on a change that creates a held step, caps the held steps
	// of its caller (Step.CredentialMAC): when the caller has MaxHolds
	// held steps already, Apply writes nothing and returns an error
	// wrapping ErrTooManyHolds. The count and the write are atomic like
	// Budget's. Zero means no cap; ignored on other changes.
	MaxHolds int
}

// Budget caps how many steps of one caller, API and route may be created
// within a sliding window (see Change.Budget).
type Budget struct {
	// Calls is the most steps counted within any window of Per; at least 1.
	Calls int
	Per   time.Duration
}

// Mutation decides a Change from the current record of a key. cur is nil when
// the key has no step yet; otherwise it is a private copy the mutation may
// modify and return, with ReadAt set to the journal's clock. A Mutation runs
// after every earlier Apply of the same key has been applied, and may run
// more than once (a backend that writes optimistically runs it again on the
// newer record when it lost a race): it must be a pure function of cur and
// of values captured before Apply, and its effects outside the returned
// Change must be idempotent or done after Apply returns. It must not block,
// and must not call the journal. Every backend refuses a Change that
// Allowed rejects. Returning an error writes
// nothing and makes Apply return that error; returning ErrNoChange writes
// nothing and makes Apply return the current record. A panic in a mutation
// writes nothing and is re-raised in the goroutine that called Apply.
type Mutation func(cur *Step) (Change, error)

// Filter selects steps for List. Zero fields match everything.
type Filter struct {
	Status   Status
	Hold     Hold
	HoldSet  bool // Hold is a filter even when it is HoldNone
	Workflow string
	// VerifyPending selects steps with a pending verification, earliest
	// deadline first; it takes precedence over the other indexes.
	VerifyPending bool
	// Limit bounds the result; 0 or less means the default of 1000.
	Limit int
}

// Counts are the numbers of steps by status and by hold, as kept by the
// journal in the same transactions that change the steps.
type Counts struct {
	// Steps is the number of steps in the journal.
	Steps int `json:"steps"`
	// Status has an entry for every stored status (StatusPrepared to
	// StatusFailed), zero included.
	Status map[Status]int `json:"status"`
	// Hold has an entry for every hold, HoldNone (steps not held) included.
	Hold map[Hold]int `json:"hold"`
}

// OpenCounts counts the steps that need attention: started ones (in
// flight, or ambiguous once the process that sent them is gone) and held
// ones.
type OpenCounts struct {
	Started int `json:"started"`
	// Held has an entry for every hold but HoldNone, zero included.
	Held map[Hold]int `json:"held"`
}

// NewOpenCounts returns OpenCounts with every entry zero.
func NewOpenCounts() OpenCounts {
	c := OpenCounts{Held: map[Hold]int{}}
	for h := HoldNone + 1; h <= HoldNeedsReview; h++ {
		c.Held[h] = 0
	}
	return c
}
