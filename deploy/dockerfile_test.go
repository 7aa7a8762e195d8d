package deploy

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/config"
)

const (
	dockerfilePath   = "../Dockerfile"
	dockerignorePath = "../.dockerignore"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd   string // upper case: FROM, RUN, ...
	args  string
	stage int // 0 before the first FROM, then 1, 2, ...
}

// parseDockerfile reads the instructions of path. It knows what this
// repository's Dockerfile uses: comments, "\" continuations, no heredocs.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	stage := 0
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	for _, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue // comments, also between continuation lines
		}
		if strings.Contains(line, "<<") {
			t.Fatalf("%s: heredocs are not supported by this test's parser: %q", path, line)
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return out
}

type dockerfile struct {
	instrs []instruction
	stages int
}

func loadDockerfile(t *testing.T) dockerfile {
	t.Helper()
	in := parseDockerfile(t, dockerfilePath)
	d := dockerfile{instrs: in}
	for _, i := range in {
		d.stages = max(d.stages, i.stage)
	}
	return d
}

// all returns the instructions named cmd; stage 0 means any stage.
func (d dockerfile) all(cmd string, stage int) []instruction {
	var out []instruction
	for _, i := range d.instrs {
		if i.cmd == cmd && (stage == 0 || i.stage == stage) {
			out = append(out, i)
		}
	}
	return out
}

// last returns the last instruction named cmd of the final stage.
func (d dockerfile) last(t *testing.T, cmd string) instruction {
	t.Helper()
	in := d.all(cmd, d.stages)
	if len(in) == 0 {
		t.Fatalf("%s: no %s in the final stage", dockerfilePath, cmd)
	}
	return in[len(in)-1]
}

// fromImage is a FROM's image with the global ARG defaults substituted.
func (d dockerfile) fromImage(stage int) string {
	args := map[string]string{}
	for _, i := range d.instrs {
		if i.cmd == "ARG" && i.stage == 0 {
			for _, kv := range strings.Fields(i.args) {
				k, v, _ := strings.Cut(kv, "=")
				args[k] = v
			}
		}
	}
	from := d.all("FROM", stage)[0].args
	var image string
	for _, f := range strings.Fields(from) {
		if !strings.HasPrefix(f, "--") {
			image = f
			break
		}
	}
	return os.Expand(image, func(k string) string { return args[k] })
}

// env returns the final stage's ENV settings in os.Environ form.
func (d dockerfile) env(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, i := range d.all("ENV", d.stages) {
		for _, kv := range strings.Fields(i.args) {
			if !strings.Contains(kv, "=") {
				t.Fatalf("%s: ENV %q: write ENV KEY=value", dockerfilePath, i.args)
			}
			out = append(out, kv)
		}
	}
	return out
}

// jsonArgs parses an exec-form (JSON array) instruction.
func jsonArgs(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(in.args), &out); err != nil {
		t.Fatalf("%s: %s %s: want the exec form, a JSON array: %v", dockerfilePath, in.cmd, in.args, err)
	}
	return out
}

// volumes lists the final stage's VOLUME paths.
func (d dockerfile) volumes(t *testing.T) []string {
	var out []string
	for _, in := range d.all("VOLUME", d.stages) {
		if strings.HasPrefix(in.args, "[") {
			out = append(out, jsonArgs(t, in)...)
		} else {
			out = append(out, strings.Fields(in.args)...)
		}
	}
	return out
}

// copyTo returns the source of the final stage's COPY to dest, and the
// COPY's flags.
func (d dockerfile) copyTo(dest string) (src string, flags []string, ok bool) {
	for _, in := range d.all("COPY", d.stages) {
		var words []string
		for _, f := range strings.Fields(in.args) {
			if strings.HasPrefix(f, "--") {
				flags = append(flags, f)
			} else {
				words = append(words, f)
			}
		}
		if len(words) == 2 && words[1] == dest {
			return words[0], flags, true
		}
		flags = nil
	}
	return "", nil, false
}

