package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// HeaderWorkflow is the request header that names the workflow a call
// belongs to (Input.Workflow): part of its key's scope (contract,
// DESIGN.md "Headers").
const HeaderWorkflow = "Toolguard-Workflow"

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
	// EscapedPath is the request's escaped path (URL.EscapedPath), as
	// given to Match. When set, the key reads the wildcard values from it
	// (see Route.keyPathValues): PathValues are unescaped, so they cannot
	// tell a {name...} value a%2Fb from a/b. Empty: PathValues are used.
	EscapedPath string
	// Credential is the raw value of the API's credential header. It is
	// only ever used through an HMAC and never stored.
	Credential string
	// Workflow is the HeaderWorkflow header; empty means none.
	Workflow string
	// Host is the request's host name; it is part of the key only when
	// the route's key.scope names host.
	Host string
}

// Intent is the derived identity of a request.
type Intent struct {
	// Key is the hex sha256 of Material.
	Key string
	// Material is the canonical JSON the key is the hash of:
	// {"api", "fields", "media_type", "path", "query" (when non-empty),
	// "route", "scope": {"credential": hex HMAC or "", "workflow"}}; see
	// docs/keys.md. It holds the
	// credential and redact fields only as HMACs, so it may be stored;
	// `toolguard key explain` shows it.
	Material []byte
	// BodyHash is the hex sha256 of Doc: an approval binds to it.
	BodyHash string
	// Doc is the whole body as canonical JSON (a form as an object, an
	// empty body as null); templates read {{body.PATH}} from it. It holds
	// the route's redact fields in clear: keep it in memory only.
	Doc []byte
	// Redacted is Doc with the value of every redact path replaced by
	// "redacted:" + an HMAC of it: what may be stored or shown. It is Doc
	// itself when the route redacts nothing. Material is built from it.
	Redacted []byte
	// Summary is what an operator is shown of the key fields, read from
	// Redacted (see KeyField); nil when the body has nothing to show.
	Summary []KeyField
}

// Deriver derives keys. Secret keys the HMAC of credentials; it must be
// kept across restarts (or keys change) and never leave the proxy. A nil
// Secret still hides credentials from the journal only as well as a plain
// hash would. A Deriver is safe for concurrent use.
type Deriver struct {
	Secret []byte
	// Lean leaves Intent.Material empty, and Intent.Doc and Redacted too
	// unless the route has a lookup or a verification (whose templates may
	// read {{body.*}}) or an approval.when (which reads the body): a proxy
	// needs only the key and the body hash, and
	// keeping two canonical copies of every body in flight costs memory.
	Lean bool
}

// deriveScratch holds the buffers of one Derive call, pooled.
type deriveScratch struct {
	canon
	strip stripper
	doc   []byte
	red   []byte // doc, redacted
	inj   []byte // doc, before an injected marker was removed
	mat   []byte
	mac   []byte
	names []string
	paths []string // key.ignore and volatile, of a whole-request key
	qbuf  []byte   // canonical query string, before volatile is dropped
	// legacy writes the key material of the canonical form before this
	// version (see LegacyKey).
	legacy bool
}

var scratchPool = sync.Pool{New: func() any { return new(deriveScratch) }}

// Derive computes the intent of a request to route r. A body or query
// string that cannot be parsed gives an error wrapping ErrInvalidBody.
func (d *Deriver) Derive(r *Route, in Input) (*Intent, error) {
	s := scratchPool.Get().(*deriveScratch)
	defer s.release()
	s.legacy = false
	return d.derive(s, r, in)
}

// KeyForm numbers the canonical form keys are derived in: 2 since the
// media type, the containers of indexed key fields and escaped {name...}
// values entered it (steps journaled before carry none).
const KeyForm = 2

// LegacyKey is the key the previous version derived for the request: its
// canonical form had no media type, no containers of indexed key fields
// and unescaped {name...} values. A proxy whose journal still holds steps
// of that version looks a new intent up under it too, so that an upgrade
// does not turn a retry into a second effect. (Multipart file names were
// keyed by their base name then; those keys are not reproduced.)
func (d *Deriver) LegacyKey(r *Route, in Input) (string, error) {
	s := scratchPool.Get().(*deriveScratch)
	defer s.release()
	s.legacy = true
	in.EscapedPath = ""
	it, err := d.derive(s, r, in)
	if err != nil {
		return "", err
	}
	return it.Key, nil
}

