package deploy

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// journalBackend is the journal.backend toolguard's environment or its
// config.yaml selects ("bolt" when neither does). It is read from the
// manifests themselves, so that a misspelt variable cannot pass for the
// default.
func journalBackend(t *testing.T, s sidecar) string {
	t.Helper()
	if e, ok := envOf(s.toolguard)["TOOLGUARD_JOURNAL_BACKEND"]; ok && e.value != "" {
		return e.value
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(s.cfgText), &doc); err != nil {
		t.Fatalf("config.yaml of the ConfigMap: %v", err)
	}
	if b := str(dig(doc, "journal", "backend")); b != "" {
		return b
	}
	return "bolt"
}

// volumeSource names where the volume holding file in c comes from:
// "claim NAME", "secret NAME" or "configMap NAME".
func volumeSource(t *testing.T, pod map[string]any, c container, file string) string {
	t.Helper()
	m, ok := mountOf(pod, c, file)
	if !ok {
		t.Fatalf("%s: nothing is mounted at %s", c.name(), file)
	}
	for _, src := range []struct{ field, name string }{
		{"persistentVolumeClaim", "claimName"}, {"secret", "secretName"}, {"configMap", "name"},
	} {
		if n := str(dig(m.volume, src.field, src.name)); n != "" {
			return src.field + " " + n
		}
	}
	return "volume " + m.volumeName()
}

// secretRef returns the Secret name and key of env entry e's secretKeyRef.
func secretRef(e envEntry) (name, key string, ok bool) {
	ref := mapOf(dig(e.valueFrom, "secretKeyRef"))
	if ref == nil {
		return "", "", false
	}
	return str(ref["name"]), str(ref["key"]), true
}

// testPostgresJournal checks the replicas variant: N pods sharing one
// PostgreSQL journal, so one secret and one CA for all of them, nothing
// on a PersistentVolumeClaim, and rolling updates.
func testPostgresJournal(t *testing.T, s sidecar) {
	env := envOf(s.toolguard)

	t.Run("DSN from a Secret", func(t *testing.T) {
		e, ok := env["TOOLGUARD_JOURNAL_DSN"]
		if !ok {
			t.Fatalf("TOOLGUARD_JOURNAL_DSN is not set (journal.dsn in the ConfigMap would put the password in a ConfigMap)")
		}
		if _, _, ok := secretRef(e); !ok || e.hasValue {
			t.Errorf("TOOLGUARD_JOURNAL_DSN: want valueFrom.secretKeyRef (the DSN may carry a password), got %+v", e)
		}
	})

	secretFile := env["TOOLGUARD_JOURNAL_SECRET_FILE"].value
	t.Run("journal secret from a Secret", func(t *testing.T) {
		if secretFile == "" {
			t.Fatalf("TOOLGUARD_JOURNAL_SECRET_FILE is not set: every replica must key intents with the same secret")
		}
		if _, ok := secretKeyAt(s.pod, s.toolguard, secretFile); !ok {
			t.Errorf("journal.secret_file %s is not a file of a mounted Secret", secretFile)
		}
		if m, _ := mountOf(s.pod, s.toolguard, secretFile); !m.readOnly {
			t.Errorf("journal.secret_file %s is on a read-write mount", secretFile)
		}
	})

	t.Run("CA from a Secret", func(t *testing.T) {
		m, ok := mountOf(s.pod, s.toolguard, s.cfg.CA.Dir)
		if !ok || dig(m.volume, "secret") == nil {
			t.Fatalf("ca.dir %s: want the CA Secret mounted there, so that every replica signs with the one CA agents trust", s.cfg.CA.Dir)
		}
		if !m.readOnly {
			t.Errorf("ca.dir %s is mounted read-write", s.cfg.CA.Dir)
		}
		var sources []string
		for _, f := range []string{"ca.pem", "ca-key.pem"} {
			file := path.Join(s.cfg.CA.Dir, f)
			if _, ok := secretKeyAt(s.pod, s.toolguard, file); !ok {
				t.Errorf("%s is not a file of the CA Secret: toolguard would create a CA of its own", file)
			}
			sources = append(sources, volumeSource(t, s.pod, s.toolguard, file))
		}
		if sources[0] != sources[1] {
			t.Errorf("ca.pem from %s, ca-key.pem from %s: want one Secret", sources[0], sources[1])
		}
		for _, c := range containers(s.pod) {
			if args := strList(c.m["args"]); len(args) >= 2 && args[0] == "ca" && args[1] == "init" {
				t.Errorf("%s runs ca init: a CA per pod would make agents trust one replica only", c.name())
			}
		}
	})

	t.Run("the agent sees no journal credentials", func(t *testing.T) {
		dsnSecret, _, _ := secretRef(env["TOOLGUARD_JOURNAL_DSN"])
		for _, m := range mounts(s.pod, s.agent) {
			keys := secretKeys(m.volume)
			if slices.Contains(keys, "ca-key.pem") || (str(dig(m.volume, "secret", "secretName")) == dsnSecret && len(keys) > 0) {
				t.Errorf("agent mounts Secret keys %v at %s", keys, m.path)
			}
		}
		for name, e := range envOf(s.agent) {
			if n, _, ok := secretRef(e); ok && n == dsnSecret {
				t.Errorf("agent env %s reads Secret %s", name, n)
			}
		}
	})

	t.Run("no PersistentVolumeClaim", func(t *testing.T) {
		for _, v := range list(s.pod["volumes"]) {
			if claim := str(dig(v, "persistentVolumeClaim", "claimName")); claim != "" {
				t.Errorf("volume %s is on claim %s: replicas share the database, not a volume", str(mapOf(v)["name"]), claim)
			}
		}
		if tmpl := dig(s.workload.doc, "spec", "volumeClaimTemplates"); tmpl != nil {
			t.Errorf("volumeClaimTemplates: replicas share the database, not volumes")
		}
		for _, pvc := range find(s.ms, "PersistentVolumeClaim") {
			t.Errorf("%v: this variant needs no claim (and a ReadWriteOncePod claim would keep every pod but one from starting)", pvc)
		}
	})

	t.Run("many replicas, rolling updates", func(t *testing.T) {
		if s.workload.kind() != "Deployment" {
			t.Fatalf("workload is a %s, want a Deployment", s.workload.kind())
		}
		if n, _ := number(dig(s.workload.doc, "spec", "replicas")); n <= 1 {
			t.Errorf("replicas = %v, want more than 1", dig(s.workload.doc, "spec", "replicas"))
		}
		strategy := dig(s.workload.doc, "spec", "strategy")
		if got := str(dig(strategy, "type")); got != "RollingUpdate" {
			t.Errorf("strategy = %q, want RollingUpdate", got)
		}
		if n, ok := number(dig(strategy, "rollingUpdate", "maxUnavailable")); !ok || n != 0 {
			t.Errorf("maxUnavailable = %v, want 0: an old pod stops only once a new one is ready (reached the database)", dig(strategy, "rollingUpdate", "maxUnavailable"))
		}
		if n, ok := number(dig(strategy, "rollingUpdate", "maxSurge")); !ok || n < 1 {
			t.Errorf("maxSurge = %v, want >= 1 (with maxUnavailable 0 the rollout could not start)", dig(strategy, "rollingUpdate", "maxSurge"))
		}
	})

	t.Run("drains take one replica at a time", func(t *testing.T) {
		var budgets []manifest
		for _, pdb := range find(s.ms, "PodDisruptionBudget") {
			if selectsPods(s, dig(pdb.doc, "spec", "selector")) {
				budgets = append(budgets, pdb)
			}
		}
		if len(budgets) != 1 {
			t.Fatalf("want one PodDisruptionBudget selecting the pods, found %v: a node drain could stop every replica at once", budgets)
		}
		if n, ok := number(dig(budgets[0].doc, "spec", "maxUnavailable")); !ok || n < 1 {
			t.Errorf("%v: maxUnavailable = %v, want >= 1 (a number: 0 or a minAvailable of every replica blocks node drains)", budgets[0], dig(budgets[0].doc, "spec", "maxUnavailable"))
		}
	})

	t.Run("egress to PostgreSQL", func(t *testing.T) {
		for _, np := range selectingPolicies(s) {
			for _, rule := range list(dig(np.doc, "spec", "egress")) {
				for _, p := range list(mapOf(rule)["ports"]) {
					if n, _ := number(mapOf(p)["port"]); n == 5432 && !strings.EqualFold(str(mapOf(p)["protocol"]), "UDP") {
						return
					}
				}
			}
		}
		t.Errorf("no NetworkPolicy selecting the pod allows egress to TCP 5432: toolguard could not reach its journal")
	})
}

