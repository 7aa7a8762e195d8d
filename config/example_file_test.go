package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const exampleFile = "../config.example.yaml"

// TestExampleFile checks config.example.yaml: it parses, sets every setting
// explicitly, to its default, and documents each setting's environment
// variable and default.
func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}

	// From the zero Config, so that a setting the file leaves out shows.
	var got Config
	seen, err := decodeYAML(data, &got)
	if err != nil {
		t.Fatalf("%s: %v", exampleFile, err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s differs from Default():\n got %+v\nwant %+v", exampleFile, got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("%s: %v", exampleFile, err)
	}

	text := string(data)
	for _, s := range settings() {
		if !slices.Contains(seen, s.path) {
			t.Errorf("%s does not set %s", exampleFile, s.path)
		}
		if !strings.Contains(text, "# env "+s.env+", default ") {
			t.Errorf("%s does not document %s as \"# env %s, default ...\"", exampleFile, s.path, s.env)
		}
	}
}
