package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Regression: an unreadable upstream.ca_file was found only when the proxy
// was built, and toolguard exited 1 with an error naming no setting.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name   string
		caFile string
		want   string // the error; "" for none
	}{
		{name: "none", caFile: ""},
		{name: "missing", caFile: missing,
			want: "upstream.ca_file (TOOLGUARD_UPSTREAM_CA_FILE): cannot read " + missing + ": no such file or directory"},
		{name: "a directory", caFile: dir,
			want: "upstream.ca_file (TOOLGUARD_UPSTREAM_CA_FILE): cannot read " + dir + ": is a directory"},
		{name: "not PEM", caFile: notPEM,
			want: "upstream.ca_file (TOOLGUARD_UPSTREAM_CA_FILE): " + notPEM + " holds no PEM certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Upstream.CAFile = tc.caFile
			err := c.CheckFiles()
			var got string
			if err != nil {
				got = err.Error()
				if _, ok := err.(*Error); !ok {
					t.Errorf("error is a %T, want *Error", err)
				}
			}
			if got != tc.want {
				t.Errorf("CheckFiles error\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestLoadChecksFiles(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	_, err := Load("", []string{"TOOLGUARD_UPSTREAM_CA_FILE=" + missing})
	if err == nil || !strings.Contains(err.Error(), "TOOLGUARD_UPSTREAM_CA_FILE") {
		t.Fatalf("Load with a missing CA file: error %v, want one naming TOOLGUARD_UPSTREAM_CA_FILE", err)
	}
}

func TestFieldLabel(t *testing.T) {
	tests := []struct {
		name  string
		field string
		want  string
	}{
		{name: "yaml path", field: "limits.max_body", want: "limits.max_body (TOOLGUARD_MAX_BODY)"},
		{name: "environment variable", field: "TOOLGUARD_JOURNAL_OPEN_TIMEOUT", want: "TOOLGUARD_JOURNAL_OPEN_TIMEOUT (journal.open_timeout)"},
		{name: "top level", field: "listen", want: "listen (TOOLGUARD_LISTEN)"},
		{name: "section", field: "admin", want: "admin"},
		{name: "unknown", field: "nope", want: "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fieldLabel(tc.field); got != tc.want {
				t.Errorf("fieldLabel(%q) = %q, want %q", tc.field, got, tc.want)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{name: "settings and others", environ: []string{"TOOLGUARD_LISTEN=:1", "TOOLGUARD_ADMIN_URL=http://x", "HOME=/root", "toolguard_listn=x"}},
		{name: "typo", environ: []string{"TOOLGUARD_LISTN=:1"},
			want: []string{`TOOLGUARD_LISTN is not a toolguard setting and is ignored (did you mean "TOOLGUARD_LISTEN"?)`}},
		{name: "yaml path spelt out", environ: []string{"TOOLGUARD_LIMITS_MAX_BODY=1MiB"},
			want: []string{`TOOLGUARD_LIMITS_MAX_BODY is not a toolguard setting and is ignored (did you mean "TOOLGUARD_MAX_BODY"?)`}},
		{name: "no near name", environ: []string{"TOOLGUARD_FROBNICATE=1"},
			want: []string{`TOOLGUARD_FROBNICATE is not a toolguard setting and is ignored`}},
		{name: "empty value still warned", environ: []string{"TOOLGUARD_JOURNAL_PAHT="},
			want: []string{`TOOLGUARD_JOURNAL_PAHT is not a toolguard setting and is ignored (did you mean "TOOLGUARD_JOURNAL_PATH"?)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnknownEnv(tc.environ); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UnknownEnv(%q)\n got %q\nwant %q", tc.environ, got, tc.want)
			}
		})
	}
}