// TestMigrateJob checks replicas/migrate-job.yaml against the replicas
// variant: the journal migrate command, on the same image as toolguard,
// with the DSN from the same Secret key.
func TestMigrateJob(t *testing.T) {
	i := slices.IndexFunc(variants, func(v variant) bool { return v.dir == "kubernetes/replicas" })
	if i < 0 {
		t.Fatal("no variant kubernetes/replicas")
	}
	s := loadSidecar(t, variants[i])
	jobs := loadFile(t, "kubernetes/replicas/migrate-job.yaml")
	if len(jobs) != 1 || jobs[0].kind() != "Job" {
		t.Fatalf("migrate-job.yaml: want one Job, got %v", jobs)
	}
	testMigrateJob(t, s, jobs[0])
}

// testMigrateJob checks a Job that migrates the journal of the replicas
// of s.
func testMigrateJob(t *testing.T, s sidecar, job manifest) {
	cs := containers(podSpecOf(job))
	if len(cs) != 1 {
		t.Fatalf("%v: want one container, got %d", job, len(cs))
	}
	c := cs[0]
	if args := strList(c.m["args"]); !slices.Equal(args, []string{"journal", "migrate"}) {
		t.Errorf("args %q, want [journal migrate] (the DSN comes from TOOLGUARD_JOURNAL_DSN)", args)
	}
	if got, want := str(c.m["image"]), str(s.toolguard.m["image"]); got != want {
		t.Errorf("image %q, toolguard's is %q: the Job must run the version the replicas roll to", got, want)
	}
	jobName, jobKey, ok := secretRef(envOf(c)["TOOLGUARD_JOURNAL_DSN"])
	name, key, _ := secretRef(envOf(s.toolguard)["TOOLGUARD_JOURNAL_DSN"])
	if !ok || jobName != name || jobKey != key {
		t.Errorf("TOOLGUARD_JOURNAL_DSN from Secret %s key %s, the replicas' from %s key %s", jobName, jobKey, name, key)
	}
	if p := str(dig(podSpecOf(job), "restartPolicy")); p != "Never" && p != "OnFailure" {
		t.Errorf("restartPolicy %q: a Job's pod needs Never or OnFailure", p)
	}
}
