package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

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

// decodeOptional decodes a JSON body if there is one, refusing unknown
// fields, duplicate members (decodeStrict) and bodies over max bytes.
func decodeOptional(r *http.Request, v any, max int64) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if int64(len(data)) > max {
		return fmt.Errorf("decode body: over %d bytes", max)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return decodeStrict(data, v)
}
