package openapi

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolguard/toolguard/rules"
)

// keyProposal is what a skeleton proposes for a route's key.
type keyProposal struct {
	fields []string // key.fields; none means no key section (the whole body)
	notes  []string // plain comments
	todos  []string
	// idempotencyField is a top-level body field that carries a native
	// idempotency key; it is never a key field.
	idempotencyField string
}

// oaMaxDepth bounds how deep required objects are followed into key paths.
const oaMaxDepth = 4

// maxCandidates bounds the optional fields a TODO lists.
const maxCandidates = 12

// oaBody is how toolguard reads a media type.
type oaBody uint8

const (
	oaOther oaBody = iota
	oaJSON
	oaForm
)

// formType is the media type of a form body.
const formType = "application/x-www-form-urlencoded"

func mediaKind(mt string) oaBody {
	mt, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(mt)), ";")
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return oaJSON
	case mt == formType:
		return oaForm
	}
	return oaOther
}

// proposeKey proposes key fields from an operation's request body: the
// required properties of its JSON (else form) schema, followed into
// required objects.
func proposeKey(rb *openapi3.RequestBodyRef, method string, wilds []string) *keyProposal {
	k := &keyProposal{}
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		k.noBody(method, wilds)
		return k
	}
	kind, mt, media := pickMedia(rb.Value.Content)
	if kind == oaOther {
		k.todos = append(k.todos, fmt.Sprintf("the body is %s, which toolguard reads neither as JSON nor as a form: "+
			"a guarded request with it is refused (400 invalid-body); guard this route only once its body can be keyed",
			strings.Join(sortedKeys(rb.Value.Content), ", ")))
		return k
	}
	var s *openapi3.Schema
	if media.Schema != nil {
		s = media.Schema.Value
	}
	if s == nil {
		k.todos = append(k.todos, fmt.Sprintf("the %s body has no schema: the key is the whole body; name key fields", mt))
		return k
	}
	k.fromSchema(s, kind)
	if method == "DELETE" && len(k.fields) == 0 && k.idempotencyField == "" && len(alternatives(s)) == 0 {
		k.todos = nil
		k.noBody(method, wilds)
		k.notes[0] = strings.Replace(k.notes[0], "no body: keyed on ", "keyed on the whole (usually empty) body, ", 1)
	}
	return k
}

// pickMedia prefers a JSON media type, then a form.
func pickMedia(content openapi3.Content) (oaBody, string, *openapi3.MediaType) {
	best, bestMT := oaOther, ""
	for _, mt := range sortedKeys(content) {
		if k := mediaKind(mt); k != oaOther && (best == oaOther || k < best) {
			best, bestMT = k, mt
		}
	}
	if best == oaOther || content[bestMT] == nil {
		return oaOther, "", nil
	}
	return best, bestMT, content[bestMT]
}

func (k *keyProposal) noBody(method string, wilds []string) {
	on := "the path and the query string"
	if len(wilds) > 0 {
		on = "the path's " + braced(wilds) + " and the query string"
	}
	if method == "DELETE" {
		k.notes = append(k.notes, "no body: keyed on "+on)
		return
	}
	k.todos = append(k.todos, "no request body: every call keyed on "+on+
		" is one intent; make sure a second call means the same thing as the first")
}

func braced(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{" + n + "}"
	}
	return strings.Join(out, ", ")
}

