package journal

// Fenced wraps m so that it runs only while the step is still owned by the
// claim (epoch, fence) the caller received when it claimed the step. When
// the step no longer exists, or its Epoch or Fence differ, the wrapped
// mutation is not called and Apply returns a *FencedError (wrapping
// ErrFenced); nothing is written, no event is recorded, and Apply logs a
// warning with the key and both claims through the backend's
// Options.Logger.
//
// A caller that finishes a call it owns (records the outcome of a request
// it forwarded) uses Fenced, so that a late write from a stale owner — an
// earlier epoch, or a claim taken over by a newer one — cannot overwrite the
// newer owner's record.
func Fenced(epoch, fence uint64, m Mutation) Mutation {
	return func(cur *Step) (Change, error) {
		if cur == nil {
			return Change{}, &FencedError{HeldEpoch: epoch, HeldFence: fence, Missing: true}
		}
		if cur.Epoch != epoch || cur.Fence != fence {
			return Change{}, &FencedError{Key: cur.Key, HeldEpoch: epoch, HeldFence: fence,
				Epoch: cur.Epoch, Fence: cur.Fence}
		}
		return m(cur)
	}
}
