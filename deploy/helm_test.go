package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/toolguard/toolguard/internal/skipped"
)

// chartDir is the Helm chart, relative to deploy/.
const chartDir = "helm/toolguard"

// chartPacksDir holds the chart's copies of the rule files of rules/packs:
// Helm reads files from inside the chart only. TestChartPacksAreCopies
// keeps them equal to rules/packs.
const chartPacksDir = chartDir + "/packs"

// packsDir is rules/packs, one directory per pack, relative to deploy/.
const packsDir = "../rules/packs"

// chartKubeVersion is the Kubernetes version the chart is rendered for:
// the oldest it supports (native sidecars). A helm built with go install
// assumes v1.20 unless told.
const chartKubeVersion = "v1.29.0"

// helmBinary finds helm: $TOOLGUARD_HELM, the repository's bin/ (where
// .ci/run installs it), or PATH. Missing, the test fails in CI and skips
// elsewhere.
func helmBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("TOOLGUARD_HELM"), filepath.Join("..", "bin", "helm")} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	const how = "helm not found: GOFLAGS= GOBIN=$PWD/bin go install helm.sh/helm/v3/cmd/helm@v3.22.0"
	if os.Getenv("CI") != "" {
		t.Fatal(how)
	}
	skipped.Skip(t, "helm (bin/helm)", how)
	return ""
}

// runHelm runs helm in deploy/ with its configuration, cache and data in a
// temporary directory, and returns what it printed on stdout; err carries
// stderr.
func runHelm(t *testing.T, helm string, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &helmError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// helmError is a helm run that failed, with what it said.
type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + strings.TrimSpace(e.stderr)
}

// chartCase is one set of values the chart is rendered with.
type chartCase struct {
	name string
	set  []string // --set flags
	// files are rules.files, given with --set-file: a file name in the
	// rules ConfigMap and the file (relative to deploy/) it must hold.
	files map[string]string
	// backend is the journal.backend the rendering must end up with.
	backend string
	// stopped: replicaCount 0 with the maintenance pod; there is no
	// running toolguard to check.
	stopped bool
	// wantErr: helm template must fail, saying this.
	wantErr string
}

func (tc chartCase) args() []string {
	args := []string{"template", "agent", chartDir, "--kube-version", chartKubeVersion}
	for _, s := range tc.set {
		args = append(args, "--set", s)
	}
	for name, file := range tc.files {
		args = append(args, "--set-file", "rules.files."+strings.ReplaceAll(name, ".", `\.`)+"="+file)
	}
	return args
}

// chartCases renders the chart as each deploy/kubernetes variant does, and
// more; the last ones must be refused.
func chartCases(t *testing.T) []chartCase {
	return []chartCase{
		{name: "bolt", backend: "bolt"},
		{name: "postgres", set: []string{"journal.backend=postgres", "replicaCount=3"}, backend: "postgres"},
		{
			name:    "bolt with the rule files of deploy/kubernetes",
			set:     []string{"rules.packs=null"},
			files:   map[string]string{"stripe.yaml": "../examples/rules/stripe.yaml", "postmark.yaml": "../examples/rules/postmark.yaml"},
			backend: "bolt",
		},
		{
			name:    "postgres with every pack",
			set:     []string{"journal.backend=postgres", "replicaCount=2", "rules.packs={" + strings.Join(chartPacks(t), ",") + "}"},
			backend: "postgres",
		},
		{name: "bolt with the admin API on port 9000", set: []string{"config.admin.listen=0.0.0.0:9000", "config.listen=127.0.0.1:9001"}, backend: "bolt"},
		{name: "bolt stopped for maintenance", set: []string{"replicaCount=0", "maintenance.enabled=true"}, backend: "bolt", stopped: true},

		{name: "bolt with 2 replicas", set: []string{"replicaCount=2"}, wantErr: "replicaCount 2 needs journal.backend postgres"},
		{name: "unknown backend", set: []string{"journal.backend=mysql"}, wantErr: `journal.backend "mysql": want bolt or postgres`},
		{name: "unknown pack", set: []string{"rules.packs={stripe,nope}"}, wantErr: `rules.packs: no pack "nope"`},
		{name: "DSN in the ConfigMap", set: []string{"journal.backend=postgres", "config.journal.dsn=postgres://u:p@db/x"}, wantErr: "config.journal.dsn: set by the chart"},
		{name: "token in the ConfigMap", set: []string{"config.admin.token=t0ken"}, wantErr: "config.admin.token: the tokens come from the Secret"},
		{name: "proxy beyond loopback", set: []string{"config.listen=0.0.0.0:8480"}, wantErr: `config.listen "0.0.0.0:8480": want a loopback address`},
		{name: "maintenance while running", set: []string{"maintenance.enabled=true"}, wantErr: "maintenance.enabled needs replicaCount 0 (got 1)"},
		{name: "no rule files", set: []string{"rules.packs=null"}, wantErr: "rules.packs and rules.files are both empty"},
	}
}

