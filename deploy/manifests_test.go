package deploy

import (
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/rules"
)

// The containers of the example workload, by name.
const (
	toolguardName = "toolguard"
	agentName     = "agent"
)

// sidecar is the workload of one deployment (a kustomize variant, or a
// rendering of the Helm chart) and the configuration its toolguard
// container ends up with.
type sidecar struct {
	name      string // the deployment's, for messages
	backend   string // the journal.backend it must end up with: bolt or postgres
	ms        []manifest
	workload  manifest
	pod       map[string]any
	toolguard container
	agent     container
	// cfg is what toolguard serve builds: defaults, the ConfigMap's
	// config.yaml, the image's ENV, the container's env (LoadSecrets, which
	// reads the token files, is left out: a token file counts as a token).
	cfg config.Config
	// cfgText is the config.yaml of the ConfigMap.
	cfgText string
}

func loadSidecar(t *testing.T, v variant) sidecar {
	t.Helper()
	return newSidecar(t, v.name, v.backend, loadVariant(t, v))
}

// newSidecar finds the workload with the toolguard and agent containers
// among ms, the documents of the deployment called name, and builds the
// configuration its toolguard ends up with.
func newSidecar(t *testing.T, name, backend string, ms []manifest) sidecar {
	t.Helper()
	s := sidecar{ms: ms, name: name, backend: backend}
	var found []manifest
	for _, m := range s.ms {
		pod := podSpecOf(m)
		names := []string{}
		for _, c := range containers(pod) {
			names = append(names, c.name())
		}
		if containsAll(names, toolguardName, agentName) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want exactly one workload with containers %q and %q, found %v", name, toolguardName, agentName, found)
	}
	s.workload = found[0]
	s.pod = podSpecOf(s.workload)
	s.toolguard = containerNamed(t, s.pod, toolguardName)
	s.agent = containerNamed(t, s.pod, agentName)

	args := strList(s.toolguard.m["args"])
	if len(args) == 0 {
		args = jsonArgs(t, loadDockerfile(t).last(t, "CMD"))
	}
	if len(args) != 3 || args[0] != "serve" || args[1] != "--config" {
		t.Fatalf("toolguard args %q: want serve --config FILE (settings other than the paths belong in the ConfigMap)", args)
	}
	s.cfgText = configMapFile(t, s.ms, s.pod, s.toolguard, args[2])
	c, err := config.Parse(strings.NewReader(s.cfgText), config.Default())
	if err != nil {
		t.Fatalf("config.yaml of the ConfigMap: %v", err)
	}
	env := append(loadDockerfile(t).env(t), environ(s.toolguard)...) // later entries win
	if err := config.ApplyEnv(&c, env); err != nil {
		t.Fatalf("toolguard container env: %v", err)
	}
	s.cfg = c
	return s
}

// configMapFile returns the contents of the ConfigMap file that c sees at
// file.
func configMapFile(t *testing.T, ms []manifest, pod map[string]any, c container, file string) string {
	t.Helper()
	m, ok := mountOf(pod, c, file)
	if !ok {
		t.Fatalf("%s: nothing is mounted at %s", c.name(), file)
	}
	cmName := str(dig(m.volume, "configMap", "name"))
	if cmName == "" {
		t.Fatalf("%s: %s is on volume %q, want a ConfigMap", c.name(), file, m.volumeName())
	}
	key := m.subPath
	if key == "" {
		key = strings.TrimPrefix(file, strings.TrimSuffix(m.path, "/")+"/")
	}
	data, ok := dig(findNamed(t, ms, "ConfigMap", cmName).doc, "data", key).(string)
	if !ok {
		t.Fatalf("ConfigMap %s has no key %q", cmName, key)
	}
	return data
}

func host(t *testing.T, addr string) string {
	t.Helper()
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := number(p)
	return int(n)
}

