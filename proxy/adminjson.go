package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/rules"
)

// decodeStrict decodes an admin request body into v, refusing unknown
// fields and duplicate members at any depth. encoding/json lets the last
// of two members win ({"outcome":"not_executed","outcome":"committed"}
// would resolve as committed), so what a reviewer reads in a body and
// what toolguard acts on could differ. The duplicate check is the one
// idempotency keys use (rules.CanonicalJSON).
func decodeStrict(data []byte, v any) error {
	if _, err := rules.CanonicalJSON(nil, data); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}