// TestHelmChart renders the chart with every chartCase and runs the checks
// the manifests of deploy/kubernetes go through on what it renders.
func TestHelmChart(t *testing.T) {
	helm := helmBinary(t)
	for _, tc := range chartCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runHelm(t, helm, tc.args()...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("helm template: got error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			testRendering(t, tc, parseManifests(t, "helm template ("+tc.name+")", out))
		})
	}
}

// testRendering runs the checks of deploy/kubernetes on one rendering.
func testRendering(t *testing.T, tc chartCase, ms []manifest) {
	t.Run("well formed", func(t *testing.T) { testWellFormed(t, ms) })
	t.Run("no literal tokens", func(t *testing.T) { testNoLiteralTokens(t, ms) })
	t.Run("every container hardened", func(t *testing.T) { testEveryContainerHardened(t, ms) })
	t.Run("claims exist", func(t *testing.T) { testClaimsExist(t, ms) })
	t.Run("rule files are copies", func(t *testing.T) { testChartRuleFiles(t, tc, ms) })
	if tc.stopped {
		t.Run("maintenance", func(t *testing.T) { testMaintenancePod(t, ms) })
		return
	}
	s := newSidecar(t, "helm template ("+tc.name+")", tc.backend, ms)
	t.Run("toolguard", func(t *testing.T) { testSidecar(t, s) })
	t.Run("agent", func(t *testing.T) { testAgent(t, s) })
	t.Run("config holds no secrets", func(t *testing.T) { testConfigHoldsNoSecrets(t, s) })
	t.Run("rule files", func(t *testing.T) { testRuleFiles(t, s) })
	t.Run("network policy", func(t *testing.T) { testNetworkPolicy(t, s) })
	if tc.backend == "postgres" {
		t.Run("migrate job", func(t *testing.T) {
			jobs := find(ms, "Job")
			if len(jobs) != 1 {
				t.Fatalf("want one Job (journal.migrate.enabled), got %v", jobs)
			}
			testMigrateJob(t, s, jobs[0])
		})
	}
}

// testChartRuleFiles checks that every rule file the rendering holds is a
// byte-for-byte copy of its source: the file given in rules.files, or the
// pack's rule file in rules/packs.
func testChartRuleFiles(t *testing.T, tc chartCase, ms []manifest) {
	n := 0
	for _, cm := range find(ms, "ConfigMap") {
		for name, v := range mapOf(cm.doc["data"]) {
			if !isRuleFile(str(v)) {
				continue
			}
			n++
			src, ok := tc.files[name]
			if !ok {
				pack := strings.TrimSuffix(name, filepath.Ext(name))
				src = filepath.Join(packsDir, pack, pack+".yaml")
			}
			if str(v) != readFile(t, src) {
				t.Errorf("%v: %s differs from %s", cm, name, src)
			}
		}
	}
	if n == 0 {
		t.Fatal("no rule files rendered")
	}
}