func isLoopback(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

func TestManifestsWellFormed(t *testing.T) {
	testWellFormed(t, loadManifests(t))
}

func testWellFormed(t *testing.T, ms []manifest) {
	for _, m := range ms {
		t.Run(m.String(), func(t *testing.T) {
			if str(m.doc["apiVersion"]) == "" || m.kind() == "" {
				t.Errorf("lacks apiVersion or kind")
			}
			if m.kind() != "Kustomization" && m.name() == "" {
				t.Errorf("lacks metadata.name")
			}
		})
	}
}

func TestToolguardSidecar(t *testing.T) {
	forEachVariant(t, testSidecar)
}

// testSidecar checks what every deployment's toolguard container must do.
func testSidecar(t *testing.T, s sidecar) {
	adminPort := port(t, s.cfg.Admin.Listen)

	t.Run("native sidecar started before the agent", func(t *testing.T) {
		if !s.toolguard.init || str(s.toolguard.m["restartPolicy"]) != "Always" {
			t.Errorf("toolguard: want an init container with restartPolicy: Always (native sidecar, Kubernetes >= 1.29)")
		}
		if s.agent.init {
			t.Errorf("agent: want a main container")
		}
	})

	probes := []struct {
		probe, path string
	}{
		{"startupProbe", "/readyz"},
		{"readinessProbe", "/readyz"},
		{"livenessProbe", "/healthz"},
	}
	for _, tc := range probes {
		t.Run(tc.probe, func(t *testing.T) {
			path, port, ok := probe(s.toolguard, tc.probe)
			if !ok {
				t.Fatalf("no httpGet %s", tc.probe)
			}
			if path != tc.path || port != adminPort {
				t.Errorf("%s GET %s on port %d, want %s on the admin port %d", tc.probe, path, port, tc.path, adminPort)
			}
		})
	}

	security := []struct {
		field string
		ok    func(v any) bool
		want  string
	}{
		{"runAsNonRoot", func(v any) bool { return v == true }, "true"},
		{"runAsUser", func(v any) bool { n, _ := number(v); return n == 65532 }, "65532"},
		{"readOnlyRootFilesystem", func(v any) bool { return v == true }, "true"},
		{"allowPrivilegeEscalation", func(v any) bool { return v == false }, "false"},
		{"capabilities", func(v any) bool { return slices.Contains(strList(mapOf(v)["drop"]), "ALL") }, "drop: [ALL]"},
		{"seccompProfile", func(v any) bool { return str(mapOf(v)["type"]) == "RuntimeDefault" }, "type: RuntimeDefault"},
	}
	for _, tc := range security {
		t.Run("securityContext."+tc.field, func(t *testing.T) {
			if v := securityField(s.pod, s.toolguard, tc.field); !tc.ok(v) {
				t.Errorf("toolguard securityContext.%s = %v, want %s", tc.field, v, tc.want)
			}
		})
	}

	t.Run("resources", func(t *testing.T) {
		for _, p := range [][]string{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
			if dig(s.toolguard.m["resources"], p...) == nil {
				t.Errorf("toolguard has no resources.%s", strings.Join(p, "."))
			}
		}
	})

	t.Run("config is valid with the tokens the Secret provides", func(t *testing.T) {
		if err := s.cfg.Validate(); err != nil {
			t.Fatalf("with the token files: %v", err)
		}
		c := s.cfg
		c.Admin.TokenFile, c.Admin.AgentTokenFile = "", ""
		c.Admin.Token, c.Admin.AgentToken = "operator-token-from-secret", "agent-token-from-secret"
		if err := c.Validate(); err != nil {
			t.Fatalf("with the tokens read: %v", err)
		}
	})

	t.Run("admin API beyond loopback, proxy on loopback", func(t *testing.T) {
		if h := host(t, s.cfg.Admin.Listen); isLoopback(h) {
			t.Errorf("admin.listen %s: kubelet probes come in on the pod IP; listen beyond loopback", s.cfg.Admin.Listen)
		}
		if h := host(t, s.cfg.Listen); !isLoopback(h) {
			t.Errorf("listen %s: the proxy has no authentication; keep it on loopback in a sidecar", s.cfg.Listen)
		}
		c := s.cfg
		c.Admin.Token, c.Admin.TokenFile, c.Admin.AgentToken, c.Admin.AgentTokenFile = "", "", "", ""
		if c.Validate() == nil {
			t.Errorf("config validates without a token although admin.listen is %s", c.Admin.Listen)
		}
	})

	t.Run("tokens come from a mounted Secret", func(t *testing.T) {
		for _, f := range []struct{ setting, file string }{
			{"admin.token_file", s.cfg.Admin.TokenFile},
			{"admin.agent_token_file", s.cfg.Admin.AgentTokenFile},
		} {
			if f.file == "" {
				t.Errorf("%s is not set", f.setting)
				continue
			}
			key, ok := secretKeyAt(s.pod, s.toolguard, f.file)
			if !ok {
				t.Errorf("%s %s: not a file of a mounted Secret", f.setting, f.file)
				continue
			}
			t.Logf("%s = Secret key %q", f.setting, key)
		}
	})

	t.Run("journal backend", func(t *testing.T) {
		if got := journalBackend(t, s); got != s.backend {
			t.Fatalf("toolguard's journal.backend is %q, want %q", got, s.backend)
		}
	})

	t.Run("rules from a ConfigMap", func(t *testing.T) {
		m, ok := mountOf(s.pod, s.toolguard, s.cfg.Rules.Dir)
		if !ok || m.path != s.cfg.Rules.Dir || dig(m.volume, "configMap", "name") == nil {
			t.Errorf("rules.dir %s: want a ConfigMap mounted there", s.cfg.Rules.Dir)
		}
	})

	t.Run("grace period outlasts the drain", func(t *testing.T) {
		grace, ok := number(s.pod["terminationGracePeriodSeconds"])
		drain := s.cfg.Shutdown.DrainTimeout.Seconds()
		if !ok || grace <= drain || grace <= 25 {
			t.Errorf("terminationGracePeriodSeconds = %v, want > shutdown.drain_timeout (%vs) and > 25", s.pod["terminationGracePeriodSeconds"], drain)
		}
	})

	switch s.backend {
	case "bolt":
		testBoltJournal(t, s)
	case "postgres":
		testPostgresJournal(t, s)
	default:
		t.Fatalf("%s: unknown backend %q", s.name, s.backend)
	}
}

// testBoltJournal checks the single-replica variant: a bbolt journal and
// the CA on a PersistentVolumeClaim, one writer.
func testBoltJournal(t *testing.T, s sidecar) {
	t.Run("journal on the PersistentVolumeClaim", func(t *testing.T) {
		claim := claimAt(t, s.pod, s.toolguard, s.cfg.Journal.Path)
		pvc := findNamed(t, s.ms, "PersistentVolumeClaim", claim)
		modes := strList(dig(pvc.doc, "spec", "accessModes"))
		for _, m := range modes {
			if m != "ReadWriteOnce" && m != "ReadWriteOncePod" {
				t.Errorf("PVC %s access mode %s: a journal has one writer (ReadWriteOnce or ReadWriteOncePod)", claim, m)
			}
		}
		if len(modes) == 0 {
			t.Errorf("PVC %s has no accessModes", claim)
		}
	})

	t.Run("CA on the journal's claim", func(t *testing.T) {
		if ca, journal := claimAt(t, s.pod, s.toolguard, s.cfg.CA.Dir), claimAt(t, s.pod, s.toolguard, s.cfg.Journal.Path); ca != journal {
			t.Errorf("CA on claim %q, journal on %q: the CA key must persist with the journal", ca, journal)
		}
	})

	t.Run("CA created before toolguard starts", func(t *testing.T) {
		var init *container
		for _, c := range containers(s.pod) {
			if args := strList(c.m["args"]); len(args) >= 2 && args[0] == "ca" && args[1] == "init" {
				init = &c
			}
		}
		if init == nil {
			t.Fatalf("no container runs toolguard ca init")
		}
		args := strList(init.m["args"])
		if i := slices.Index(args, "--dir"); i < 0 || i+1 >= len(args) || args[i+1] != s.cfg.CA.Dir {
			t.Errorf("%s: args %q, want --dir %s (toolguard's ca.dir)", init.name(), args, s.cfg.CA.Dir)
		}
		if !before(*init, s.toolguard) {
			t.Errorf("%s does not run before toolguard", init.name())
		}
		if a, b := claimAt(t, s.pod, *init, s.cfg.CA.Dir), claimAt(t, s.pod, s.toolguard, s.cfg.CA.Dir); a != b {
			t.Errorf("%s writes the CA to claim %q, toolguard reads it from %q", init.name(), a, b)
		}
	})

	t.Run("one writer: one replica, Recreate", func(t *testing.T) {
		if s.workload.kind() != "Deployment" {
			return
		}
		if n, _ := number(dig(s.workload.doc, "spec", "replicas")); n != 1 {
			t.Errorf("replicas = %v, want 1", dig(s.workload.doc, "spec", "replicas"))
		}
		if got := str(dig(s.workload.doc, "spec", "strategy", "type")); got != "Recreate" {
			t.Errorf("strategy = %q, want Recreate: a rolling update starts the new pod while the old one holds the journal", got)
		}
	})
}

// claimAt returns the PersistentVolumeClaim that holds path in c.
func claimAt(t *testing.T, pod map[string]any, c container, path string) string {
	t.Helper()
	m, ok := mountOf(pod, c, path)
	claim := str(dig(m.volume, "persistentVolumeClaim", "claimName"))
	if !ok || claim == "" {
		t.Fatalf("%s: %s is not on a PersistentVolumeClaim", c.name(), path)
	}
	if m.readOnly && c.name() == toolguardName {
		t.Errorf("%s: %s is mounted read-only", c.name(), path)
	}
	return claim
}

// secretKeyAt returns the Secret key that c sees as file.
func secretKeyAt(pod map[string]any, c container, file string) (string, bool) {
	m, ok := mountOf(pod, c, file)
	if !ok || dig(m.volume, "secret") == nil {
		return "", false
	}
	rel := strings.TrimPrefix(file, strings.TrimSuffix(m.path, "/")+"/")
	if m.subPath != "" {
		rel = m.subPath
	}
	items := list(dig(m.volume, "secret", "items"))
	if len(items) == 0 {
		return rel, true
	}
	for _, it := range items {
		if str(mapOf(it)["path"]) == rel {
			return str(mapOf(it)["key"]), true
		}
	}
	return "", false
}

func TestAgent(t *testing.T) {
	forEachVariant(t, testAgent)
}

func testAgent(t *testing.T, s sidecar) {
	env := envOf(s.agent)
	proxyURL := "http://" + s.cfg.Listen

	for _, name := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		t.Run(name, func(t *testing.T) {
			if got := env[name].value; got != proxyURL {
				t.Errorf("%s = %q, want %q (toolguard's listen)", name, got, proxyURL)
			}
		})
	}

	t.Run("NO_PROXY", func(t *testing.T) {
		hosts := strings.Split(env["NO_PROXY"].value, ",")
		if !containsAll(hosts, "127.0.0.1", "localhost") {
			t.Errorf("NO_PROXY = %q: the admin API on 127.0.0.1:%d must not go through the proxy", env["NO_PROXY"].value, port(t, s.cfg.Admin.Listen))
		}
	})

	caSrc := path.Join(s.cfg.CA.Dir, "ca.pem")
	for _, name := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"} {
		t.Run(name, func(t *testing.T) {
			file := env[name].value
			if file == "" {
				t.Fatalf("%s is not set", name)
			}
			m, ok := mountOf(s.pod, s.agent, file)
			switch {
			case !ok:
				t.Fatalf("%s %s: not on a mounted volume", name, file)
			case !m.readOnly:
				t.Errorf("%s %s: volume %s is mounted read-write; the agent must not change what it trusts", name, file, m.volumeName())
			case dig(m.volume, "persistentVolumeClaim") != nil:
				t.Errorf("%s %s: on the journal's claim; share only the certificate", name, file)
			case slices.Contains(secretKeys(m.volume), "*") || slices.Contains(secretKeys(m.volume), "ca-key.pem"):
				t.Errorf("%s %s: on a volume with the CA's key; share only the certificate", name, file)
			}
			// An init container, before the agent, writes the file from
			// toolguard's ca.pem.
			rel := strings.TrimPrefix(file, m.path+"/")
			var writer *container
			for _, c := range containers(s.pod) {
				for _, w := range mounts(s.pod, c) {
					if w.volumeName() == m.volumeName() && !w.readOnly && strings.Contains(script(c), path.Join(w.path, rel)) {
						writer = &c
					}
				}
			}
			if writer == nil {
				t.Fatalf("no container writes %s into volume %s", rel, m.volumeName())
			}
			if !before(*writer, s.agent) {
				t.Errorf("%s writes %s but does not run before the agent", writer.name(), rel)
			}
			if !strings.Contains(script(*writer), caSrc) {
				t.Errorf("%s does not read toolguard's CA %s", writer.name(), caSrc)
			}
			if a, b := volumeSource(t, s.pod, *writer, caSrc), volumeSource(t, s.pod, s.toolguard, s.cfg.CA.Dir); a != b {
				t.Errorf("%s reads %s from %s, toolguard's CA is on %s", writer.name(), caSrc, a, b)
			}
		})
	}

	t.Run("no access to the journal", func(t *testing.T) {
		for _, m := range mounts(s.pod, s.agent) {
			if dig(m.volume, "persistentVolumeClaim") != nil {
				t.Errorf("agent mounts claim volume %s at %s", m.volumeName(), m.path)
			}
		}
	})

	t.Run("the agent token only", func(t *testing.T) {
		operatorKey, ok := secretKeyAt(s.pod, s.toolguard, s.cfg.Admin.TokenFile)
		if !ok {
			t.Fatalf("admin.token_file is not from a Secret")
		}
		for _, m := range mounts(s.pod, s.agent) {
			if keys := secretKeys(m.volume); slices.Contains(keys, "*") || slices.Contains(keys, operatorKey) {
				t.Errorf("agent mounts Secret keys %v at %s: the operator token (%s) approves and resolves; give the agent its own token only", keys, m.path, operatorKey)
			}
		}
		for name, e := range env {
			if ref := dig(e.valueFrom, "secretKeyRef", "key"); ref != nil && str(ref) == operatorKey {
				t.Errorf("agent env %s holds the operator token", name)
			}
		}
	})
}

