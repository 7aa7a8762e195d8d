package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/toolguard/toolguard/policy"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(*Config) // applied to Default() to get the expected result
	}{
		{name: "empty", yaml: "", want: func(*Config) {}},
		{name: "only comments", yaml: "# nothing\n", want: func(*Config) {}},
		{name: "empty document", yaml: "---\n", want: func(*Config) {}},
		{name: "empty section keeps defaults", yaml: "admin:\n  # listen: x\n", want: func(*Config) {}},
		{name: "null value keeps default", yaml: "journal:\n  path:\n", want: func(*Config) {}},
		{
			name: "top level and nested",
			yaml: "listen: 0.0.0.0:9000\nadmin:\n  listen: 127.0.0.1:9001\n  token: s3cret\n",
			want: func(c *Config) {
				c.Listen = "0.0.0.0:9000"
				c.Admin.Listen = "127.0.0.1:9001"
				c.Admin.Token = "s3cret"
			},
		},
		{
			name: "durations",
			yaml: "journal:\n  open_timeout: 1m30s\n  retention: 0\nupstream:\n  timeout: 500ms\n",
			want: func(c *Config) {
				c.Journal.OpenTimeout = 90 * time.Second
				c.Journal.Retention = 0
				c.Upstream.Timeout = 500 * time.Millisecond
			},
		},
		{
			name: "sizes",
			yaml: "limits:\n  max_body: 16MiB\n  max_stored_response: 1048576\n  max_header_bytes: 64KB\n",
			want: func(c *Config) {
				c.Limits.MaxBody = 16 * MiB
				c.Limits.MaxStoredResponse = MiB
				c.Limits.MaxHeaderBytes = 64 * KB
			},
		},
		{
			name: "enums",
			yaml: "unmatched: guard\nworkflows:\n  on_version_change: allow\nlog:\n  level: debug\n  format: json\nguard:\n  mode: observe\n",
			want: func(c *Config) {
				c.Unmatched = policy.UnmatchedGuard
				c.Guard.Mode = policy.ModeObserve
				c.Workflows.OnVersionChange = policy.VersionAllow
				c.Log.Level = LevelDebug
				c.Log.Format = FormatJSON
			},
		},
		{
			name: "numbers stay text in strings",
			yaml: "admin:\n  token: 0123\n",
			want: func(c *Config) { c.Admin.Token = "0123" },
		},
		{
			name: "ints",
			yaml: "retry:\n  max_attempts: 5\nupstream:\n  max_idle_conns_per_host: 8\n",
			want: func(c *Config) {
				c.Retry.MaxAttempts = 5
				c.Upstream.MaxIdleConnsPerHost = 8
			},
		},
		{
			name: "flow style",
			yaml: "{listen: 'x:1', rules: {dir: /etc/toolguard/rules}}",
			want: func(c *Config) {
				c.Listen = "x:1"
				c.Rules.Dir = "/etc/toolguard/rules"
			},
		},
		{
			name: "anchor and alias",
			yaml: "journal:\n  open_timeout: &t 7s\nverify:\n  max_interval: *t\n",
			want: func(c *Config) {
				c.Journal.OpenTimeout = 7 * time.Second
				c.Verify.MaxInterval = 7 * time.Second
			},
		},
		{name: "standard tag", yaml: "listen: !!str 1.2.3.4:5\n", want: func(c *Config) { c.Listen = "1.2.3.4:5" }},
		{
			name: "new limits and start check",
			yaml: "journal:\n  check_on_start: Never\nlimits:\n  max_in_flight: 10\n  max_connections: 20\n",
			want: func(c *Config) {
				c.Journal.CheckOnStart = CheckNever
				c.Limits.MaxInFlight = 10
				c.Limits.MaxConnections = 20
			},
		},
		{
			name: "list flow sequence",
			yaml: "upstream:\n  allow_hosts: [api.example.com, \"*.example.org\", 10.0.0.1:8443]\n  connect_ports: [443, 8443]\n",
			want: func(c *Config) {
				c.Upstream.AllowHosts = List{"api.example.com", "*.example.org", "10.0.0.1:8443"}
				c.Upstream.ConnectPorts = List{"443", "8443"}
			},
		},
		{
			name: "list block sequence",
			yaml: "upstream:\n  allow_hosts:\n    - a.example\n    - ' b.example:80 '\n    - '*.c.example'\n",
			want: func(c *Config) { c.Upstream.AllowHosts = List{"a.example", "b.example:80", "*.c.example"} },
		},
		{
			name: "list comma-separated scalar",
			yaml: "upstream:\n  allow_hosts: a.example, b.example:80,,\n  connect_ports: \"8443\"\n",
			want: func(c *Config) {
				c.Upstream.AllowHosts = List{"a.example", "b.example:80"}
				c.Upstream.ConnectPorts = List{"8443"}
			},
		},
		{name: "list single int", yaml: "upstream:\n  connect_ports: 443\n",
			want: func(c *Config) { c.Upstream.ConnectPorts = List{"443"} }},
		{name: "empty list", yaml: "upstream:\n  connect_ports: []\n",
			want: func(c *Config) { c.Upstream.ConnectPorts = nil }},
		{name: "empty list as a string", yaml: "upstream:\n  connect_ports: ''\n",
			want: func(c *Config) { c.Upstream.ConnectPorts = nil }},
		{name: "null list keeps default", yaml: "upstream:\n  connect_ports:\n", want: func(*Config) {}},
		{
			name: "list anchors",
			yaml: "upstream:\n  connect_ports: &p [&one 8443, *one]\n  allow_hosts: *p\n",
			want: func(c *Config) {
				c.Upstream.ConnectPorts = List{"8443", "8443"}
				c.Upstream.AllowHosts = List{"8443", "8443"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.yaml), Default())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseKeepsBase(t *testing.T) {
	base := Default()
	base.Listen = "10.0.0.1:1"
	got, err := Parse(strings.NewReader("rules:\n  dir: /r\n"), base)
	if err != nil {
		t.Fatal(err)
	}
	if got.Listen != "10.0.0.1:1" || got.Rules.Dir != "/r" {
		t.Errorf("got listen %q, rules.dir %q", got.Listen, got.Rules.Dir)
	}
	if base.Rules.Dir != "./rules" {
		t.Errorf("Parse changed its base: rules.dir = %q", base.Rules.Dir)
	}

	// Lists are replaced, never changed in place: copies share them.
	base = Default()
	for _, y := range []string{"upstream:\n  connect_ports: [1, 2]\n", "upstream:\n  connect_ports: 1, 2\n"} {
		if _, err := Parse(strings.NewReader(y), base); err != nil {
			t.Fatal(err)
		}
	}
	if err := ApplyEnv(&Config{Upstream: base.Upstream}, []string{"TOOLGUARD_UPSTREAM_CONNECT_PORTS=3,4"}); err != nil {
		t.Fatal(err)
	}
	if want := (List{"443", "80"}); !reflect.DeepEqual(base.Upstream.ConnectPorts, want) {
		t.Errorf("base connect_ports = %v, want %v", base.Upstream.ConnectPorts, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{name: "unknown top-level field", yaml: "listen: x\nrules:\n  dir: r\nlisen: y\n",
			want: `4:1: unknown field "lisen" (did you mean "listen"?)`},
		{name: "unknown field after a section", yaml: "admin:\n  listen: x\n\nadmins: 1\n",
			want: `4:1: unknown field "admins" (did you mean "admin"?)`},
		{name: "unknown field in section", yaml: "ca:\n  dir: ./ca\nadmin:\n    lisen: x\n",
			want: `4:5: admin: unknown field "lisen" (did you mean "listen"?)`},
		{name: "setting in the wrong section", yaml: "max_body: 8MiB\n",
			want: `1:1: unknown field "max_body" (did you mean "limits.max_body"?)`},
		{name: "dotted key", yaml: "admin.listen: x\n",
			want: `1:1: unknown field "admin.listen" (write sections as nested mappings, not dotted keys)`},
		{name: "merge key", yaml: "<<: {listen: x}\n", want: `1:1: unknown field "<<"`},
		{name: "bad size", yaml: "limits:\n  max_body: 8 M\n",
			want: `2:13: limits.max_body (TOOLGUARD_MAX_BODY): invalid size "8 M" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{name: "bad duration", yaml: "journal:\n  retention: 720\n",
			want: `2:14: journal.retention (TOOLGUARD_JOURNAL_RETENTION): invalid duration "720" (want e.g. 30s, 5m or 720h)`},
		{name: "bad int", yaml: "retry:\n  max_attempts: three\n",
			want: `2:17: retry.max_attempts (TOOLGUARD_RETRY_MAX_ATTEMPTS): want a whole number (got "three")`},
		{name: "bad enum", yaml: "unmatched: maybe\n",
			want: `1:12: unmatched (TOOLGUARD_UNMATCHED): unknown policy "maybe" (want passthrough, guard or reject)`},
		{name: "bad mode", yaml: "guard:\n  mode: watch\n",
			want: `2:9: guard.mode (TOOLGUARD_GUARD_MODE): unknown mode "watch" (want enforce or observe)`},
		{name: "unknown guard field", yaml: "guard:\n  mod: observe\n",
			want: `2:3: guard: unknown field "mod" (did you mean "mode"?)`},
		{name: "bad level", yaml: "log:\n  level: verbose\n",
			want: `2:10: log.level (TOOLGUARD_LOG_LEVEL): unknown level "verbose" (want debug, info, warn or error)`},
		{name: "scalar for a section", yaml: "admin: 5\n",
			want: `1:8: admin: want a mapping of settings (got an int)`},
		{name: "mapping for a value", yaml: "listen:\n  host: x\n",
			want: `2:3: listen (TOOLGUARD_LISTEN): want a single value (got a mapping)`},
		{name: "list for a value", yaml: "listen: [a, b]\n",
			want: `1:9: listen (TOOLGUARD_LISTEN): want a single value (got a sequence)`},
		{name: "list document", yaml: "- a\n",
			want: `1:1: want a mapping of settings (got a sequence)`},
		{name: "duplicate key", yaml: "listen: x\nlisten: y\n",
			want: `2:1: mapping key "listen" already defined at [1:1]`},
		{name: "syntax", yaml: "listen: x\n  bad: y\n",
			want: `1:9: mapping value is not allowed in this context`},
		{name: "two documents", yaml: "listen: x\n---\nlisten: y\n",
			want: `2:1: more than one YAML document; want one`},
		{name: "unknown alias", yaml: "journal:\n  open_timeout: *nope\n",
			want: `2:17: journal.open_timeout (TOOLGUARD_JOURNAL_OPEN_TIMEOUT): unknown alias *nope`},
		{name: "custom tag", yaml: "listen: !env FOO\n",
			want: `1:9: listen (TOOLGUARD_LISTEN): unsupported tag !env`},
		{name: "bad start check", yaml: "journal:\n  check_on_start: sometimes\n",
			want: `2:19: journal.check_on_start (TOOLGUARD_JOURNAL_CHECK_ON_START): unknown mode "sometimes" (want auto, always or never)`},
		{name: "bad max in flight", yaml: "limits:\n  max_in_flight: 1k\n",
			want: `2:18: limits.max_in_flight (TOOLGUARD_MAX_IN_FLIGHT): want a whole number (got "1k")`},
		{name: "mapping for a list", yaml: "upstream:\n  allow_hosts: {a: b}\n",
			want: `2:17: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): want a list or a comma-separated value (got a mapping)`},
		{name: "list item is a list", yaml: "upstream:\n  allow_hosts: [a, [b]]\n",
			want: `2:20: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): want a single value per list item (got a sequence)`},
		{name: "list item is a mapping", yaml: "upstream:\n  allow_hosts:\n    - a\n    - {b: c}\n",
			want: `4:8: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): want a single value per list item (got a mapping)`},
		{name: "list item null", yaml: "upstream:\n  connect_ports: [443, ~]\n",
			want: `2:24: upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): empty list item`},
		{name: "list item missing", yaml: "upstream:\n  connect_ports:\n    - 443\n    -\n",
			want: `4:5: upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): empty list item`},
		{name: "list item missing in the middle", yaml: "upstream:\n  allow_hosts:\n    - a\n    -\n    - b\n",
			want: `4:5: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): empty list item`},
		{name: "list item blank", yaml: "upstream:\n  connect_ports: [443, ' ']\n",
			want: `2:24: upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): empty list item`},
		{name: "list item with comma", yaml: "upstream:\n  allow_hosts:\n    - a\n    - b, c\n",
			want: `4:7: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): want one value per list item (got "b, c")`},
		{name: "list item bad tag", yaml: "upstream:\n  connect_ports: [443, !port 80]\n",
			want: `2:24: upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): unsupported tag !port`},
		{name: "unquoted wildcard host", yaml: "upstream:\n  allow_hosts: [a, *.example.com]\n",
			want: `2:20: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): unknown alias *.example.com (quote a wildcard host: "*.example.com")`},
		{name: "unquoted wildcard host in block", yaml: "upstream:\n  allow_hosts:\n    - *.example.com\n",
			want: `3:7: upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): unknown alias *.example.com (quote a wildcard host: "*.example.com")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml), Default())
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want %q", tc.yaml, tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Parse(%q) error\n got %s\nwant %s", tc.yaml, got, tc.want)
			}
			if e := (*Error)(nil); !errors.As(err, &e) || e.Line == 0 {
				t.Errorf("error %v is not an *Error with a position", err)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "listen: 127.0.0.1:1\nadmin:\n    lisen: x\n")
	_, err := ParseFile(path, Default())
	want := path + `:3:5: admin: unknown field "lisen" (did you mean "listen"?)`
	if err == nil || err.Error() != want {
		t.Fatalf("ParseFile error\n got %v\nwant %s", err, want)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = ParseFile(missing, Default())
	want = missing + ": cannot open config file: no such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("ParseFile error\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("errors.Is(%v, os.ErrNotExist) = false", err)
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    func(*Config)
		wantErr string
	}{
		{name: "nothing set", environ: nil, want: func(*Config) {}},
		{name: "other variables ignored", environ: []string{"LISTEN=x", "HOME=/root", "TOOLGUARD_ADMIN_URL=http://x"},
			want: func(*Config) {}},
		{name: "empty counts as unset", environ: []string{"TOOLGUARD_LISTEN="}, want: func(*Config) {}},
		{
			name: "every contract variable",
			environ: []string{
				"TOOLGUARD_LISTEN=0.0.0.0:1",
				"TOOLGUARD_ADMIN_LISTEN=0.0.0.0:2",
				"TOOLGUARD_ADMIN_TOKEN=t",
				"TOOLGUARD_ADMIN_TOKEN_FILE=/tf",
				"TOOLGUARD_ADMIN_AGENT_TOKEN=a",
				"TOOLGUARD_ADMIN_AGENT_TOKEN_FILE=/af",
				"TOOLGUARD_JOURNAL_PATH=/j.db",
				"TOOLGUARD_RULES_DIR=/rules",
				"TOOLGUARD_CA_DIR=/ca",
				"TOOLGUARD_UPSTREAM_CA_FILE=/roots.pem",
				"TOOLGUARD_UPSTREAM_TIMEOUT=1m",
				"TOOLGUARD_UNMATCHED=reject",
				"TOOLGUARD_GUARD_MODE=observe",
				"TOOLGUARD_JOURNAL_BACKEND=postgres",
				"TOOLGUARD_JOURNAL_DSN=host=db",
				"TOOLGUARD_JOURNAL_SECRET_FILE=/s",
				"TOOLGUARD_MAX_BODY=512KiB",
				"TOOLGUARD_MAX_STORED_RESPONSE=2048",
				"TOOLGUARD_IN_FLIGHT_WAIT=5s",
				"TOOLGUARD_RETRY_MAX_ATTEMPTS=7",
				"TOOLGUARD_ON_VERSION_CHANGE=allow",
				"TOOLGUARD_LOG_LEVEL=error",
				"TOOLGUARD_LOG_FORMAT=text",
			},
			want: func(c *Config) {
				c.Listen = "0.0.0.0:1"
				c.Admin = Admin{Listen: "0.0.0.0:2", Token: "t", TokenFile: "/tf", AgentToken: "a", AgentTokenFile: "/af"}
				c.Journal.Path = "/j.db"
				c.Journal.Backend, c.Journal.DSN, c.Journal.SecretFile = BackendPostgres, "host=db", "/s"
				c.Rules.Dir = "/rules"
				c.CA.Dir = "/ca"
				c.Upstream.CAFile = "/roots.pem"
				c.Upstream.Timeout = time.Minute
				c.Unmatched = policy.UnmatchedReject
				c.Guard.Mode = policy.ModeObserve
				c.Limits.MaxBody = 512 * KiB
				c.Limits.MaxStoredResponse = 2 * KiB
				c.Limits.InFlightWait = 5 * time.Second
				c.Retry.MaxAttempts = 7
				c.Workflows.OnVersionChange = policy.VersionAllow
				c.Log.Level = LevelError
				c.Log.Format = FormatText
			},
		},
		{name: "last one wins", environ: []string{"TOOLGUARD_LISTEN=a:1", "TOOLGUARD_LISTEN=b:2"},
			want: func(c *Config) { c.Listen = "b:2" }},
		{name: "value with equals sign", environ: []string{"TOOLGUARD_ADMIN_TOKEN=a=b"},
			want: func(c *Config) { c.Admin.Token = "a=b" }},
		{name: "bad size", environ: []string{"TOOLGUARD_MAX_BODY=lots"},
			wantErr: `TOOLGUARD_MAX_BODY (limits.max_body): invalid size "lots" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{name: "bad duration", environ: []string{"TOOLGUARD_IN_FLIGHT_WAIT=30"},
			wantErr: `TOOLGUARD_IN_FLIGHT_WAIT (limits.in_flight_wait): invalid duration "30" (want e.g. 30s, 5m or 720h)`},
		{name: "bad int", environ: []string{"TOOLGUARD_RETRY_MAX_ATTEMPTS=x"},
			wantErr: `TOOLGUARD_RETRY_MAX_ATTEMPTS (retry.max_attempts): want a whole number (got "x")`},
		{name: "bad enum", environ: []string{"TOOLGUARD_UNMATCHED=maybe"},
			wantErr: `TOOLGUARD_UNMATCHED (unmatched): unknown policy "maybe" (want passthrough, guard or reject)`},
		{name: "bad mode", environ: []string{"TOOLGUARD_GUARD_MODE=shadow"},
			wantErr: `TOOLGUARD_GUARD_MODE (guard.mode): unknown mode "shadow" (want enforce or observe)`},
		{
			name: "new settings",
			environ: []string{
				"TOOLGUARD_UPSTREAM_ALLOW_HOSTS= api.example.com , *.example.org,,10.0.0.1:8443,",
				"TOOLGUARD_UPSTREAM_CONNECT_PORTS=8443",
				"TOOLGUARD_MAX_IN_FLIGHT=64",
				"TOOLGUARD_MAX_CONNECTIONS=100",
				"TOOLGUARD_JOURNAL_CHECK_ON_START=always",
			},
			want: func(c *Config) {
				c.Upstream.AllowHosts = List{"api.example.com", "*.example.org", "10.0.0.1:8443"}
				c.Upstream.ConnectPorts = List{"8443"}
				c.Limits.MaxInFlight = 64
				c.Limits.MaxConnections = 100
				c.Journal.CheckOnStart = CheckAlways
			},
		},
		{name: "list of only commas", environ: []string{"TOOLGUARD_UPSTREAM_CONNECT_PORTS=, ,"},
			want: func(c *Config) { c.Upstream.ConnectPorts = nil }},
		{name: "empty list counts as unset", environ: []string{"TOOLGUARD_UPSTREAM_CONNECT_PORTS="},
			want: func(*Config) {}},
		{name: "bad start check", environ: []string{"TOOLGUARD_JOURNAL_CHECK_ON_START=yes"},
			wantErr: `TOOLGUARD_JOURNAL_CHECK_ON_START (journal.check_on_start): unknown mode "yes" (want auto, always or never)`},
		{name: "bad max connections", environ: []string{"TOOLGUARD_MAX_CONNECTIONS=16k"},
			wantErr: `TOOLGUARD_MAX_CONNECTIONS (limits.max_connections): want a whole number (got "16k")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Default()
			err := ApplyEnv(&got, tc.environ)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ApplyEnv error\n got %v\nwant %s", err, tc.wantErr)
				}
				if e := (*Error)(nil); !errors.As(err, &e) {
					t.Errorf("error %v is not an *Error", err)
				}
				if !reflect.DeepEqual(got, Default()) {
					t.Errorf("ApplyEnv changed the config although it failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyEnv: %v", err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ApplyEnv:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestApplyEnvIgnoresProcessEnv pins that ApplyEnv reads only what it is
// given: caarlos0/env falls back to os.Environ when Options.Environment is nil.
func TestApplyEnvIgnoresProcessEnv(t *testing.T) {
	t.Setenv("TOOLGUARD_LISTEN", "from-process:1")
	c := Default()
	if err := ApplyEnv(&c, nil); err != nil {
		t.Fatal(err)
	}
	if c.Listen != Default().Listen {
		t.Errorf("ApplyEnv read the process environment: listen = %q", c.Listen)
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "listen: 127.0.0.1:1001\nrules:\n  dir: /from-file\nlimits:\n  max_body: 1MiB\n")
	listFile := filepath.Join(dir, "lists.yaml")
	writeFile(t, listFile, "upstream:\n  allow_hosts:\n    - a.example\n    - '*.a.example'\n  connect_ports: 8443\n")
	tests := []struct {
		name      string
		path      string
		environ   []string
		overrides []func(*Config)
		want      func(*Config)
	}{
		{name: "defaults", want: func(*Config) {}},
		{
			name: "file over defaults", path: path,
			want: func(c *Config) {
				c.Listen = "127.0.0.1:1001"
				c.Rules.Dir = "/from-file"
				c.Limits.MaxBody = MiB
			},
		},
		{
			name: "env over file", path: path,
			environ: []string{"TOOLGUARD_LISTEN=127.0.0.1:2002", "TOOLGUARD_MAX_BODY=2MiB"},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:2002"
				c.Rules.Dir = "/from-file"
				c.Limits.MaxBody = 2 * MiB
			},
		},
		{
			name: "flags over env", path: path,
			environ:   []string{"TOOLGUARD_LISTEN=127.0.0.1:2002"},
			overrides: []func(*Config){func(c *Config) { c.Listen = "127.0.0.1:3003" }},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:3003"
				c.Rules.Dir = "/from-file"
				c.Limits.MaxBody = MiB
			},
		},
		{
			name: "env list over file list", path: listFile,
			environ: []string{"TOOLGUARD_UPSTREAM_ALLOW_HOSTS=b.example"},
			want: func(c *Config) {
				c.Upstream.AllowHosts = List{"b.example"}
				c.Upstream.ConnectPorts = List{"8443"}
			},
		},
		{
			name: "file list", path: listFile,
			want: func(c *Config) {
				c.Upstream.AllowHosts = List{"a.example", "*.a.example"}
				c.Upstream.ConnectPorts = List{"8443"}
			},
		},
		{
			name:    "env without file",
			environ: []string{"TOOLGUARD_RULES_DIR=/from-env"},
			want:    func(c *Config) { c.Rules.Dir = "/from-env" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(tc.path, tc.environ, tc.overrides...)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, "listen: 127.0.0.1:1001\n")
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "lisen: x\n")
	tests := []struct {
		name    string
		path    string
		environ []string
		want    string
	}{
		{name: "file", path: bad, want: bad + `:1:1: unknown field "lisen" (did you mean "listen"?)`},
		{name: "env", path: good, environ: []string{"TOOLGUARD_LOG_FORMAT=xml"},
			want: `TOOLGUARD_LOG_FORMAT (log.format): unknown format "xml" (want auto, json, text or tint)`},
		{name: "secrets", environ: []string{"TOOLGUARD_ADMIN_TOKEN_FILE=" + filepath.Join(dir, "nope")},
			want: "admin.token_file (TOOLGUARD_ADMIN_TOKEN_FILE): cannot read token file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{name: "validation", environ: []string{"TOOLGUARD_MAX_BODY=0"}, want: "limits.max_body (TOOLGUARD_MAX_BODY): must be > 0 (got 0)"},
		{name: "list validation", environ: []string{"TOOLGUARD_UPSTREAM_ALLOW_HOSTS=api.example.com, http://x"},
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "http://x" (want host, host:port or *.example.com)`},
		{name: "port validation", path: good, environ: []string{"TOOLGUARD_UPSTREAM_CONNECT_PORTS=443,99999"},
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "99999" (want a number from 1 to 65535)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path, tc.environ)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Load error\n got %v\nwant %s", err, tc.want)
			}
			if e := (*Error)(nil); !errors.As(err, &e) {
				t.Errorf("error %v is not an *Error", err)
			}
		})
	}
}

func TestLoadSecrets(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}
	withNewline := file("newline", "s3cret\n")
	withCRLF := file("crlf", "agent-s3cret\r\n")
	inner := file("inner", "a b\n")
	empty := file("empty", "\n")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name    string
		admin   Admin
		want    Admin
		wantErr string
	}{
		{name: "no files", admin: Admin{Token: "t"}, want: Admin{Token: "t"}},
		{name: "token file", admin: Admin{TokenFile: withNewline}, want: Admin{Token: "s3cret"}},
		{name: "agent token file", admin: Admin{Token: "t", AgentTokenFile: withCRLF},
			want: Admin{Token: "t", AgentToken: "agent-s3cret"}},
		{name: "inner space kept", admin: Admin{TokenFile: inner}, want: Admin{Token: "a b"}},
		{name: "missing file", admin: Admin{TokenFile: missing},
			wantErr: "admin.token_file (TOOLGUARD_ADMIN_TOKEN_FILE): cannot read token file: open " + missing + ": no such file or directory"},
		{name: "empty file", admin: Admin{AgentTokenFile: empty},
			wantErr: "admin.agent_token_file (TOOLGUARD_ADMIN_AGENT_TOKEN_FILE): token file " + empty + " is empty"},
		{name: "both", admin: Admin{Token: "t", TokenFile: withNewline},
			wantErr: "admin.token_file (TOOLGUARD_ADMIN_TOKEN_FILE): set together with admin.token; use one of them (got " + withNewline + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Admin = tc.admin
			err := c.LoadSecrets()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("LoadSecrets error\n got %v\nwant %s", err, tc.wantErr)
				}
				if e := (*Error)(nil); !errors.As(err, &e) {
					t.Errorf("error %v is not an *Error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadSecrets: %v", err)
			}
			if c.Admin != tc.want {
				t.Errorf("Admin = %+v, want %+v", c.Admin, tc.want)
			}
			if err := c.LoadSecrets(); err != nil || c.Admin != tc.want {
				t.Errorf("second LoadSecrets = %v, Admin %+v; want a no-op", err, c.Admin)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{name: "default", edit: func(*Config) {}},
		{name: "listen no port", edit: func(c *Config) { c.Listen = "127.0.0.1" },
			want: "listen (TOOLGUARD_LISTEN): must be host:port (got 127.0.0.1)"},
		{name: "listen empty", edit: func(c *Config) { c.Listen = "" },
			want: `listen (TOOLGUARD_LISTEN): must be host:port (got "")`},
		{name: "listen bad port", edit: func(c *Config) { c.Listen = "127.0.0.1:http" },
			want: "listen (TOOLGUARD_LISTEN): must be host:port with a port number from 0 to 65535 (got 127.0.0.1:http)"},
		{name: "listen port too big", edit: func(c *Config) { c.Listen = ":70000" },
			want: "listen (TOOLGUARD_LISTEN): must be host:port with a port number from 0 to 65535 (got :70000)"},
		{name: "listen all interfaces", edit: func(c *Config) { c.Listen = ":8480" }},
		{name: "listen port 0", edit: func(c *Config) { c.Listen = "127.0.0.1:0"; c.Admin.Listen = "127.0.0.1:0" }},
		{name: "admin beyond loopback", edit: func(c *Config) { c.Admin.Listen = "0.0.0.0:8481" },
			want: "admin.listen (TOOLGUARD_ADMIN_LISTEN): a token is required when the admin API listens beyond loopback (got 0.0.0.0:8481)"},
		{name: "admin all interfaces", edit: func(c *Config) { c.Admin.Listen = ":8481" },
			want: "admin.listen (TOOLGUARD_ADMIN_LISTEN): a token is required when the admin API listens beyond loopback (got :8481)"},
		{name: "admin host name", edit: func(c *Config) { c.Admin.Listen = "admin.internal:8481" },
			want: "admin.listen (TOOLGUARD_ADMIN_LISTEN): a token is required when the admin API listens beyond loopback (got admin.internal:8481)"},
		{name: "admin beyond loopback with token", edit: func(c *Config) {
			c.Admin.Listen = "0.0.0.0:8481"
			c.Admin.Token = "t"
		}},
		{name: "admin beyond loopback with token file", edit: func(c *Config) {
			c.Admin.Listen = "[::]:8481"
			c.Admin.TokenFile = "/run/secrets/t"
		}},
		{name: "admin 127.0.0.2", edit: func(c *Config) { c.Admin.Listen = "127.0.0.2:8481" }},
		{name: "admin ::1", edit: func(c *Config) { c.Admin.Listen = "[::1]:8481" }},
		{name: "admin localhost", edit: func(c *Config) { c.Admin.Listen = "LocalHost:8481" }},
		{name: "admin same as proxy", edit: func(c *Config) { c.Admin.Listen = c.Listen },
			want: "admin.listen (TOOLGUARD_ADMIN_LISTEN): must differ from listen (got 127.0.0.1:8480)"},
		{name: "agent token alone", edit: func(c *Config) { c.Admin.AgentToken = "a" }}, // the operator token is generated
		{name: "insecure no auth", edit: func(c *Config) { c.Admin.InsecureNoAuth = true }},
		{name: "insecure no auth beyond loopback", edit: func(c *Config) { c.Admin.InsecureNoAuth, c.Admin.Listen = true, "0.0.0.0:8481" },
			want: "admin.listen (TOOLGUARD_ADMIN_LISTEN): admin.insecure_no_auth is allowed only when the admin API listens on loopback (got 0.0.0.0:8481)"},
		{name: "insecure no auth with token", edit: func(c *Config) { c.Admin.InsecureNoAuth, c.Admin.Token = true, "t" },
			want: "admin.insecure_no_auth (TOOLGUARD_ADMIN_INSECURE_NO_AUTH): set together with admin.token: remove one of them"},
		{name: "insecure no auth with agent token", edit: func(c *Config) { c.Admin.InsecureNoAuth, c.Admin.AgentToken = true, "a" },
			want: "admin.agent_token (TOOLGUARD_ADMIN_AGENT_TOKEN): set together with admin.insecure_no_auth, under which every request is an operator: remove one of them"},
		{name: "agent token same as token", edit: func(c *Config) { c.Admin.Token, c.Admin.AgentToken = "t", "t" },
			want: "admin.agent_token (TOOLGUARD_ADMIN_AGENT_TOKEN): must differ from admin.token"},
		{name: "both tokens", edit: func(c *Config) { c.Admin.Token, c.Admin.AgentToken = "t", "a" }},
		{name: "unmatched credential headers", edit: func(c *Config) { c.UnmatchedCredential = List{"Authorization", "X-Api-Key"} }},
		{name: "unmatched credential none", edit: func(c *Config) { c.UnmatchedCredential = List{"none"} }},
		{name: "unmatched credential empty", edit: func(c *Config) { c.UnmatchedCredential = nil },
			want: `unmatched_credential (TOOLGUARD_UNMATCHED_CREDENTIAL): want one or more header names (the first one a call carries counts), or none (got "")`},
		{name: "unmatched credential none with headers", edit: func(c *Config) { c.UnmatchedCredential = List{"Authorization", "none"} },
			want: "unmatched_credential (TOOLGUARD_UNMATCHED_CREDENTIAL): none stands alone: list header names, or none (got Authorization, none)"},
		{name: "unmatched credential bad header", edit: func(c *Config) { c.UnmatchedCredential = List{"X Api"} },
			want: `unmatched_credential (TOOLGUARD_UNMATCHED_CREDENTIAL): invalid header name "X Api" (got X Api)`},
		{name: "mcp unlisted credential duplicate", edit: func(c *Config) { c.MCP.UnlistedCredential = List{"X-Key", "x-key"} },
			want: "mcp.unlisted_credential (TOOLGUARD_MCP_UNLISTED_CREDENTIAL): duplicate header (got x-key)"},
		{name: "postgres", edit: func(c *Config) {
			c.Journal.Backend, c.Journal.DSN, c.Journal.SecretFile = BackendPostgres, "postgres://db/tg", "/run/secrets/s"
		}},
		{name: "postgres from PG variables", edit: func(c *Config) {
			c.Journal.Backend, c.Journal.SecretFile = BackendPostgres, "/run/secrets/s"
		}},
		{name: "postgres without secret file", edit: func(c *Config) { c.Journal.Backend, c.Journal.DSN = BackendPostgres, "host=db" },
			want: "journal.secret_file (TOOLGUARD_JOURNAL_SECRET_FILE): required when journal.backend is postgres: every replica must key intents with the same secret"},
		{name: "dsn with bolt", edit: func(c *Config) { c.Journal.DSN = "host=db password=hunter2" },
			want: "journal.dsn (TOOLGUARD_JOURNAL_DSN): set, but journal.backend is bolt: set journal.backend to postgres to use the database"},
		{name: "unknown backend", edit: func(c *Config) { c.Journal.Backend = 7 },
			want: "journal.backend (TOOLGUARD_JOURNAL_BACKEND): unknown backend JournalBackend(7) (want bolt or postgres)"},
		{name: "journal path", edit: func(c *Config) { c.Journal.Path = "" },
			want: `journal.path (TOOLGUARD_JOURNAL_PATH): must not be empty (got "")`},
		{name: "open timeout", edit: func(c *Config) { c.Journal.OpenTimeout = 0 },
			want: "journal.open_timeout (TOOLGUARD_JOURNAL_OPEN_TIMEOUT): must be > 0 (got 0s)"},
		{name: "retention forever", edit: func(c *Config) { c.Journal.Retention = 0 }},
		{name: "retention negative", edit: func(c *Config) { c.Journal.Retention = -time.Hour },
			want: "journal.retention (TOOLGUARD_JOURNAL_RETENTION): must be >= 0 (got -1h0m0s)"},
		{name: "resident budget never drop", edit: func(c *Config) { c.Journal.ResidentBudget = 0 }},
		{name: "resident budget negative", edit: func(c *Config) { c.Journal.ResidentBudget = -1 },
			want: "journal.resident_budget (TOOLGUARD_JOURNAL_RESIDENT_BUDGET): must be >= 0 (got -1B)"},
		{name: "check on start", edit: func(c *Config) { c.Journal.CheckOnStart = 3 },
			want: "journal.check_on_start (TOOLGUARD_JOURNAL_CHECK_ON_START): unknown mode StartCheck(3) (want auto, always or never)"},
		{name: "rules dir", edit: func(c *Config) { c.Rules.Dir = "" },
			want: `rules.dir (TOOLGUARD_RULES_DIR): must not be empty (got "")`},
		{name: "ca dir", edit: func(c *Config) { c.CA.Dir = "" },
			want: `ca.dir (TOOLGUARD_CA_DIR): must not be empty (got "")`},
		{name: "upstream timeout", edit: func(c *Config) { c.Upstream.Timeout = -time.Second },
			want: "upstream.timeout (TOOLGUARD_UPSTREAM_TIMEOUT): must be > 0 (got -1s)"},
		{name: "idle conns", edit: func(c *Config) { c.Upstream.MaxIdleConnsPerHost = 0 },
			want: "upstream.max_idle_conns_per_host (TOOLGUARD_UPSTREAM_MAX_IDLE_CONNS_PER_HOST): must be >= 1 (got 0)"},
		{name: "allow hosts", edit: func(c *Config) {
			c.Upstream.AllowHosts = List{
				"api.example.com", "API.Example.COM", "localhost", "my_host-1.internal", "api.example.com:8443",
				"*.example.com", "*.example.com:443", "10.0.0.1", "10.0.0.1:80", "::1", "[::1]", "[2001:db8::1]:443",
			}
		}},
		{name: "allow hosts scheme", edit: func(c *Config) { c.Upstream.AllowHosts = List{"a.example", "http://x"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "http://x" (want host, host:port or *.example.com)`},
		{name: "allow hosts path", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example/v1"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example/v1" (want host, host:port or *.example.com)`},
		{name: "allow hosts path after port", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example:443/v1"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example:443/v1" (want host, host:port or *.example.com)`},
		{name: "allow hosts empty entry", edit: func(c *Config) { c.Upstream.AllowHosts = List{""} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "" (want host, host:port or *.example.com)`},
		{name: "allow hosts space", edit: func(c *Config) { c.Upstream.AllowHosts = List{"a b"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "a b" (want host, host:port or *.example.com)`},
		{name: "allow hosts user", edit: func(c *Config) { c.Upstream.AllowHosts = List{"user@x.example"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "user@x.example" (want host, host:port or *.example.com)`},
		{name: "allow hosts bare star", edit: func(c *Config) { c.Upstream.AllowHosts = List{"*"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "*" (want host, host:port or *.example.com)`},
		{name: "allow hosts star alone", edit: func(c *Config) { c.Upstream.AllowHosts = List{"*."} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "*." (want host, host:port or *.example.com)`},
		{name: "allow hosts inner star", edit: func(c *Config) { c.Upstream.AllowHosts = List{"api.*.example.com"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "api.*.example.com" (want host, host:port or *.example.com)`},
		{name: "allow hosts star without dot", edit: func(c *Config) { c.Upstream.AllowHosts = List{"*example.com"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "*example.com" (want host, host:port or *.example.com)`},
		{name: "allow hosts two stars", edit: func(c *Config) { c.Upstream.AllowHosts = List{"*.*.example.com"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "*.*.example.com" (want host, host:port or *.example.com)`},
		{name: "allow hosts empty label", edit: func(c *Config) { c.Upstream.AllowHosts = List{"a..example"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "a..example" (want host, host:port or *.example.com)`},
		{name: "allow hosts port only", edit: func(c *Config) { c.Upstream.AllowHosts = List{":443"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host ":443" (want host, host:port or *.example.com)`},
		{name: "allow hosts port 0", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example:0"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example:0" (want a port number from 1 to 65535)`},
		{name: "allow hosts port too big", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example:65536"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example:65536" (want a port number from 1 to 65535)`},
		{name: "allow hosts port name", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example:https"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example:https" (want a port number from 1 to 65535)`},
		{name: "allow hosts missing port", edit: func(c *Config) { c.Upstream.AllowHosts = List{"x.example:"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "x.example:" (want a port number from 1 to 65535)`},
		{name: "allow hosts bracketed name", edit: func(c *Config) { c.Upstream.AllowHosts = List{"[x.example]:443"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "[x.example]:443" (want host, host:port or *.example.com)`},
		{name: "allow hosts bracketed ipv4", edit: func(c *Config) { c.Upstream.AllowHosts = List{"[10.0.0.1]"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "[10.0.0.1]" (want host, host:port or *.example.com)`},
		{name: "allow hosts ipv6 port unbracketed", edit: func(c *Config) { c.Upstream.AllowHosts = List{"2001:db8::1:443:x"} },
			want: `upstream.allow_hosts (TOOLGUARD_UPSTREAM_ALLOW_HOSTS): invalid host "2001:db8::1:443:x" (want host, host:port or *.example.com)`},
		{name: "connect ports", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"1", "443", "65535"} }},
		{name: "connect ports empty", edit: func(c *Config) { c.Upstream.ConnectPorts = nil }},
		{name: "connect port 0", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"443", "0"} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "0" (want a number from 1 to 65535)`},
		{name: "connect port too big", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"65536"} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "65536" (want a number from 1 to 65535)`},
		{name: "connect port name", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"https"} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "https" (want a number from 1 to 65535)`},
		{name: "connect port sign", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"+443"} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "+443" (want a number from 1 to 65535)`},
		{name: "connect port leading zero", edit: func(c *Config) { c.Upstream.ConnectPorts = List{"0443"} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "0443" (want a number from 1 to 65535)`},
		{name: "connect port empty", edit: func(c *Config) { c.Upstream.ConnectPorts = List{""} },
			want: `upstream.connect_ports (TOOLGUARD_UPSTREAM_CONNECT_PORTS): invalid port "" (want a number from 1 to 65535)`},
		{name: "unmatched", edit: func(c *Config) { c.Unmatched = 7 },
			want: "unmatched (TOOLGUARD_UNMATCHED): unknown policy Unmatched(7) (want passthrough, guard or reject)"},
		{name: "guard mode", edit: func(c *Config) { c.Guard.Mode = 2 },
			want: "guard.mode (TOOLGUARD_GUARD_MODE): unknown mode Mode(2) (want enforce or observe)"},
		{name: "max body", edit: func(c *Config) { c.Limits.MaxBody = 0 },
			want: "limits.max_body (TOOLGUARD_MAX_BODY): must be > 0 (got 0)"},
		{name: "max stored response", edit: func(c *Config) { c.Limits.MaxStoredResponse = -1 },
			want: "limits.max_stored_response (TOOLGUARD_MAX_STORED_RESPONSE): must be > 0 (got -1B)"},
		{name: "in flight wait", edit: func(c *Config) { c.Limits.InFlightWait = 0 },
			want: "limits.in_flight_wait (TOOLGUARD_IN_FLIGHT_WAIT): must be > 0 (got 0s)"},
		{name: "max header bytes", edit: func(c *Config) { c.Limits.MaxHeaderBytes = 0 },
			want: "limits.max_header_bytes (TOOLGUARD_MAX_HEADER_BYTES): must be > 0 (got 0)"},
		{name: "read header timeout", edit: func(c *Config) { c.Limits.ReadHeaderTimeout = 0 },
			want: "limits.read_header_timeout (TOOLGUARD_READ_HEADER_TIMEOUT): must be > 0 (got 0s)"},
		{name: "idle timeout", edit: func(c *Config) { c.Limits.IdleTimeout = 0 },
			want: "limits.idle_timeout (TOOLGUARD_IDLE_TIMEOUT): must be > 0 (got 0s)"},
		{name: "max in flight 1", edit: func(c *Config) { c.Limits.MaxInFlight = 1 }},
		{name: "max in flight", edit: func(c *Config) { c.Limits.MaxInFlight = 0 },
			want: "limits.max_in_flight (TOOLGUARD_MAX_IN_FLIGHT): must be >= 1 (got 0)"},
		{name: "max connections", edit: func(c *Config) { c.Limits.MaxConnections = -5 },
			want: "limits.max_connections (TOOLGUARD_MAX_CONNECTIONS): must be >= 1 (got -5)"},
		{name: "max attempts", edit: func(c *Config) { c.Retry.MaxAttempts = 0 },
			want: "retry.max_attempts (TOOLGUARD_RETRY_MAX_ATTEMPTS): must be >= 1 (got 0)"},
		{name: "verify interval", edit: func(c *Config) { c.Verify.MaxInterval = 0 },
			want: "verify.max_interval (TOOLGUARD_VERIFY_MAX_INTERVAL): must be > 0 (got 0s)"},
		{name: "version policy", edit: func(c *Config) { c.Workflows.OnVersionChange = -1 },
			want: "workflows.on_version_change (TOOLGUARD_ON_VERSION_CHANGE): unknown policy VersionChange(-1) (want stop or allow)"},
		{name: "log level", edit: func(c *Config) { c.Log.Level = 1 },
			want: "log.level (TOOLGUARD_LOG_LEVEL): unknown level LogLevel(1) (want debug, info, warn or error)"},
		{name: "log format", edit: func(c *Config) { c.Log.Format = 9 },
			want: "log.format (TOOLGUARD_LOG_FORMAT): unknown format LogFormat(9) (want auto, json, text or tint)"},
		{name: "drain timeout", edit: func(c *Config) { c.Shutdown.DrainTimeout = 0 },
			want: "shutdown.drain_timeout (TOOLGUARD_SHUTDOWN_DRAIN_TIMEOUT): must be > 0 (got 0s)"},
		{name: "first problem wins", edit: func(c *Config) { c.Listen = "x"; c.Limits.MaxBody = 0 },
			want: "listen (TOOLGUARD_LISTEN): must be host:port (got x)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Validate()\n got %v\nwant %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Field == "" || e.Line != 0 {
				t.Errorf("error %#v is not an *Error with a field and no position", err)
			}
		})
	}
}

func TestValidateNeverPrintsTokens(t *testing.T) {
	for _, c := range []Config{
		func() Config {
			c := Default()
			c.Admin.AgentToken, c.Admin.InsecureNoAuth = "agent-secret", true
			return c
		}(),
		func() Config {
			c := Default()
			c.Admin.Token, c.Admin.AgentToken = "same-secret", "same-secret"
			return c
		}(),
	} {
		err := c.Validate()
		if err == nil {
			t.Fatal("Validate() = nil, want an error")
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.(*Error).Value, "secret") {
			t.Errorf("Validate() = %v, prints a token", err)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{dsn: "", want: ""},
		{dsn: "postgres://tg:hunter2@db:5432/tg?sslmode=verify-full", want: "postgres://tg:REDACTED@db:5432/tg?sslmode=verify-full"},
		{dsn: "postgresql://tg@db/tg?password=hunter2", want: "postgresql://tg@db/tg?password=REDACTED"},
		{dsn: "postgres://db/tg", want: "postgres://db/tg"},
		{dsn: "host=db password=hunter2 dbname=tg", want: "host=db password=REDACTED dbname=tg"},
		{dsn: "host=db password = 'hun ter2' dbname=tg", want: "host=db password = REDACTED dbname=tg"},
	} {
		if got := RedactDSN(tc.dsn); got != tc.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestRedacted(t *testing.T) {
	c := Default()
	c.Admin.Token, c.Admin.TokenFile = "t", "/f"
	r := c.Redacted()
	if r.Admin.Token != "REDACTED" || r.Admin.AgentToken != "" || r.Admin.TokenFile != "/f" {
		t.Errorf("Redacted().Admin = %+v", r.Admin)
	}
	if c.Admin.Token != "t" {
		t.Errorf("Redacted changed its receiver")
	}
}

// TestSettings checks the settings table against the struct: env keys as
// caarlos0/env computes them, and Go names unique among the settings that
// can fail to parse, which envError relies on.
func TestSettings(t *testing.T) {
	params, err := env.GetFieldParamsWithOptions(&Config{}, env.Options{Prefix: EnvPrefix})
	if err != nil {
		t.Fatal(err)
	}
	var envKeys []string
	for _, p := range params {
		envKeys = append(envKeys, p.Key)
	}
	var ours []string
	names := map[string]string{}
	for _, s := range settings() {
		ours = append(ours, s.env)
		if s.field.Type.Kind() == reflect.String {
			continue
		}
		if other, dup := names[s.field.Name]; dup {
			t.Errorf("settings %s and %s share the Go name %s", other, s.path, s.field.Name)
		}
		names[s.field.Name] = s.path
	}
	if !reflect.DeepEqual(ours, envKeys) {
		t.Errorf("settings env keys\n got %v\nwant %v", ours, envKeys)
	}
	contract := map[string]string{ // DESIGN.md "Configuration (contract)"
		"listen": "TOOLGUARD_LISTEN", "admin.listen": "TOOLGUARD_ADMIN_LISTEN",
		"admin.token": "TOOLGUARD_ADMIN_TOKEN", "journal.path": "TOOLGUARD_JOURNAL_PATH",
		"rules.dir": "TOOLGUARD_RULES_DIR", "ca.dir": "TOOLGUARD_CA_DIR",
		"unmatched": "TOOLGUARD_UNMATCHED", "limits.max_body": "TOOLGUARD_MAX_BODY",
		"limits.in_flight_wait":       "TOOLGUARD_IN_FLIGHT_WAIT",
		"workflows.on_version_change": "TOOLGUARD_ON_VERSION_CHANGE",
		"guard.mode":                  "TOOLGUARD_GUARD_MODE",
		"log.level":                   "TOOLGUARD_LOG_LEVEL", "log.format": "TOOLGUARD_LOG_FORMAT",
		"upstream.allow_hosts":   "TOOLGUARD_UPSTREAM_ALLOW_HOSTS",
		"upstream.connect_ports": "TOOLGUARD_UPSTREAM_CONNECT_PORTS",
		"limits.max_in_flight":   "TOOLGUARD_MAX_IN_FLIGHT",
		"limits.max_connections": "TOOLGUARD_MAX_CONNECTIONS",
		"journal.check_on_start": "TOOLGUARD_JOURNAL_CHECK_ON_START",
	}
	for _, s := range settings() {
		if want, ok := contract[s.path]; ok && s.env != want {
			t.Errorf("%s: env %s, want %s", s.path, s.env, want)
		}
		delete(contract, s.path)
	}
	if len(contract) > 0 {
		t.Errorf("contract settings missing: %v", contract)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse checks that no input makes Parse panic or hang, and that its
// errors are single-line *Errors.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "listen: x\n", "admin:\n  lisen: x\n", "limits:\n  max_body: 1.5KiB\n",
		"journal:\n  open_timeout: &t 7s\nverify:\n  max_interval: *t\n",
		"a: &x *x\n", "listen: &x *x\n", "admin: &a {listen: *a}\n", "{listen: [a]}",
		"upstream:\n  allow_hosts: [a, '*.b', [c]]\n", "upstream:\n  connect_ports: &p [1, *p]\n",
		"upstream:\n  allow_hosts:\n    - a\n    -\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse(strings.NewReader(s), Default())
		if err == nil {
			return
		}
		if e := (*Error)(nil); !errors.As(err, &e) {
			t.Fatalf("error %v is not an *Error", err)
		}
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("error is not one line: %q", err.Error())
		}
	})
}
