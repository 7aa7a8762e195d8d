package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// manifestGlobs are the YAML files the tests read, relative to deploy/.
var manifestGlobs = []string{"kubernetes/*.yaml", "kubernetes/*/*.yaml"}

// manifest is one YAML document of a file under kubernetes/.
type manifest struct {
	file string
	doc  map[string]any
}

func (m manifest) kind() string { return str(m.doc["kind"]) }
func (m manifest) name() string { return str(dig(m.doc, "metadata", "name")) }
func (m manifest) String() string {
	return fmt.Sprintf("%s: %s/%s", m.file, m.kind(), m.name())
}

// loadManifests parses every YAML document of every file under kubernetes/.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	var files []string
	for _, g := range manifestGlobs {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests match %v", manifestGlobs)
	}
	var out []manifest
	for _, f := range files {
		out = append(out, loadFile(t, f)...)
	}
	return out
}

// loadFile parses every YAML document of file f.
func loadFile(t *testing.T, f string) []manifest {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, f, data)
}

// parseManifests parses every YAML document of data, which came from
// source (a file, or a rendering of the chart).
func parseManifests(t *testing.T, source string, data []byte) []manifest {
	t.Helper()
	var out []manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", source, i, err)
		}
		if doc == nil { // an empty document, e.g. after a leading ---
			continue
		}
		out = append(out, manifest{file: source, doc: doc})
	}
	return out
}

// find returns the documents of the given kind.
func find(ms []manifest, kind string) []manifest {
	var out []manifest
	for _, m := range ms {
		if m.kind() == kind {
			out = append(out, m)
		}
	}
	return out
}

// findNamed returns the document of the given kind and name.
func findNamed(t *testing.T, ms []manifest, kind, name string) manifest {
	t.Helper()
	for _, m := range find(ms, kind) {
		if m.name() == name {
			return m
		}
	}
	var files []string
	for _, m := range ms {
		if !slices.Contains(files, m.file) {
			files = append(files, m.file)
		}
	}
	t.Fatalf("no %s named %q in %v", kind, name, files)
	return manifest{}
}

// dig walks maps by key; a missing key or a non-map on the way gives nil.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// number reads a YAML number whatever Go type the decoder chose.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

// podSpecOf returns the pod spec of a Pod or of a workload's template.
func podSpecOf(m manifest) map[string]any {
	switch m.kind() {
	case "Pod":
		return mapOf(m.doc["spec"])
	case "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet":
		return mapOf(dig(m.doc, "spec", "template", "spec"))
	}
	return nil
}

// container is one container of a pod spec.
type container struct {
	init  bool // listed under initContainers
	index int  // position in its list
	m     map[string]any
}

func (c container) name() string { return str(c.m["name"]) }

// containers lists the init containers, then the main containers.
func containers(pod map[string]any) []container {
	var out []container
	for _, field := range []string{"initContainers", "containers"} {
		for i, c := range list(pod[field]) {
			out = append(out, container{init: field == "initContainers", index: i, m: mapOf(c)})
		}
	}
	return out
}

func containerNamed(t *testing.T, pod map[string]any, name string) container {
	t.Helper()
	for _, c := range containers(pod) {
		if c.name() == name {
			return c
		}
	}
	t.Fatalf("no container named %q", name)
	return container{}
}

// before reports whether a starts before b: init containers run in order,
// all of them before the main containers.
func before(a, b container) bool {
	if a.init != b.init {
		return a.init
	}
	return a.index < b.index
}

// securityField is a container's effective securityContext setting: its
// own, or the pod's for the fields a pod may set.
func securityField(pod map[string]any, c container, field string) any {
	if v, ok := mapOf(c.m["securityContext"])[field]; ok {
		return v
	}
	switch field {
	case "runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile":
		return mapOf(pod["securityContext"])[field]
	}
	return nil
}

// envEntry is one item of a container's env list.
type envEntry struct {
	name      string
	value     string
	hasValue  bool
	valueFrom map[string]any
}

func envOf(c container) map[string]envEntry {
	out := map[string]envEntry{}
	for _, e := range list(c.m["env"]) {
		em := mapOf(e)
		v, has := em["value"]
		out[str(em["name"])] = envEntry{name: str(em["name"]), value: str(v), hasValue: has, valueFrom: mapOf(em["valueFrom"])}
	}
	return out
}

// environ is a container's literal env values in os.Environ form, in order.
func environ(c container) []string {
	var out []string
	for _, e := range list(c.m["env"]) {
		em := mapOf(e)
		if v, ok := em["value"]; ok {
			out = append(out, str(em["name"])+"="+str(v))
		}
	}
	return out
}

// mount is a volumeMount of a container with the volume it mounts.
type mount struct {
	path     string
	subPath  string
	readOnly bool
	volume   map[string]any // the pod's volume of that name
}

func (m mount) volumeName() string { return str(m.volume["name"]) }

func mounts(pod map[string]any, c container) []mount {
	vols := map[string]map[string]any{}
	for _, v := range list(pod["volumes"]) {
		vm := mapOf(v)
		vols[str(vm["name"])] = vm
	}
	var out []mount
	for _, vm := range list(c.m["volumeMounts"]) {
		m := mapOf(vm)
		ro, _ := m["readOnly"].(bool)
		out = append(out, mount{path: str(m["mountPath"]), subPath: str(m["subPath"]), readOnly: ro, volume: vols[str(m["name"])]})
	}
	return out
}

// mountOf returns the mount that holds path in c: the one with the longest
// mountPath that is path or a parent of it.
func mountOf(pod map[string]any, c container, path string) (mount, bool) {
	var best mount
	found := false
	for _, m := range mounts(pod, c) {
		if (path == m.path || strings.HasPrefix(path, strings.TrimSuffix(m.path, "/")+"/")) && len(m.path) >= len(best.path) {
			best, found = m, true
		}
	}
	return best, found
}

// secretKeys lists the keys of a Secret a volume projects; nil when the
// volume is no Secret, every key (["*"]) when it names no items.
func secretKeys(vol map[string]any) []string {
	s := mapOf(vol["secret"])
	if s == nil {
		return nil
	}
	items := list(s["items"])
	if len(items) == 0 {
		return []string{"*"}
	}
	var keys []string
	for _, it := range items {
		keys = append(keys, str(mapOf(it)["key"]))
	}
	return keys
}

// probe returns a probe's HTTP path and port, resolving a named port
// against the container's ports.
func probe(c container, name string) (path string, port int, ok bool) {
	get := mapOf(dig(c.m, name, "httpGet"))
	if get == nil {
		return "", 0, false
	}
	p := get["port"]
	if n, isNum := number(p); isNum {
		return str(get["path"]), int(n), true
	}
	for _, cp := range list(c.m["ports"]) {
		if str(mapOf(cp)["name"]) == str(p) {
			n, _ := number(mapOf(cp)["containerPort"])
			return str(get["path"]), int(n), true
		}
	}
	return str(get["path"]), 0, true
}

func strList(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
