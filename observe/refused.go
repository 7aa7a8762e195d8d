package observe

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/toolguard/toolguard/journal"
)

// RefusedStep is the first record of a call that enforcement would have
// refused before deriving its key: st (the call's API, route, caller and
// target) with its BodyHash, the sha256 of the body bytes read, and its
// Key, a hash of the route, caller, target (path is its escaped path) and
// those bytes, apart from every derived key (which hashes canonical
// JSON). The same request always gets the same key.
func RefusedStep(st journal.Step, path string, body []byte) journal.Step {
	sum := sha256.Sum256(body)
	st.BodyHash = hex.EncodeToString(sum[:])
	h := sha256.New()
	for _, v := range []string{"toolguard refused request", st.API, st.Route, st.CredentialMAC, st.Method, st.Host, path} {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	h.Write(body)
	st.Key = hex.EncodeToString(h.Sum(nil))
	return st
}
