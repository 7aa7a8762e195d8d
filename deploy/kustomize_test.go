package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// variant is one way to deploy toolguard on Kubernetes: a kustomization
// root under deploy/ and the journal backend its toolguard uses.
type variant struct {
	name    string // subtest name
	dir     string // kustomization root, relative to deploy/
	backend string // journal.backend: bolt or postgres
}

// variants are the shipped Kubernetes variants. Every manifest file under
// kubernetes/ belongs to one of them, or is listed in standalone.
var variants = []variant{
	{name: "single", dir: "kubernetes", backend: "bolt"},
	{name: "replicas", dir: "kubernetes/replicas", backend: "postgres"},
}

// standalone are manifests applied on their own (kubectl apply -f), in no
// kustomization.
var standalone = []string{
	"kubernetes/maintenance/journal-shell.yaml",
	"kubernetes/replicas/migrate-job.yaml",
}

// kustomizationFiles returns the manifest files the kustomization at dir
// applies, following directory resources into their own kustomizations.
// It refuses what kustomize refuses: a file resource outside the root
// (kustomize's default load restrictor) and a directory resource without
// a kustomization.yaml.
func kustomizationFiles(t *testing.T, dir string) []string {
	t.Helper()
	k := loadFile(t, filepath.Join(dir, "kustomization.yaml"))
	if len(k) != 1 || k[0].kind() != "Kustomization" {
		t.Fatalf("%s/kustomization.yaml: want one document of kind Kustomization", dir)
	}
	for key := range k[0].doc {
		if !slices.Contains([]string{"apiVersion", "kind", "resources"}, key) {
			t.Fatalf("%s/kustomization.yaml: field %q is not understood by this test (it reads resources only)", dir, key)
		}
	}
	var files []string
	for _, r := range strList(k[0].doc["resources"]) {
		p := filepath.Join(dir, r)
		info, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s/kustomization.yaml: resource %s: %v", dir, r, err)
		}
		if info.IsDir() {
			files = append(files, kustomizationFiles(t, p)...)
			continue
		}
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(r) {
			t.Fatalf("%s/kustomization.yaml: resource %s is outside the kustomization's root, which kustomize refuses; "+
				"move it into a directory with its own kustomization.yaml and list that directory", dir, r)
		}
		files = append(files, p)
	}
	return files
}

// loadVariant parses the manifests variant v applies.
func loadVariant(t *testing.T, v variant) []manifest {
	t.Helper()
	var out []manifest
	for _, f := range kustomizationFiles(t, v.dir) {
		out = append(out, loadFile(t, f)...)
	}
	return out
}

func TestKustomizationsCoverEveryManifest(t *testing.T) {
	applied := map[string]bool{}
	for _, v := range variants {
		for _, f := range kustomizationFiles(t, v.dir) {
			applied[filepath.Clean(f)] = true
		}
	}
	for _, m := range loadManifests(t) {
		f := filepath.Clean(m.file)
		if m.kind() == "Kustomization" || applied[f] || slices.Contains(standalone, filepath.ToSlash(f)) {
			continue
		}
		t.Errorf("%v: in no kustomization of %v and not a standalone manifest", m, variants)
	}
}

// forEachVariant runs test as a subtest for every variant's workload.
func forEachVariant(t *testing.T, test func(*testing.T, sidecar)) {
	t.Helper()
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { test(t, loadSidecar(t, v)) })
	}
}

// secretName reports whether an environment variable's name says it holds
// a secret value (a token, a password, a DSN that may carry one), which
// must come from a Secret, never a literal. NAME_FILE names a file.
func secretName(name string) bool {
	if strings.HasSuffix(name, "_FILE") {
		return false
	}
	up := strings.ToUpper(name)
	return strings.Contains(up, "TOKEN") || strings.Contains(up, "PASSWORD") || strings.Contains(up, "SECRET") || strings.HasSuffix(up, "_DSN")
}
