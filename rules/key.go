package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Input is what Derive reads from one request.
type Input struct {
	// ContentType is the request's Content-Type header; see CanonicalBody
	// for how it selects JSON or form parsing.
	ContentType string
	Body        []byte
	// RawQuery is the URL's query string without '?'; it is part of the
	// key when non-empty.
	RawQuery string
	// PathValues are the route's wildcard values, as Match returned them.
	PathValues map[string]string
	// Credential is the raw value of the API's credential header. It is
	// only ever used through an HMAC and never stored.
	Credential string
	// Workflow is the Toolguard-Workflow header; empty means none.
	Workflow string
}

// Intent is the derived identity of a request.
type Intent struct {
	// Key is the hex sha256 of Material.
	Key string
	// Material is the canonical JSON the key is the hash of:
	// {"api", "fields", "path", "query" (when non-empty), "route",
	// "scope": {"credential": hex HMAC or "", "workflow"}}. It holds the
	// credential only as its HMAC; `toolguard key explain` shows it.
	Material []byte
	// BodyHash is the hex sha256 of Doc: an approval binds to it.
	BodyHash string
	// Doc is the whole body as canonical JSON (a form as an object, an
	// empty body as null); templates read {{body.PATH}} from it.
	Doc []byte
}

// Deriver derives keys. Secret keys the HMAC of credentials; it must be
// kept across restarts (or keys change) and never leave the proxy. A nil
// Secret still hides credentials from the journal only as well as a plain
// hash would. A Deriver is safe for concurrent use.
type Deriver struct {
	Secret []byte
}

// deriveScratch holds the buffers of one Derive call, pooled.
type deriveScratch struct {
	canon
	strip stripper
	doc   []byte
	mat   []byte
	mac   []byte
	names []string
}

var scratchPool = sync.Pool{New: func() any { return new(deriveScratch) }}

// Derive computes the intent of a request to route r. A body or query
// string that cannot be parsed gives an error wrapping ErrInvalidBody.
func (d *Deriver) Derive(r *Route, in Input) (*Intent, error) {
	s := scratchPool.Get().(*deriveScratch)
	defer s.release()
	var err error
	if s.doc, err = s.canon.body(s.doc[:0], in.ContentType, in.Body); err != nil {
		return nil, err
	}
	if s.mat, err = d.material(s, r, in); err != nil {
		return nil, err
	}
	return newIntent(s.mat, s.doc), nil
}

func (s *deriveScratch) release() {
	if cap(s.doc) > 1<<20 || cap(s.mat) > 1<<20 || cap(s.tmp) > 1<<20 {
		return // don't pin huge buffers
	}
	s.src = nil
	scratchPool.Put(s)
}

// material writes the key material in canonical form; its members are
// written in sorted order.
func (d *Deriver) material(s *deriveScratch, r *Route, in Input) ([]byte, error) {
	api := ""
	if r.API != nil {
		api = r.API.Name
	}
	m := append(s.mat[:0], `{"api":`...)
	m = appendString(m, api)
	m = append(m, `,"fields":`...)
	m = s.fields(m, &r.Key)
	m = append(m, `,"path":`...)
	pv := in.PathValues
	if r.fixedPath != nil {
		pv = r.fixedPath
	}
	m = s.pathValues(m, pv)
	if in.RawQuery != "" {
		var err error
		if m, err = s.query(m, in.RawQuery); err != nil {
			return m, err
		}
	}
	m = append(m, `,"route":`...)
	m = appendString(m, r.Name)
	m = append(m, `,"scope":{`...)
	cred, wf := r.Key.scopes()
	if cred {
		m = append(m, `"credential":"`...)
		m = d.appendMAC(m, s, api, in.Credential)
		m = append(m, '"')
	}
	if wf {
		if cred {
			m = append(m, ',')
		}
		m = append(m, `"workflow":`...)
		m = appendString(m, in.Workflow)
	}
	return append(m, "}}"...), nil
}

// scopes reports which scopes k names; nil Scope means both.
func (k *KeySpec) scopes() (cred, wf bool) {
	if k.Scope == nil {
		return true, true
	}
	for _, sc := range k.Scope {
		cred = cred || sc == ScopeCredential
		wf = wf || sc == ScopeWorkflow
	}
	return cred, wf
}

