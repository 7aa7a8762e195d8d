package rules_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/samples"
)

// keysDir holds the key collision cases: a rule file, samples whose
// key_differs_from pairs once shared a key (multipart filenames without
// their directories, an array index read like an object member "0", an
// escaped '/' in a {path...} value, a form read like JSON, integers beyond
// 2^53, decimals rounded through float64, NFC and NFD text, a body
// without its reference that spells the reference's fields) and
// same_key_as pairs that spell one intent twice (volatile fields of
// unlisted writes and of a reference's fallback), with keys.golden.
const keysDir = "testdata/keys"

// TestKeyCollisions derives every sample of testdata/keys and checks its
// pairs and its canonical form and key against keys.golden (rewrite it
// with -update after a deliberate change, and say in docs/keys.md what
// changed: journaled steps of the old form are not matched).
func TestKeyCollisions(t *testing.T) {
	file := filepath.Join(keysDir, "collisions.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	ss := readPackSamples(t, filepath.Join(keysDir, "samples.jsonl"))
	d := &rules.Deriver{Secret: packsSecret}
	rep := samples.Check(set, ss, d)
	for _, p := range rep.Problems {
		t.Error(p)
	}
	for _, g := range rep.Gaps(set) {
		t.Error(g)
	}
	compareGolden(t, filepath.Join(keysDir, "keys.golden"), packGolden(t, set, ss, d))
}