// testMaintenancePod checks the chart's maintenance pod: toolguard
// stopped, the shell on the claim toolguard's journal is on.
func testMaintenancePod(t *testing.T, ms []manifest) {
	deployments, pods := find(ms, "Deployment"), find(ms, "Pod")
	if len(deployments) != 1 || len(pods) != 1 {
		t.Fatalf("want one Deployment and one Pod, got %v and %v", deployments, pods)
	}
	if n, ok := number(dig(deployments[0].doc, "spec", "replicas")); !ok || n != 0 {
		t.Errorf("%v: replicas = %v, want 0 while the shell may open the journal", deployments[0], dig(deployments[0].doc, "spec", "replicas"))
	}
	claims := func(m manifest) []string {
		var out []string
		for _, v := range list(podSpecOf(m)["volumes"]) {
			if c := str(dig(v, "persistentVolumeClaim", "claimName")); c != "" {
				out = append(out, c)
			}
		}
		return out
	}
	if got, want := claims(pods[0]), claims(deployments[0]); len(want) != 1 || !slices.Equal(got, want) {
		t.Errorf("%v mounts claims %v, toolguard's journal is on %v", pods[0], got, want)
	}
}

func TestHelmLint(t *testing.T) {
	helm := helmBinary(t)
	for _, set := range [][]string{nil, {"journal.backend=postgres", "replicaCount=3"}} {
		t.Run(strings.Join(append([]string{"defaults"}, set...), ","), func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			if _, err := runHelm(t, helm, args...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// chartPacks lists the packs the chart ships, by name.
func chartPacks(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartPacksDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no packs in %s: %v", chartPacksDir, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	return names
}

// TestChartPacksAreCopies checks that the chart ships every pack of
// rules/packs, each a byte-for-byte copy of the pack's rule file: rules/packs
// is the one source (TestPacks checks its samples and keys), the chart
// holds copies because Helm reads files from inside the chart only.
func TestChartPacksAreCopies(t *testing.T) {
	entries, err := os.ReadDir(packsDir)
	if err != nil {
		t.Fatal(err)
	}
	var packs []string
	for _, e := range entries {
		if e.IsDir() {
			packs = append(packs, e.Name())
		}
	}
	for _, p := range packs {
		fix := "cp rules/packs/" + p + "/" + p + ".yaml deploy/" + chartPacksDir + "/"
		want := readFile(t, filepath.Join(packsDir, p, p+".yaml"))
		got, err := os.ReadFile(filepath.Join(chartPacksDir, p+".yaml"))
		switch {
		case err != nil:
			t.Errorf("the chart lacks pack %s (%v): %s", p, err, fix)
		case string(got) != want:
			t.Errorf("%s/%s.yaml differs from rules/packs/%s/%s.yaml: %s", chartPacksDir, p, p, p, fix)
		}
	}
	for _, p := range chartPacks(t) {
		if !slices.Contains(packs, p) {
			t.Errorf("%s/%s.yaml: no pack %s in rules/packs; remove the copy", chartPacksDir, p, p)
		}
	}
}

// TestChartValuesDocumented checks that the chart's README names every
// value of values.yaml down to the second level (journal.backend,
// secrets.ca, ...) in its table; config and resources are one row each.
func TestChartValuesDocumented(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(chartDir, "values.yaml"))), &values); err != nil {
		t.Fatal(err)
	}
	readme := readFile(t, filepath.Join(chartDir, "README.md"))
	for k, v := range values {
		keys := []string{k}
		if m, ok := v.(map[string]any); ok && len(m) > 0 && k != "config" && k != "resources" {
			keys = nil
			for sub := range m {
				keys = append(keys, k+"."+sub)
			}
		}
		for _, key := range keys {
			if !strings.Contains(readme, "| `"+key) {
				t.Errorf("%s/README.md: no row for value %s", chartDir, key)
			}
		}
	}
}
