package journal

import "fmt"

// Limits on what a step key and a workflow id may be, the same for every
// backend (bbolt's index keys stay far below its MaxKeySize with them).
const (
	MaxKeyLen      = 1024
	MaxWorkflowLen = 1024
)

// Validate refuses a step that no backend may store under key, with an
// error wrapping ErrInvalidChange: an empty or oversized key, a step of
// another key, an unknown status or hold, a committed or verified step
// with neither a response nor evidence, an oversized workflow id. Every
// backend calls it before it writes, so all of them refuse alike.
func Validate(key string, s *Step) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidChange)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key is %d bytes (max %d)", ErrInvalidChange, len(key), MaxKeyLen)
	case s.Key != key:
		return fmt.Errorf("%w: step key is %q", ErrInvalidChange, s.Key)
	case s.Status < StatusPrepared || s.Status > StatusFailed:
		return fmt.Errorf("%w: status %v cannot be stored", ErrInvalidChange, s.Status)
	case s.Hold > HoldNeedsReview:
		return fmt.Errorf("%w: unknown %v", ErrInvalidChange, s.Hold)
	case (s.Status == StatusCommitted || s.Status == StatusVerified) && s.Response == nil && s.Evidence == "":
		return fmt.Errorf("%w: %v step without a response or evidence", ErrInvalidChange, s.Status)
	case len(s.Workflow) > MaxWorkflowLen:
		return fmt.Errorf("%w: workflow id is %d bytes (max %d)", ErrInvalidChange, len(s.Workflow), MaxWorkflowLen)
	}
	return nil
}