func (d *Deriver) derive(s *deriveScratch, r *Route, in Input) (*Intent, error) {
	var err error
	if r.Key.RawContent {
		s.doc = appendRawContent(s.doc[:0], in.ContentType, in.Body)
	} else if s.doc, err = s.canon.body(s.doc[:0], in.ContentType, in.Body); err != nil {
		return nil, err
	}
	if err := r.checkWritable(in.ContentType, s.doc); err != nil {
		return nil, err
	}
	if r.Inject != nil && r.Inject.Append != "" {
		s.inj = r.Inject.stripInjected(s.inj[:0], s.doc)
		s.doc, s.inj = s.inj, s.doc
	}
	red := s.doc
	if len(r.Redact) > 0 {
		s.red = s.strip.redactDoc(s.red[:0], s.doc, r.Redact, d.Secret, r.apiName())
		red = s.red
	}
	if s.mat, err = d.material(s, r, in, red); err != nil {
		return nil, err
	}
	var it *Intent
	if d.Lean {
		it = leanIntent(s.mat, s.doc, red, r.Lookup != nil || r.Verify != nil || r.ApprovalWhen != nil, len(r.Redact) > 0)
	} else {
		it = newIntent(s.mat, s.doc, red, len(r.Redact) > 0)
	}
	it.Summary = summarize(r, red)
	return it, nil
}

func (r *Route) apiName() string {
	if r.API == nil {
		return ""
	}
	return r.API.Name
}

func (s *deriveScratch) release() {
	if cap(s.doc) > 1<<20 || cap(s.mat) > 1<<20 || cap(s.tmp) > 1<<20 || cap(s.red) > 1<<20 || cap(s.qbuf) > 1<<20 {
		return // don't pin huge buffers
	}
	s.src = nil
	scratchPool.Put(s)
}

// material writes the key material in canonical form, its members in
// sorted order; doc is the (redacted) canonical body.
func (d *Deriver) material(s *deriveScratch, r *Route, in Input, doc []byte) ([]byte, error) {
	api := r.apiName()
	mode := r.keyMode(doc)
	m := append(s.mat[:0], `{"api":`...)
	m = appendString(m, api)
	m = append(m, `,"fields":`...)
	var missing bool
	if m, missing = s.fields(m, r, mode, doc); missing {
		return m, r.missingFields(doc)
	}
	if !s.legacy {
		m = append(m, `,"media_type":`...)
		m = appendString(m, mediaType(in.ContentType, in.Body))
	}
	if r.unlisted {
		m = append(m, `,"method":`...)
		m = appendString(m, r.Method)
	}
	m = append(m, `,"path":`...)
	m = s.pathValues(m, r.keyPathValues(in))
	if in.RawQuery != "" {
		var err error
		if m, err = s.query(m, in.RawQuery, r.volatileQuery(mode)); err != nil {
			return m, err
		}
	}
	if mode == keyReferenceAbsent {
		m = append(m, `,"reference":null`...)
	}
	m = append(m, `,"route":`...)
	m = appendString(m, r.Name)
	m = append(m, `,"scope":{`...)
	m = d.scope(m, s, r, in)
	return append(m, "}}"...), nil
}

// scope writes the members of the material's scope object.
func (d *Deriver) scope(m []byte, s *deriveScratch, r *Route, in Input) []byte {
	cred, wf := r.Key.scopes()
	if cred {
		m = append(m, `"credential":"`...)
		m = d.appendMAC(m, s, r.apiName(), in.Credential)
		m = append(m, '"')
	}
	if r.Key.hasScope(ScopeHost) {
		if cred {
			m = append(m, ',')
		}
		m = append(m, `"host":`...)
		m = appendString(m, canonicalHost(in.Host))
	}
	if wf {
		if cred || r.Key.hasScope(ScopeHost) {
			m = append(m, ',')
		}
		m = append(m, `"workflow":`...)
		m = appendString(m, in.Workflow)
	}
	return m
}

// keyMode says what of a request a route's key holds.
type keyMode uint8

const (
	// keyFields: the selected fields (key.fields, or a reference and its
	// fields).
	keyFields keyMode = iota
	// keyBody: the whole body less key.ignore.
	keyBody
	// keyRequest: the whole request, body and query less the file's
	// volatile (and key.ignore): an unlisted write.
	keyRequest
	// keyReferenceAbsent: keyRequest for a route whose reference the body
	// lacks.
	keyReferenceAbsent
)

