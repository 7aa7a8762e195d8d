package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const secret16 = "0123456789abcdef"

func TestNotifyParse(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []Webhook // nil: an error
		err  string
	}{
		{name: "two webhooks", yaml: "notify:\n  webhooks:\n    - url: https://a.example/h\n      secret_file: /s\n    - {url: 'https://hooks.slack.com/x', format: slack}\n",
			want: []Webhook{{URL: "https://a.example/h", SecretFile: "/s"}, {URL: "https://hooks.slack.com/x", PayloadFormat: WebhookSlack}}},
		{name: "empty list", yaml: "notify:\n  webhooks: []\n", want: []Webhook{}},
		{name: "unknown key", yaml: "notify:\n  webhooks:\n    - url: https://a.example/h\n      secrets: x\n",
			err: `4:7: notify.webhooks[0]: unknown field "secrets" (did you mean "secret"?)`},
		{name: "bad format", yaml: "notify:\n  webhooks:\n    - url: https://a.example/h\n      format: xml\n",
			err: `4:15: notify.webhooks[0].format (TOOLGUARD_NOTIFY_WEBHOOKS_0_FORMAT): unknown format "xml" (want json or slack)`},
		{name: "item not a mapping", yaml: "notify:\n  webhooks: [https://a.example/h]\n",
			err: `2:14: notify.webhooks[0]: want a mapping of settings (got a string)`},
		{name: "not a list", yaml: "notify:\n  webhooks: https://a.example/h\n",
			err: `2:13: notify.webhooks: want a list of mappings (got a string)`},
		{name: "empty item", yaml: "notify:\n  webhooks:\n    -\n",
			err: `3:5: notify.webhooks: empty list item`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tc.yaml), Default())
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Parse() error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 && len(c.Notify.Webhooks) == 0 {
				return
			}
			if !reflect.DeepEqual(c.Notify.Webhooks, tc.want) {
				t.Errorf("webhooks = %+v, want %+v", c.Notify.Webhooks, tc.want)
			}
		})
	}
}

func TestNotifyEnv(t *testing.T) {
	base, err := Parse(strings.NewReader("notify:\n  webhooks:\n    - url: https://a.example/h\n      secret_file: /s\n"), Default())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		environ []string
		want    []Webhook
		err     string
	}{
		{name: "override the file's item", environ: []string{"TOOLGUARD_NOTIFY_WEBHOOKS_0_FORMAT=slack"},
			want: []Webhook{{URL: "https://a.example/h", SecretFile: "/s", PayloadFormat: WebhookSlack}}},
		{name: "add an item", environ: []string{"TOOLGUARD_NOTIFY_WEBHOOKS_1_URL=https://b.example/h", "TOOLGUARD_NOTIFY_WEBHOOKS_1_SECRET_FILE=/t"},
			want: []Webhook{{URL: "https://a.example/h", SecretFile: "/s"}, {URL: "https://b.example/h", SecretFile: "/t"}}},
		{name: "a gap", environ: []string{"TOOLGUARD_NOTIFY_WEBHOOKS_2_URL=https://c.example/h"},
			err: "TOOLGUARD_NOTIFY_WEBHOOKS_2_URL (notify.webhooks[2].url): no variable sets item 1 of notify.webhooks: number the items from 0 without gaps (the file has 1)"},
		{name: "added from 0", environ: []string{"TOOLGUARD_NOTIFY_WEBHOOKS_0_URL=https://z.example/h", "TOOLGUARD_NOTIFY_WEBHOOKS_1_URL=https://b.example/h"},
			want: []Webhook{{URL: "https://z.example/h", SecretFile: "/s"}, {URL: "https://b.example/h"}}},
		{name: "bad format", environ: []string{"TOOLGUARD_NOTIFY_WEBHOOKS_0_FORMAT=xml"},
			err: `TOOLGUARD_NOTIFY_WEBHOOKS_0_FORMAT (notify.webhooks[0].format): unknown format "xml" (want json or slack)`},
		{name: "retry settings", environ: []string{"TOOLGUARD_NOTIFY_MAX_ATTEMPTS=0", "TOOLGUARD_NOTIFY_MAX_BACKOFF=1m"},
			want: []Webhook{{URL: "https://a.example/h", SecretFile: "/s"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			err := ApplyEnv(&c, tc.environ)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ApplyEnv() error = %v, want %q", err, tc.err)
				}
				if !reflect.DeepEqual(c, base) {
					t.Errorf("a failed ApplyEnv changed the config")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Notify.Webhooks, tc.want) {
				t.Errorf("webhooks = %+v, want %+v", c.Notify.Webhooks, tc.want)
			}
			if len(base.Notify.Webhooks) != 1 || base.Notify.Webhooks[0].PayloadFormat != WebhookJSON {
				t.Errorf("ApplyEnv changed the list of the config it copied: %+v", base.Notify.Webhooks)
			}
		})
	}
	c := Default()
	if err := ApplyEnv(&c, []string{"TOOLGUARD_NOTIFY_MAX_ATTEMPTS=0", "TOOLGUARD_NOTIFY_MAX_BACKOFF=1m",
		"TOOLGUARD_NOTIFY_WEBHOOKS_0_URL=https://a.example/h", "TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET_FILE=/s"}); err != nil {
		t.Fatal(err)
	}
	want := []Webhook{{URL: "https://a.example/h", SecretFile: "/s"}}
	if c.Notify.DeliveryAttempts != 0 || c.Notify.MaxBackoff != time.Minute || !reflect.DeepEqual(c.Notify.Webhooks, want) {
		t.Errorf("Notify = %+v", c.Notify)
	}
}

func TestNotifyUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{"TOOLGUARD_NOTIFY_WEBHOOKS_0_URL=x", "TOOLGUARD_NOTIFY_WEBHOOKS_12_SECRET_FILE=x",
		"TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRETFILE=x", "TOOLGUARD_NOTIFY_WEBHOOKS_URL=x", "TOOLGUARD_NOTIFY_CONSOLE_URL=x"})
	want := []string{
		"TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRETFILE is not a toolguard setting and is ignored",
		"TOOLGUARD_NOTIFY_WEBHOOKS_URL is not a toolguard setting and is ignored",
	}
	if len(got) != len(want) {
		t.Fatalf("UnknownEnv() = %q, want %d warnings", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

func TestNotifyValidate(t *testing.T) {
	tests := []struct {
		name string
		set  func(n *Notify)
		want string
	}{
		{name: "ok", set: func(n *Notify) {
			n.Webhooks = []Webhook{{URL: "https://a.example/h", Secret: secret16}, {URL: "https://hooks.slack.com/x", PayloadFormat: WebhookSlack},
				{URL: "http://127.0.0.1:9/h", SecretFile: "/s"}}
			n.ConsoleURL = "https://toolguard.example/ui/"
		}},
		{name: "relative URL", set: func(n *Notify) { n.Webhooks = []Webhook{{URL: "/h", Secret: secret16}} },
			want: "notify.webhooks[0].url (TOOLGUARD_NOTIFY_WEBHOOKS_0_URL): want an absolute http(s) URL (got REDACTED)"},
		{name: "ftp URL", set: func(n *Notify) { n.Webhooks = []Webhook{{URL: "ftp://a.example/secret-path", Secret: secret16}} },
			want: "notify.webhooks[0].url (TOOLGUARD_NOTIFY_WEBHOOKS_0_URL): want an absolute http(s) URL (got ftp://a.example/…)"},
		{name: "user in URL", set: func(n *Notify) { n.Webhooks = []Webhook{{URL: "https://u:p@a.example/h", Secret: secret16}} },
			want: "notify.webhooks[0].url (TOOLGUARD_NOTIFY_WEBHOOKS_0_URL): want no user:password@ in the URL (deliveries are signed with secret) (got https://a.example/…)"},
		{name: "json without secret", set: func(n *Notify) { n.Webhooks = []Webhook{{URL: "https://a.example/h"}} },
			want: "notify.webhooks[0].secret (TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET): required with format json, so that receivers can verify each delivery: set secret_file (or secret)"},
		{name: "short secret", set: func(n *Notify) { n.Webhooks = []Webhook{{URL: "https://a.example/h", Secret: "short"}} },
			want: "notify.webhooks[0].secret (TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET): must be at least 16 bytes (got 5; e.g. openssl rand -hex 32)"},
		{name: "secret twice", set: func(n *Notify) {
			n.Webhooks = []Webhook{{URL: "https://a.example/h", Secret: secret16, SecretFile: "/s"}}
		},
			want: "notify.webhooks[0].secret_file (TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET_FILE): set together with notify.webhooks[0].secret; use one of them (got /s)"},
		{name: "bad format", set: func(n *Notify) {
			n.Webhooks = []Webhook{{URL: "https://a.example/h", Secret: secret16, PayloadFormat: 7}}
		},
			want: "notify.webhooks[0].format (TOOLGUARD_NOTIFY_WEBHOOKS_0_FORMAT): unknown format WebhookFormat(7) (want json or slack)"},
		{name: "duplicate URL", set: func(n *Notify) {
			n.Webhooks = []Webhook{{URL: "https://a.example/h", Secret: secret16}, {URL: "https://a.example/h", Secret: secret16, PayloadFormat: WebhookSlack}}
		}, want: "notify.webhooks[1].url (TOOLGUARD_NOTIFY_WEBHOOKS_1_URL): the same URL as notify.webhooks[0] (got https://a.example/…)"},
		{name: "console URL", set: func(n *Notify) { n.ConsoleURL = "toolguard.example/ui/" },
			want: "notify.console_url (TOOLGUARD_NOTIFY_CONSOLE_URL): want an absolute http(s) URL (got toolguard.example/ui/)"},
		{name: "negative attempts", set: func(n *Notify) { n.DeliveryAttempts = -1 },
			want: "notify.max_attempts (TOOLGUARD_NOTIFY_MAX_ATTEMPTS): must be >= 0 (got -1)"},
		{name: "zero backoff", set: func(n *Notify) { n.Backoff = 0 },
			want: "notify.backoff (TOOLGUARD_NOTIFY_BACKOFF): must be > 0 (got 0s)"},
		{name: "cap below backoff", set: func(n *Notify) { n.MaxBackoff = 500 * time.Millisecond },
			want: "notify.max_backoff (TOOLGUARD_NOTIFY_MAX_BACKOFF): must be >= notify.backoff (1s) (got 500ms)"},
		{name: "zero timeout", set: func(n *Notify) { n.DeliveryTimeout = 0 },
			want: "notify.timeout (TOOLGUARD_NOTIFY_TIMEOUT): must be > 0 (got 0s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(&c.Notify)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q\nwant         %q", got, tc.want)
			}
		})
	}
}