// imageConfig is the configuration the image's default command runs with:
// the config file it copies in, then its environment.
func imageConfig(t *testing.T, d dockerfile) (config.Config, string) {
	t.Helper()
	cmd := jsonArgs(t, d.last(t, "CMD"))
	i := slices.Index(cmd, "--config")
	if i < 0 || i+1 >= len(cmd) {
		t.Fatalf("CMD %v: want serve --config FILE", cmd)
	}
	src, _, ok := d.copyTo(cmd[i+1])
	if !ok {
		t.Fatalf("no COPY puts the CMD's config file %s into the image", cmd[i+1])
	}
	data, err := os.ReadFile(filepath.Join("..", src))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(strings.NewReader(string(data)), config.Default())
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if err := config.ApplyEnv(&c, d.env(t)); err != nil {
		t.Fatalf("image ENV: %v", err)
	}
	return c, src
}

func TestDockerfile(t *testing.T) {
	d := loadDockerfile(t)

	t.Run("multi-stage build", func(t *testing.T) {
		if n := len(d.all("FROM", 0)); n < 2 {
			t.Fatalf("FROM stages = %d, want >= 2", n)
		}
		if img := d.fromImage(1); !regexp.MustCompile(`^golang:1\.2[6-9][.0-9]*-bookworm(@sha256:[0-9a-f]{64})?$`).MatchString(img) {
			t.Errorf("build stage FROM %q, want golang:1.26(+)-bookworm", img)
		}
		img := d.fromImage(d.stages)
		if !strings.HasPrefix(img, "gcr.io/distroless/static-debian12:nonroot") {
			t.Errorf("final FROM %q, want gcr.io/distroless/static-debian12:nonroot", img)
		}
	})

	t.Run("static, trimmed, versioned build", func(t *testing.T) {
		var build string
		for _, in := range d.all("RUN", 0) {
			if strings.Contains(in.args, "go build") {
				build = in.args
			}
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "-X main.version=${VERSION}", "-o /out/toolguard", "./cmd/toolguard"} {
			if !strings.Contains(build, want) {
				t.Errorf("go build RUN %q lacks %q", build, want)
			}
		}
	})

	t.Run("modules downloaded in their own cached layer", func(t *testing.T) {
		var order []string
		for _, in := range d.instrs {
			switch {
			case in.cmd == "COPY" && strings.Contains(in.args, "go.mod") && strings.Contains(in.args, "go.sum") && !strings.Contains(in.args, "--from"):
				order = append(order, "copy-mod")
			case in.cmd == "RUN" && strings.Contains(in.args, "go mod download"):
				order = append(order, "download")
			case in.cmd == "COPY" && strings.HasPrefix(in.args, ". "):
				order = append(order, "copy-all")
			case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
				order = append(order, "build")
			}
		}
		if want := []string{"copy-mod", "download", "copy-all", "build"}; !reflect.DeepEqual(order, want) {
			t.Errorf("layer order %v, want %v", order, want)
		}
	})

	cases := []struct {
		name string
		got  any
		want any
	}{
		{"binary path", func() string { s, _, _ := d.copyTo("/usr/local/bin/toolguard"); return s }(), "/out/toolguard"},
		{"ENTRYPOINT", jsonArgs(t, d.last(t, "ENTRYPOINT")), []string{"toolguard"}},
		{"CMD", jsonArgs(t, d.last(t, "CMD")), []string{"serve", "--config", "/etc/toolguard/config.yaml"}},
		{"EXPOSE", strings.Fields(d.last(t, "EXPOSE").args), []string{"8480", "8481"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.name, tc.got, tc.want)
			}
		})
	}

	t.Run("runs as a numeric non-root user", func(t *testing.T) {
		user := d.last(t, "USER").args
		uid, gid, _ := strings.Cut(user, ":")
		for _, id := range []string{uid, gid} {
			n, err := strconv.Atoi(id)
			if err != nil || n == 0 {
				t.Errorf("USER %q: want numeric, non-zero uid:gid (kubelet's runAsNonRoot can verify only numbers)", user)
			}
		}
	})

	t.Run("ENV defaults", func(t *testing.T) {
		want := map[string]string{
			"TOOLGUARD_JOURNAL_PATH": "/var/lib/toolguard/toolguard.db",
			"TOOLGUARD_CA_DIR":       "/var/run/toolguard/ca",
			"TOOLGUARD_RULES_DIR":    "/etc/toolguard/rules",
			"TOOLGUARD_LOG_FORMAT":   "json",
		}
		got := map[string]string{}
		for _, kv := range d.env(t) {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ENV = %v, want %v", got, want)
		}
		// Each variable must be one toolguard reads: a misspelt name would be
		// ignored silently.
		for _, kv := range d.env(t) {
			c := config.Default()
			if err := config.ApplyEnv(&c, []string{kv}); err != nil {
				t.Errorf("ENV %s: %v", kv, err)
			}
			if reflect.DeepEqual(c, config.Default()) {
				t.Errorf("ENV %s changes no setting: not a toolguard variable, or the default anyway", kv)
			}
		}
	})

	t.Run("state lives on volumes", func(t *testing.T) {
		c, _ := imageConfig(t, d)
		vols := d.volumes(t)
		for _, dir := range []string{filepath.Dir(c.Journal.Path), c.CA.Dir} {
			if !slices.Contains(vols, dir) {
				t.Errorf("VOLUME %v lacks %s", vols, dir)
			}
		}
	})

	t.Run("default command's config is valid", func(t *testing.T) {
		c, src := imageConfig(t, d)
		if err := c.Validate(); err != nil {
			t.Fatalf("%s with the image's ENV: %v", src, err)
		}
		for _, addr := range []string{c.Listen, c.Admin.Listen} {
			_, port, _ := net.SplitHostPort(addr)
			if !strings.Contains(" "+d.last(t, "EXPOSE").args+" ", " "+port+" ") {
				t.Errorf("listens on %s, but EXPOSE %s", addr, d.last(t, "EXPOSE").args)
			}
		}
	})
}