// fromSchema proposes fields from an object schema.
func (k *keyProposal) fromSchema(s *openapi3.Schema, kind oaBody) {
	if alts := alternatives(s); len(alts) > 0 {
		k.todos = append(k.todos, fmt.Sprintf("the body is one of %d shapes (oneOf/anyOf): "+
			"the key is the whole body; name key fields that every shape has", len(alts)))
		return
	}
	props, required := objectOf(s, map[*openapi3.Schema]bool{})
	k.idempotencyField = idempotencyField(props)
	var left []string // required properties that cannot be keyed as they are
	for _, name := range required {
		if name == k.idempotencyField || props[name] == nil || props[name].Value == nil || props[name].Value.ReadOnly {
			continue
		}
		paths, ok := keyPaths(name, props[name].Value, kind, 0, map[*openapi3.Schema]bool{s: true})
		for _, p := range paths {
			if rules.ValidKeyPath(p) != nil || slices.Contains(k.fields, p) {
				ok = false
				continue
			}
			k.fields = append(k.fields, p)
		}
		if !ok {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		k.todos = append(k.todos, fmt.Sprintf("key: the required %s cannot be keyed as it is (a form sends objects and arrays as name[...] parts): "+
			"name the parts that identify the intent (form paths such as %s[id])", strings.Join(left, ", "), left[0]))
	}
	k.candidateTODO(props, required)
}

// candidateTODO asks a human to review the fields, naming the optional
// properties that might tell intents apart.
func (k *keyProposal) candidateTODO(props openapi3.Schemas, required []string) {
	var cands []string
	for _, name := range sortedKeys(props) {
		p := props[name]
		if slices.Contains(required, name) || name == k.idempotencyField || p == nil || p.Value == nil || p.Value.ReadOnly {
			continue
		}
		cands = append(cands, name)
	}
	more := ""
	if len(cands) > maxCandidates {
		more = fmt.Sprintf(" and %d more", len(cands)-maxCandidates)
		cands = cands[:maxCandidates]
	}
	list := "none"
	if len(cands) > 0 {
		list = strings.Join(cands, ", ") + more
	}
	if len(k.fields) == 0 {
		what := "the schema requires no property"
		if slices.Equal(required, []string{k.idempotencyField}) {
			what = "the schema requires no property but the idempotency key"
		}
		whole := "the whole body"
		if k.idempotencyField != "" {
			whole += " but " + k.idempotencyField
		}
		k.todos = append(k.todos, "key: "+what+", so the key is "+whole+" "+
			"(a retry that differs in any field gets a new key); name the fields that identify the intent among: "+list)
		return
	}
	k.todos = append(k.todos, "key: the fields are the schema's required properties; add optional ones that tell "+
		"two intents apart (to fields and key.optional), among: "+list)
}

// alternatives returns a schema's oneOf or anyOf alternatives.
func alternatives(s *openapi3.Schema) openapi3.SchemaRefs {
	if len(s.OneOf) > 0 {
		return s.OneOf
	}
	return s.AnyOf
}

// objectOf merges a schema's properties and required names with those of
// its allOf parts; required names come sorted, once each.
func objectOf(s *openapi3.Schema, seen map[*openapi3.Schema]bool) (openapi3.Schemas, []string) {
	props := openapi3.Schemas{}
	var required []string
	var walk func(*openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for name, p := range s.Properties {
			if _, ok := props[name]; !ok {
				props[name] = p
			}
		}
		required = append(required, s.Required...)
		for _, part := range s.AllOf {
			if part != nil {
				walk(part.Value)
			}
		}
	}
	walk(s)
	slices.Sort(required)
	return props, slices.Compact(required)
}

// keyPaths returns the key paths of a required property: its required
// sub-properties where it is an object that has some, else the property
// itself. ok is false for a form property sent as parts (an object or
// array) whose parts are not known.
func keyPaths(name string, s *openapi3.Schema, kind oaBody, depth int, seen map[*openapi3.Schema]bool) ([]string, bool) {
	self := escapeKeyName(name, kind)
	if schemaIsObject(s) && depth < oaMaxDepth && !seen[s] {
		seen[s] = true
		defer delete(seen, s)
		props, required := objectOf(s, map[*openapi3.Schema]bool{})
		var out []string
		allOK := true
		for _, sub := range required {
			p := props[sub]
			if p == nil || p.Value == nil || p.Value.ReadOnly {
				continue
			}
			paths, ok := keyPaths(sub, p.Value, kind, depth+1, seen)
			allOK = allOK && ok
			for _, sp := range paths {
				out = append(out, joinKeyPath(self, sp, kind))
			}
		}
		if len(out) > 0 && allOK {
			return out, true
		}
	}
	if kind == oaForm && sentAsParts(s) {
		return nil, false
	}
	return []string{self}, true
}

// joinKeyPath appends a sub-path: a.b in JSON (gjson), a[b] in a form,
// whose nested names are literal keys.
func joinKeyPath(parent, sub string, kind oaBody) string {
	if kind == oaForm {
		first, rest, _ := strings.Cut(sub, "[")
		if rest != "" {
			rest = "[" + rest
		}
		return parent + "[" + first + "]" + rest
	}
	return parent + "." + sub
}

func schemaIsObject(s *openapi3.Schema) bool {
	return s.Type.Includes(openapi3.TypeObject) || len(s.Properties) > 0 || len(s.AllOf) > 0
}

// sentAsParts reports whether a form sends the property as name[...]
// parts: an object, an array, or alternatives among which one is.
func sentAsParts(s *openapi3.Schema) bool {
	if schemaIsObject(s) || s.Type.Includes(openapi3.TypeArray) {
		return true
	}
	for _, alt := range alternatives(s) {
		if alt != nil && alt.Value != nil && sentAsParts(alt.Value) {
			return true
		}
	}
	return false
}

// escapeKeyName escapes a property name as one component of a gjson
// path; in a form, brackets stay (they are part of the literal name).
func escapeKeyName(name string, kind oaBody) string {
	special := `\.|#@*?!=<>%()[]{}"`
	if kind == oaForm {
		special = `\.|#@*?!=<>%(){}"`
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if strings.IndexByte(special, name[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// idempotencyField finds a top-level string property that carries an
// idempotency key, by name or else by description.
func idempotencyField(props openapi3.Schemas) string {
	var byDesc string
	for _, name := range sortedKeys(props) {
		p := props[name]
		if p == nil || p.Value == nil || schemaIsObject(p.Value) || p.Value.Type.Includes(openapi3.TypeArray) {
			continue
		}
		if isIdempotencyName(name) {
			return name
		}
		if byDesc == "" && mentionsIdempotency(p.Value.Description) {
			byDesc = name
		}
	}
	return byDesc
}

// write renders the key section.
func (k *keyProposal) write(b *bytes.Buffer) {
	for _, n := range k.notes {
		b.WriteString("  # " + oneLine(n) + "\n")
	}
	switch {
	case len(k.fields) > 0:
		b.WriteString("  key:\n    fields: [" + joinScalars(k.fields) + "]\n")
	case k.idempotencyField != "":
		// The whole body minus the key an SDK mints afresh for every call.
		b.WriteString("  key:\n    ignore: [" + yamlScalar(rules.EscapeSimplePath(k.idempotencyField)) + "]\n")
	}
}