// script is everything a container runs, as one string.
func script(c container) string {
	return strings.Join(append(strList(c.m["command"]), strList(c.m["args"])...), " ")
}

func TestNoLiteralTokens(t *testing.T) {
	testNoLiteralTokens(t, loadManifests(t))
	forEachVariant(t, testConfigHoldsNoSecrets)
}

// testNoLiteralTokens checks that no document carries a secret value: no
// Secret with data, no env variable named like a secret with a literal.
func testNoLiteralTokens(t *testing.T, ms []manifest) {
	for _, m := range find(ms, "Secret") {
		if m.doc["data"] != nil || m.doc["stringData"] != nil {
			t.Errorf("%v carries secret values: create the Secret with kubectl, never in a file", m)
		}
	}
	for _, m := range ms {
		for _, c := range containers(podSpecOf(m)) {
			for name, e := range envOf(c) {
				if secretName(name) && e.hasValue {
					t.Errorf("%v: container %s: env %s has a literal value; use a file from a Secret", m, c.name(), name)
				}
			}
		}
	}
}

// testConfigHoldsNoSecrets checks that the sidecar's config.yaml, a
// ConfigMap's, holds no token and no DSN.
func testConfigHoldsNoSecrets(t *testing.T, s sidecar) {
	c, err := config.Parse(strings.NewReader(s.cfgText), config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.Token != "" || c.Admin.AgentToken != "" {
		t.Errorf("the ConfigMap's config.yaml holds a token: use the Secret's files")
	}
	if regexp.MustCompile(`(?m)^\s*dsn:\s*\S`).MatchString(s.cfgText) {
		t.Errorf("the ConfigMap's config.yaml holds a journal.dsn, which may carry a password: use TOOLGUARD_JOURNAL_DSN from a Secret")
	}
}

func TestEveryContainerHardened(t *testing.T) {
	testEveryContainerHardened(t, loadManifests(t))
}

func testEveryContainerHardened(t *testing.T, ms []manifest) {
	for _, m := range ms {
		pod := podSpecOf(m)
		for _, c := range containers(pod) {
			t.Run(m.String()+"/"+c.name(), func(t *testing.T) {
				checks := []struct {
					field string
					ok    bool
				}{
					{"runAsNonRoot", securityField(pod, c, "runAsNonRoot") == true},
					{"runAsUser", func() bool { n, ok := number(securityField(pod, c, "runAsUser")); return ok && n > 0 }()},
					{"allowPrivilegeEscalation", securityField(pod, c, "allowPrivilegeEscalation") == false},
					{"readOnlyRootFilesystem", securityField(pod, c, "readOnlyRootFilesystem") == true},
					{"capabilities.drop", slices.Contains(strList(dig(securityField(pod, c, "capabilities"), "drop")), "ALL")},
					{"seccompProfile", str(dig(securityField(pod, c, "seccompProfile"), "type")) == "RuntimeDefault"},
					{"resources.limits.memory", dig(c.m, "resources", "limits", "memory") != nil},
				}
				for _, ch := range checks {
					if !ch.ok {
						t.Errorf("%s is missing or weak", ch.field)
					}
				}
			})
		}
	}
}

func TestClaimsExist(t *testing.T) {
	testClaimsExist(t, loadManifests(t))
}

// testClaimsExist checks that every claim a pod mounts is among ms.
func testClaimsExist(t *testing.T, ms []manifest) {
	for _, m := range ms {
		for _, v := range list(podSpecOf(m)["volumes"]) {
			if claim := str(dig(v, "persistentVolumeClaim", "claimName")); claim != "" {
				findNamed(t, ms, "PersistentVolumeClaim", claim)
			}
		}
	}
}

func TestRuleFiles(t *testing.T) {
	forEachVariant(t, testRuleFiles)
}

func testRuleFiles(t *testing.T, s sidecar) {
	m, _ := mountOf(s.pod, s.toolguard, s.cfg.Rules.Dir)
	cm := findNamed(t, s.ms, "ConfigMap", str(dig(m.volume, "configMap", "name")))
	dir := t.TempDir()
	n := 0
	for name, v := range mapOf(cm.doc["data"]) {
		t.Run(name, func(t *testing.T) {
			if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
				t.Fatalf("%s: toolguard loads only *.yaml and *.yml files", name)
			}
			data := []byte(str(v))
			if _, err := rules.Parse(name, data); err != nil {
				t.Fatalf("rules.Parse: %v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
			n++
		})
	}
	if n == 0 {
		t.Fatalf("ConfigMap %s has no rule files", cm.name())
	}
	// Together, as serve loads them (API names and hosts must not clash).
	if _, err := rules.Load(dir); err != nil {
		t.Fatalf("rules.Load: %v", err)
	}
}

// TestRuleFilesAreExamples checks that every rule file shipped under
// deploy/ (in any ConfigMap, or as a file) is a byte-for-byte copy of the
// file of the same name in examples/rules, whose samples
// rules.TestShippedRules checks it against. The Helm chart's packs are
// copies of rules/packs instead: TestChartPacksAreCopies checks them.
//
// Regression: the Kubernetes ConfigMap had its own copy of the Stripe
// rules, keyed on metadata.order_id, which matches nothing in Stripe's
// form bodies: every payment intent got one key.
func TestRuleFilesAreExamples(t *testing.T) {
	found := 0
	check := func(where, name, data string) {
		found++
		want, err := os.ReadFile(filepath.Join("../examples/rules", name))
		if err != nil {
			t.Errorf("%s: rule file %s is not one of examples/rules (every shipped rule file needs samples there): %v", where, name, err)
			return
		}
		if data != string(want) {
			t.Errorf("%s: rule file %s differs from examples/rules/%s; copy it verbatim", where, name, name)
		}
	}
	for _, m := range loadManifests(t) {
		if m.kind() != "ConfigMap" {
			continue
		}
		for name, v := range mapOf(m.doc["data"]) {
			if isRuleFile(str(v)) {
				check(m.String(), name, str(v))
			}
		}
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.ToSlash(path) == chartPacksDir {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil && isRuleFile(string(data)) {
			check(path, filepath.Base(path), string(data))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no rule files found under deploy/: the search is broken")
	}
}

// isRuleFile reports whether a YAML text is a rule file: it has api and
// routes at the top level.
func isRuleFile(text string) bool {
	var api, routes bool
	for _, line := range strings.Split(text, "\n") {
		api = api || strings.HasPrefix(line, "api:")
		routes = routes || strings.HasPrefix(line, "routes:")
	}
	return api && routes
}

func TestNetworkPolicy(t *testing.T) {
	forEachVariant(t, testNetworkPolicy)
}

func testNetworkPolicy(t *testing.T, s sidecar) {
	adminPort := port(t, s.cfg.Admin.Listen)
	selecting := selectingPolicies(s)
	if len(selecting) == 0 {
		t.Fatalf("no NetworkPolicy selects the pod (labels %v)", dig(s.workload.doc, "spec", "template", "metadata", "labels"))
	}
	for _, np := range selecting {
		t.Run(np.String(), func(t *testing.T) {
			types := strList(dig(np.doc, "spec", "policyTypes"))
			if !containsAll(types, "Ingress", "Egress") {
				t.Errorf("policyTypes %v, want Ingress and Egress", types)
			}
			if len(list(dig(np.doc, "spec", "egress"))) == 0 {
				t.Errorf("no egress rules: with policyType Egress the pod could reach nothing, not even DNS")
			}
			for _, rule := range list(dig(np.doc, "spec", "ingress")) {
				ports := list(mapOf(rule)["ports"])
				if len(ports) == 0 {
					t.Errorf("an ingress rule allows every port; allow only the admin port %d", adminPort)
				}
				for _, p := range ports {
					if n, _ := number(mapOf(p)["port"]); int(n) != adminPort {
						t.Errorf("ingress allows port %v; only the admin port %d is served beyond loopback", mapOf(p)["port"], adminPort)
					}
				}
			}
		})
	}
}

// selectingPolicies returns the deployment's NetworkPolicies whose
// podSelector matches the workload's pods.
func selectingPolicies(s sidecar) []manifest {
	var out []manifest
	for _, np := range find(s.ms, "NetworkPolicy") {
		if selectsPods(s, dig(np.doc, "spec", "podSelector")) {
			out = append(out, np)
		}
	}
	return out
}

// selectsPods reports whether a label selector with matchLabels matches the
// labels of the workload's pods. An empty selector matches nothing here.
func selectsPods(s sidecar, selector any) bool {
	labels := mapOf(dig(s.workload.doc, "spec", "template", "metadata", "labels"))
	sel := mapOf(dig(selector, "matchLabels"))
	match := len(sel) > 0
	for k, v := range sel {
		if str(labels[k]) != str(v) {
			match = false
		}
	}
	return match
}