// keyMode is how r keys a request whose canonical body is doc.
func (r *Route) keyMode(doc []byte) keyMode {
	switch {
	case r.unlisted:
		return keyRequest
	case len(r.Key.Reference) > 0:
		if hasReferences(r.Key.Reference, doc) {
			return keyFields
		}
		return keyReferenceAbsent
	case len(r.Key.Fields) > 0:
		return keyFields
	}
	return keyBody
}

// hasReferences reports whether doc holds every reference, each neither
// null nor empty (such a value tells no intent apart).
func hasReferences(refs []string, doc []byte) bool {
	d := bstr(doc)
	for _, p := range refs {
		res := gjson.Get(d, p)
		if !res.Exists() || res.Type == gjson.Null || (res.Type == gjson.String && res.Str == "") {
			return false
		}
	}
	return true
}

// volatileQuery is what mode drops of the query: the file's volatile
// names, in a whole-request key only.
func (r *Route) volatileQuery(mode keyMode) []string {
	if (mode == keyRequest || mode == keyReferenceAbsent) && r.API != nil {
		return r.API.Volatile
	}
	return nil
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

// hasScope reports whether k names sc explicitly (host is never a
// default scope).
func (k *KeySpec) hasScope(sc Scope) bool { return slices.Contains(k.Scope, sc) }

// canonicalHost is h lowercased, without a port or a trailing dot.
func canonicalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// mediaType is the part of the body's media type that the key holds: the
// Content-Type without parameters, lower-cased; "" for an empty body, whose
// type says nothing. A form and a JSON body with the same members have
// one canonical document, but they are different requests.
func mediaType(contentType string, body []byte) string {
	if len(body) == 0 {
		return ""
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// fields writes what mode keys of the body: the selected fields (an
// object of path → selection, see fieldValue), or the whole document
// minus the ignored (and, for a whole request, volatile) paths. It
// reports whether a required field is missing.
func (s *deriveScratch) fields(m []byte, r *Route, mode keyMode, docb []byte) ([]byte, bool) {
	k := &r.Key
	switch mode {
	case keyBody:
		s.strip.formArrays = true
		m = s.strip.strip(m, docb, k.Ignore)
		s.strip.formArrays = false
		return m, false
	case keyRequest, keyReferenceAbsent:
		s.paths = append(append(s.paths[:0], k.Ignore...), r.API.volatile()...)
		s.strip.formArrays = true
		m = s.strip.strip(m, docb, s.paths)
		s.strip.formArrays = false
		return m, false
	}
	missing := false
	names := append(append(s.names[:0], k.Fields...), k.Reference...)
	slices.SortFunc(names, func(a, b string) int { return compareKeys(sbytes(a), sbytes(b)) })
	s.names = names
	m = append(m, '{')
	doc := bstr(docb)
	for i, p := range names {
		if i > 0 && p == names[i-1] {
			continue
		}
		if i > 0 {
			m = append(m, ',')
		}
		m = appendString(m, p)
		m = append(m, ':')
		res := gjson.Get(doc, p)
		if !res.Exists() && k.Reference == nil && !slices.Contains(k.Optional, p) {
			missing = true
		}
		m = s.selection(m, doc, p, res)
	}
	return append(m, '}'), missing
}

// volatile is the API's Volatile; nil for a nil API.
func (a *API) volatile() []string {
	if a == nil {
		return nil
	}
	return a.Volatile
}

// selection writes what the key holds of field p: null when it is missing
// or null (a missing optional field is the same intent as an explicit
// null); the canonical value when p has no index or '#' step; else
// {"containers": the kind of value each step of p went through (see
// appendContainers), "value": the canonical value}. gjson reads
// items.0.sku from an array and from an object with a member "0" alike
// (and a.# from an array's length and a member "#"); the containers tell
// them apart. A key step never reads an array, so other paths need none.
func (s *deriveScratch) selection(m []byte, doc, p string, res gjson.Result) []byte {
	switch {
	case !res.Exists() || res.Type == gjson.Null:
		return append(m, "null"...)
	case !readsIndex(p) || s.legacy:
		return s.fieldValue(m, doc, res)
	}
	m = append(m, `{"containers":`...)
	m = appendContainers(m, gjson.Parse(doc), p)
	m = append(m, `,"value":`...)
	m = s.fieldValue(m, doc, res)
	return append(m, '}')
}

// missingFields lists the required key fields that the canonical body doc
// lacks, as a *MissingFieldsError.
func (r *Route) missingFields(doc []byte) error {
	e := &MissingFieldsError{API: r.apiName(), Route: r.Name}
	for _, f := range r.Key.Fields {
		if !slices.Contains(r.Key.Optional, f) && !gjson.GetBytes(doc, f).Exists() {
			e.Fields = append(e.Fields, f)
		}
	}
	return e
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

// query writes ,"query":{...} less the volatile names, unless the query
// string has no pairs left.
func (s *deriveScratch) query(m []byte, raw string, volatile []string) ([]byte, error) {
	n := len(m)
	var err error
	if s.qbuf, err = s.canon.form(s.qbuf[:0], raw, "query string"); err != nil {
		return m, err
	}
	m = append(m, `,"query":`...)
	q := len(m)
	s.strip.formArrays = true
	m = s.strip.strip(m, s.qbuf, volatile)
	s.strip.formArrays = false
	if string(m[q:]) == "{}" {
		m = m[:n]
	}
	return m, nil
}

// newIntent copies material, doc and (when redacting) the redacted doc
// into one allocation, which also holds the hex digests that Key and
// BodyHash view.
func newIntent(mat, doc, red []byte, redacting bool) *Intent {
	size := len(mat) + len(doc)
	if redacting {
		size += len(red)
	}
	buf := make([]byte, size+2*sha256.Size*2)
	n := copy(buf, mat)
	copy(buf[n:], doc)
	it := &Intent{
		Material: buf[:n:n],
		Doc:      buf[n : n+len(doc) : n+len(doc)],
	}
	it.Redacted = it.Doc
	if redacting {
		r := copy(buf[n+len(doc):], red)
		it.Redacted = buf[n+len(doc) : n+len(doc)+r : n+len(doc)+r]
	}
	hx := buf[size:]
	sum := sha256.Sum256(mat)
	hex.Encode(hx[:64], sum[:])
	sum = sha256.Sum256(doc)
	hex.Encode(hx[64:], sum[:])
	// hx is never reachable as a slice again, so the strings are immutable.
	it.Key = unsafe.String(&hx[0], 64)
	it.BodyHash = unsafe.String(&hx[64], 64)
	return it
}

// leanIntent keeps the key and the body hash, and the canonical body only
// when keepDoc is set.
func leanIntent(mat, doc, red []byte, keepDoc, redacted bool) *Intent {
	var hx [128]byte
	sum := sha256.Sum256(mat)
	hex.Encode(hx[:64], sum[:])
	sum = sha256.Sum256(doc)
	hex.Encode(hx[64:], sum[:])
	it := &Intent{Key: string(hx[:64]), BodyHash: string(hx[64:])}
	if keepDoc {
		it.Doc = bytes.Clone(doc)
		it.Redacted = it.Doc
		if redacted {
			it.Redacted = bytes.Clone(red)
		}
	}
	return it
}

// sbytes views s as bytes, which must not be modified.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// appendMAC appends the hex HMAC of the credential, or nothing when there
// is no credential.
func (d *Deriver) appendMAC(dst []byte, s *deriveScratch, api, credential string) []byte {
	if credential == "" {
		return dst
	}
	return appendHMAC(dst, &s.mac, d.Secret, api, sbytes(credential))
}

// appendHMAC appends the hex HMAC-SHA256 of prefix+"\x00"+value under
// key. It is crypto/hmac written out so that it allocates nothing; scratch
// is a reusable buffer.
func appendHMAC(dst []byte, scratch *[]byte, key []byte, prefix string, value []byte) []byte {
	if len(key) > sha256.BlockSize {
		k := sha256.Sum256(key)
		key = k[:]
	}
	var pad [sha256.BlockSize]byte
	copy(pad[:], key)
	buf := (*scratch)[:0]
	for _, b := range pad {
		buf = append(buf, b^0x36)
	}
	buf = append(buf, prefix...)
	buf = append(buf, 0)
	buf = append(buf, value...)
	inner := sha256.Sum256(buf)
	buf = buf[:0]
	for _, b := range pad {
		buf = append(buf, b^0x5c)
	}
	buf = append(buf, inner[:]...)
	outer := sha256.Sum256(buf)
	*scratch = buf
	return hex.AppendEncode(dst, outer[:])
}
