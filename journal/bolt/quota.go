package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Quotas: route budgets (journal.Change.Budget) and caps on open holds
// (journal.Change.MaxHolds). A budget counts the entries of idx_budget of
// one caller, API and route within its window; a cap reads the caller's
// count in count_holds. Both are read in the write transaction of the
// change they limit, after the changes before it in the same commit, so
// the count and the write are one atomic step (bbolt has one writer).

// keyHoldsIndexed marks a file whose holds are counted by caller and
// indexed for expiry; indexHolds fills both once for older files.
var keyHoldsIndexed = []byte("holds/indexed")

// holdCountKey is the count_holds key of a caller's credential MAC
// (possibly empty: bbolt keys cannot be).
func holdCountKey(scope string) []byte { return append([]byte{'h'}, scope...) }

// countHold adds delta to scope's count of held steps, deleting it at
// zero.
func (bk *buckets) countHold(scope string, delta int64) error {
	k := holdCountKey(scope)
	n := int64(getUint(bk.holdCounts, k)) + delta
	if n <= 0 {
		return bk.holdCounts.Delete(k)
	}
	return putUint(bk.holdCounts, k, uint64(n))
}

// budgetPrefix starts the idx_budget keys of one caller, API and route:
// each length-prefixed, so that no two triples share a prefix.
func budgetPrefix(scope, api, route string) []byte {
	var b []byte
	for _, s := range []string{scope, api, route} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func budgetIndexKey(scope, api, route string, created time.Time, key string) []byte {
	return append(append(budgetPrefix(scope, api, route), timeBytes(created)...), key...)
}

// parseBudgetIndexKey splits an idx_budget key; ok is false when it is
// malformed.
func parseBudgetIndexKey(k []byte) (scope, api, route string, created []byte, key string, ok bool) {
	var parts [3]string
	rest := k
	for i := range parts {
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) < n {
			return "", "", "", nil, "", false
		}
		parts[i], rest = string(rest[w:w+int(n)]), rest[w+int(n):]
	}
	if len(rest) <= 8 {
		return "", "", "", nil, "", false
	}
	return parts[0], parts[1], parts[2], rest[:8], string(rest[8:]), true
}

// budgetUsed counts the Budgeted steps of scope, API and route created
// after since, stopping at limit.
func (bk *buckets) budgetUsed(scope, api, route string, since time.Time, limit int) int {
	prefix := budgetPrefix(scope, api, route)
	from := timeBytes(since)
	c := bk.byBudget.Cursor()
	n := 0
	for k, _ := c.Seek(append(bytes.Clone(prefix), from...)); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
		if len(k) >= len(prefix)+8 && bytes.Compare(k[len(prefix):len(prefix)+8], from) > 0 {
			n++
		}
	}
	return n
}

// checkQuota refuses the new step s of ch when it is over its budget
// (journal.ErrOverBudget) or a hold over its caller's cap
// (journal.ErrTooManyHolds); a step within its budget is marked
// Budgeted. s is stamped (CreatedAt) and not encoded yet.
func (bk *buckets) checkQuota(s *journal.Step, ch *journal.Change) error {
	if b := ch.Budget; b != nil {
		if used := bk.budgetUsed(s.CredentialMAC, s.API, s.Route, s.CreatedAt.Add(-b.Per), b.Calls); used >= b.Calls {
			return fmt.Errorf("%w: %d of %d calls of route %s/%s within %s", journal.ErrOverBudget, used, b.Calls, s.API, s.Route, b.Per)
		}
		s.Budgeted = true
	}
	if ch.MaxHolds > 0 && s.Held() {
		if n := getUint(bk.holdCounts, holdCountKey(s.CredentialMAC)); n >= uint64(ch.MaxHolds) {
			return fmt.Errorf("%w: the caller has %d held steps (max %d)", journal.ErrTooManyHolds, n, ch.MaxHolds)
		}
	}
	return nil
}

// indexHolds counts the held steps of a file written before holds were
// counted by caller, and indexes its expirable ones. It runs in the
// writable Open's transaction and is a no-op once done; it reads only the
// held steps.
func indexHolds(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyHoldsIndexed) != nil {
		return nil
	}
	bk, err := openBuckets(tx)
	if err != nil {
		return err
	}
	err = bk.byHold.ForEach(func(k, _ []byte) error {
		if len(k) < 2 {
			return nil // Check reports it
		}
		s, err := bk.getStep(string(k[1:]))
		if err != nil {
			return err
		}
		if err := bk.countHold(s.CredentialMAC, 1); err != nil {
			return err
		}
		if s.Expirable() {
			return bk.byExpiry.Put(timeIndexKey(s.UpdatedAt, s.Key), []byte{})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index holds: %w", err)
	}
	return meta.Put(keyHoldsIndexed, []byte{1})
}