func TestNotifySecretFile(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "good"), filepath.Join(dir, "short")
	writeFile(t, good, secret16+"\n")
	writeFile(t, short, "abc\n")
	tests := []struct {
		name string
		hook Webhook
		want string // the secret loaded, or the error
	}{
		{name: "file", hook: Webhook{URL: "https://a.example/h", SecretFile: good}, want: secret16},
		{name: "short file", hook: Webhook{URL: "https://a.example/h", SecretFile: short},
			want: "notify.webhooks[0].secret (TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET): must be at least 16 bytes (got 3; e.g. openssl rand -hex 32)"},
		{name: "missing file", hook: Webhook{URL: "https://a.example/h", SecretFile: filepath.Join(dir, "none")},
			want: "notify.webhooks[0].secret_file (TOOLGUARD_NOTIFY_WEBHOOKS_0_SECRET_FILE): cannot read token file: open " + filepath.Join(dir, "none") + ": no such file or directory"},
		{name: "slack without secret", hook: Webhook{URL: "https://hooks.slack.com/x", PayloadFormat: WebhookSlack}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Notify.Webhooks = []Webhook{tc.hook}
			shared := c.Notify.Webhooks
			got := ""
			if err := c.LoadSecrets(); err != nil {
				got = err.Error()
			} else {
				got = c.Notify.Webhooks[0].Secret
				if c.Notify.Webhooks[0].SecretFile != "" {
					t.Errorf("SecretFile left set")
				}
			}
			if got != tc.want {
				t.Errorf("LoadSecrets() = %q\nwant %q", got, tc.want)
			}
			if shared[0] != tc.hook {
				t.Errorf("LoadSecrets changed the list a copy shares: %+v", shared[0])
			}
		})
	}
}

func TestNotifyRedacted(t *testing.T) {
	c := Default()
	c.Notify.Webhooks = []Webhook{{URL: "https://hooks.slack.com/services/T0/B0/XXXX", Secret: secret16}}
	r := c.Redacted()
	if w := r.Notify.Webhooks[0]; w.URL != "https://hooks.slack.com/…" || w.Secret != "REDACTED" {
		t.Errorf("Redacted() webhook = %+v", w)
	}
	if c.Notify.Webhooks[0].Secret != secret16 {
		t.Errorf("Redacted changed its receiver")
	}
}

func TestNotifyConsoleBase(t *testing.T) {
	tests := []struct{ consoleURL, admin, want string }{
		{"", "127.0.0.1:8481", "http://127.0.0.1:8481/ui/"},
		{"", "0.0.0.0:8481", "http://localhost:8481/ui/"},
		{"", ":8481", "http://localhost:8481/ui/"},
		{"", "[::]:8481", "http://localhost:8481/ui/"},
		{"", "[::1]:8481", "http://[::1]:8481/ui/"},
		{"https://tg.example/ui/", "127.0.0.1:8481", "https://tg.example/ui/"},
	}
	for _, tc := range tests {
		if got := (Notify{ConsoleURL: tc.consoleURL}).ConsoleBase(tc.admin); got != tc.want {
			t.Errorf("ConsoleBase(%q) with console_url %q = %q, want %q", tc.admin, tc.consoleURL, got, tc.want)
		}
	}
}

// TestExampleFileItems checks that config.example.yaml documents each
// setting of a list's items with its variable, as TestExampleFile does
// for the other settings.
func TestExampleFileItems(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(itemSettings()) == 0 {
		t.Fatal("no item settings")
	}
	for _, s := range itemSettings() {
		if env := s.envList + "<n>_" + s.envName; !strings.Contains(string(data), "env "+env+", default ") {
			t.Errorf("%s does not document %s[].%s as \"env %s, default ...\"", exampleFile, s.list, s.name, env)
		}
	}
}