// dockerignore reads .dockerignore's patterns.
func dockerignore(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dockerignorePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// ignored reports whether .dockerignore's patterns keep path (slash
// separated, relative to the context) out of the build context: the last
// pattern that matches path or one of its parent directories decides.
func ignored(patterns []string, path string) bool {
	out := false
	parts := strings.Split(path, "/")
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		re := globRegexp(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
		for i := range parts {
			if re.MatchString(strings.Join(parts[:i+1], "/")) {
				out = !neg
				break
			}
		}
	}
	return out
}

// globRegexp translates a .dockerignore pattern: * and ? stay within a path
// element, ** spans any number of them.
func globRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case p[i] == '*':
			b.WriteString("[^/]*")
		case p[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func TestDockerignore(t *testing.T) {
	patterns := dockerignore(t)
	d := loadDockerfile(t)
	_, src := imageConfig(t, d)
	keep := []string{"go.mod", "go.sum", "cmd/toolguard/main.go", src}
	// Every top-level directory with Go code might be imported by the binary.
	ents, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if goFiles, _ := filepath.Glob(filepath.Join("..", e.Name(), "*.go")); len(goFiles) > 0 && e.Name() != "deploy" {
			keep = append(keep, e.Name()+"/"+filepath.Base(goFiles[0]))
		}
	}
	for _, p := range keep {
		if ignored(patterns, p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	for _, p := range []string{".git/config", "toolguard", "toolguard.db", "toolguard.db-wal", "toolguard.db.secret", "ca/ca-key.pem", "examples/x/ca-key.pem"} {
		if !ignored(patterns, p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
}