// fields writes the selected fields (an object of path → value, null when
// missing), or the whole document minus the ignored paths.
func (s *deriveScratch) fields(m []byte, k *KeySpec) []byte {
	if len(k.Fields) == 0 {
		return s.strip.strip(m, s.doc, k.Ignore)
	}
	names := append(s.names[:0], k.Fields...)
	slices.SortFunc(names, func(a, b string) int { return compareKeys(sbytes(a), sbytes(b)) })
	s.names = names
	m = append(m, '{')
	doc := bstr(s.doc)
	for i, p := range names {
		if i > 0 && p == names[i-1] {
			continue
		}
		if i > 0 {
			m = append(m, ',')
		}
		m = appendString(m, p)
		m = append(m, ':')
		m = s.fieldValue(m, doc, gjson.Get(doc, p))
	}
	return append(m, '}')
}

func (s *deriveScratch) fieldValue(m []byte, doc string, res gjson.Result) []byte {
	switch {
	case !res.Exists():
		return append(m, "null"...)
	case res.Index > 0 || len(res.Raw) == len(doc):
		return append(m, res.Raw...) // a slice of canonical JSON
	}
	// Computed by gjson (a '#' path or a modifier): canonicalize it.
	out, err := s.canon.canonical(m, sbytes(res.Raw))
	if err != nil {
		return append(m, "null"...)
	}
	return out
}

func (s *deriveScratch) pathValues(m []byte, pv map[string]string) []byte {
	names := s.names[:0]
	for k := range pv {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return compareKeys(sbytes(a), sbytes(b)) })
	s.names = names
	m = append(m, '{')
	for i, k := range names {
		if i > 0 {
			m = append(m, ',')
		}
		m = appendString(m, k)
		m = append(m, ':')
		m = appendString(m, pv[k])
	}
	return append(m, '}')
}

// query writes ,"query":{...} unless the query string has no pairs.
func (s *deriveScratch) query(m []byte, raw string) ([]byte, error) {
	n := len(m)
	m = append(m, `,"query":`...)
	q := len(m)
	m, err := s.canon.form(m, raw, "query string")
	if err != nil {
		return m[:n], err
	}
	if string(m[q:]) == "{}" {
		m = m[:n]
	}
	return m, nil
}

// newIntent copies material and doc into one allocation, which also holds
// the hex digests that Key and BodyHash view.
func newIntent(mat, doc []byte) *Intent {
	buf := make([]byte, len(mat)+len(doc)+2*sha256.Size*2)
	n := copy(buf, mat)
	copy(buf[n:], doc)
	hx := buf[len(mat)+len(doc):]
	sum := sha256.Sum256(mat)
	hex.Encode(hx[:64], sum[:])
	sum = sha256.Sum256(doc)
	hex.Encode(hx[64:], sum[:])
	// hx is never reachable as a slice again, so the strings are immutable.
	return &Intent{
		Key:      unsafe.String(&hx[0], 64),
		BodyHash: unsafe.String(&hx[64], 64),
		Material: buf[:n:n],
		Doc:      buf[n : n+len(doc) : n+len(doc)],
	}
}

// sbytes views s as bytes, which must not be modified.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// appendMAC appends the hex HMAC-SHA256 of api+"\x00"+credential under
// d.Secret, or nothing when there is no credential. It is crypto/hmac
// written out so that it allocates nothing.
func (d *Deriver) appendMAC(dst []byte, s *deriveScratch, api, credential string) []byte {
	if credential == "" {
		return dst
	}
	key := d.Secret
	if len(key) > sha256.BlockSize {
		k := sha256.Sum256(key)
		key = k[:]
	}
	var pad [sha256.BlockSize]byte
	copy(pad[:], key)
	buf := s.mac[:0]
	for _, b := range pad {
		buf = append(buf, b^0x36)
	}
	buf = append(buf, api...)
	buf = append(buf, 0)
	buf = append(buf, credential...)
	inner := sha256.Sum256(buf)
	buf = buf[:0]
	for _, b := range pad {
		buf = append(buf, b^0x5c)
	}
	buf = append(buf, inner[:]...)
	outer := sha256.Sum256(buf)
	s.mac = buf
	return hex.AppendEncode(dst, outer[:])
}
