package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/url"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzDerive checks key derivation: it never panics, a body that differs
// only in field order and whitespace gets the same key, ignored fields do
// not count, a body is refused for missing key fields only when it lacks
// them, the same members sent as a form and as JSON get different keys,
// and an array read by a key field's '#' keys apart from an object with a
// member "#" of the same value. A route with key.reference and the route
// of unlisted writes never refuse for a missing field, and keying the
// whole request they ignore the file's volatile fields. Seeds:
// testdata/fuzz/FuzzDerive.
func FuzzDerive(f *testing.F) {
	api, err := Parse("fuzz.yaml", []byte(`api: fuzz
hosts: [api.fuzz]
credential: {header: Authorization}
volatile: [vol, 'expand\[\]']
routes:
  - name: ref
    match: POST /v1/refs
    effect: irreversible
    key:
      reference: [ref]
      fields: [a]
  - name: whole
    match: POST /v1/things/{id}
    effect: irreversible
    key:
      ignore: [trace, "meta.trace"]
  - name: fields
    match: POST /v1/other
    effect: irreversible
    key:
      fields: [a, "b.c", "d.#"]
      optional: ["d.#"]
`))
	if err != nil {
		f.Fatal(err)
	}
	d := &Deriver{Secret: []byte("0123456789abcdef0123456789abcdef")}
	f.Fuzz(func(t *testing.T, body []byte, form bool, cred string) {
		ct := "application/json"
		if form {
			ct = "application/x-www-form-urlencoded"
		}
		for _, r := range append(api.Routes, api.UnlistedRouteOf("POST")) {
			in := Input{ContentType: ct, Body: body, Credential: cred, PathValues: map[string]string{"id": "7"}, EscapedPath: "/v1/x"}
			it, err := d.Derive(r, in)
			if err != nil {
				if !errors.Is(err, ErrInvalidBody) {
					t.Fatalf("Derive error %v does not wrap ErrInvalidBody", err)
				}
				if (r.Unlisted() || r.Key.Reference != nil) && errors.Is(err, ErrMissingField) {
					t.Fatalf("route %s refused a body for a missing field: %v", r.Name, err)
				}
				checkMissing(t, r, ct, body, err)
				continue
			}
			if len(it.Key) != 64 {
				t.Fatalf("key %q is not hex sha256", it.Key)
			}
			if form {
				continue
			}
			var v map[string]any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if dec.Decode(&v) != nil || v == nil {
				continue
			}
			checkContainerKinds(t, d, r, in, v)
			checkFormDiffers(t, d, r, in, it.Key)
			checkVolatile(t, d, r, in, v, it)
			v["trace"] = "changed"
			re, _ := json.MarshalIndent(v, "", "  ")
			again, err := d.Derive(r, Input{ContentType: ct, Body: re, Credential: cred, PathValues: map[string]string{"id": "7"}})
			if err != nil {
				continue // duplicate keys collapse on re-encoding; the original was refused or kept
			}
			if r.Name == "whole" && again.Key != it.Key {
				t.Fatalf("re-encoded body with a changed ignored field: key %s, want %s\n%s\n%s", again.Key, it.Key, body, re)
			}
		}
	})
}

// checkVolatile changes the volatile member vol of a body keyed as a whole
// request: the key must not change.
func checkVolatile(t *testing.T, d *Deriver, r *Route, in Input, v map[string]any, it *Intent) {
	if !bytes.Contains(it.Material, []byte(`"reference":null`)) && !r.Unlisted() {
		return
	}
	alt := maps.Clone(v)
	alt["vol"] = []any{"changed", len(v)}
	in.Body, _ = json.Marshal(alt)
	again, err := d.Derive(r, in)
	if err == nil && again.Key != it.Key {
		t.Fatalf("a changed volatile field changed the key:\n%s\n%s", it.Material, again.Material)
	}
}

// checkMissing checks that a *MissingFieldsError names only required
// fields that the canonical body really lacks, and at least one.
func checkMissing(t *testing.T, r *Route, ct string, body []byte, err error) {
	var me *MissingFieldsError
	if !errors.As(err, &me) {
		return
	}
	doc, cerr := CanonicalBody(nil, ct, body)
	if cerr != nil || len(me.Fields) == 0 {
		t.Fatalf("missing fields %v of a body that does not canonicalize (%v)", me.Fields, cerr)
	}
	for _, f := range me.Fields {
		if gjson.GetBytes(doc, f).Exists() || slices.Contains(r.Key.Optional, f) {
			t.Fatalf("field %q reported missing from %s", f, doc)
		}
	}
}

// checkContainerKinds replaces an array d of the "fields" route (read as
// d.#) with {"#": its length}: gjson reads the same value, the key must
// differ.
func checkContainerKinds(t *testing.T, d *Deriver, r *Route, in Input, v map[string]any) {
	arr, ok := v["d"].([]any)
	if r.Name != "fields" || !ok {
		return
	}
	a, errA := d.Derive(r, in)
	alt := maps.Clone(v)
	alt["d"] = map[string]any{"#": len(arr)}
	body, _ := json.Marshal(alt)
	in.Body = body
	b, errB := d.Derive(r, in)
	if errA == nil && errB == nil && a.Key == b.Key {
		t.Fatalf("an array and an object with member \"#\" share a key:\n%s\n%s", a.Material, b.Material)
	}
}

// checkFormDiffers derives a JSON body's top-level string members sent
// as a form: the canonical documents may be equal, the keys must not be.
func checkFormDiffers(t *testing.T, d *Deriver, r *Route, in Input, key string) {
	form := url.Values{}
	for k, v := range gjson.ParseBytes(in.Body).Map() {
		if v.Type != gjson.String {
			return
		}
		form.Set(k, v.Str)
	}
	in.ContentType, in.Body = "application/x-www-form-urlencoded", []byte(form.Encode())
	if it, err := d.Derive(r, in); err == nil && it.Key == key {
		t.Fatalf("form %s and its JSON share a key: %s", in.Body, it.Material)
	}
}
