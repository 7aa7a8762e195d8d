package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEgressDeny covers egress.deny from the file and the environment:
// the default, a replacement, an empty list, and the one-line error an
// invalid entry gets, which names both the yaml field and the variable.
func TestEgressDeny(t *testing.T) {
	var metadata []netip.Prefix
	for _, s := range []string{"169.254.169.254/32", "fd00:ec2::254/128", "169.254.170.2/32", "169.254.170.23/32", "fd00:ec2::23/128", "100.100.100.200/32"} {
		metadata = append(metadata, netip.MustParsePrefix(s))
	}
	tests := []struct {
		name    string
		yaml    string
		environ []string
		want    []netip.Prefix
		wantErr string
	}{
		{name: "default", want: metadata},
		{name: "file", yaml: "egress:\n  deny: [10.0.0.0/8, \"fd00::/8\", 192.168.1.7]\n",
			want: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.168.1.7/32")}},
		{name: "environment", environ: []string{"TOOLGUARD_EGRESS_DENY=169.254.0.0/16, 127.0.0.0/8"},
			want: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("127.0.0.0/8")}},
		{name: "host bits masked", environ: []string{"TOOLGUARD_EGRESS_DENY=10.1.2.3/8"},
			want: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		{name: "empty list denies nothing", yaml: "egress:\n  deny: []\n", want: nil},
		{name: "invalid in environment", environ: []string{"TOOLGUARD_EGRESS_DENY=10.0.0.0/33"},
			wantErr: `egress.deny (TOOLGUARD_EGRESS_DENY): invalid CIDR "10.0.0.0/33" (want e.g. 169.254.169.254/32, 10.0.0.0/8 or fd00::/8)`},
		{name: "invalid in file", yaml: "egress:\n  deny: [metadata.internal]\n",
			wantErr: `egress.deny (TOOLGUARD_EGRESS_DENY): invalid CIDR "metadata.internal" (want e.g. 169.254.169.254/32, 10.0.0.0/8 or fd00::/8)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadFrom(t, tc.yaml, tc.environ)
			if tc.wantErr != "" {
				var ce *Error
				if !errors.As(err, &ce) || !strings.HasSuffix(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line ending %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Egress.Deny.Prefixes(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Prefixes() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBodyDeadlines covers limits.body_read_timeout and limits.body_min_rate.
func TestBodyDeadlines(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		environ     []string
		wantTimeout time.Duration
		wantRate    ByteSize
		wantErr     string
	}{
		{name: "default", wantTimeout: 10 * time.Second, wantRate: KiB},
		{name: "file", yaml: "limits:\n  body_read_timeout: 3s\n  body_min_rate: 0\n", wantTimeout: 3 * time.Second},
		{name: "environment", environ: []string{"TOOLGUARD_BODY_READ_TIMEOUT=1m", "TOOLGUARD_BODY_MIN_RATE=10KiB"},
			wantTimeout: time.Minute, wantRate: 10 * KiB},
		{name: "zero timeout", yaml: "limits:\n  body_read_timeout: 0s\n", wantErr: "limits.body_read_timeout (TOOLGUARD_BODY_READ_TIMEOUT): must be > 0 (got 0s)"},
		{name: "bad rate", environ: []string{"TOOLGUARD_BODY_MIN_RATE=fast"}, wantErr: `TOOLGUARD_BODY_MIN_RATE (limits.body_min_rate): invalid size "fast"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadFrom(t, tc.yaml, tc.environ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Limits.BodyReadTimeout != tc.wantTimeout || c.Limits.BodyMinRate != tc.wantRate {
				t.Errorf("got %v, %v; want %v, %v", c.Limits.BodyReadTimeout, c.Limits.BodyMinRate, tc.wantTimeout, tc.wantRate)
			}
		})
	}
}

// loadFrom loads a configuration as serve does, from yaml (none when "")
// and environ.
func loadFrom(t *testing.T, yaml string, environ []string) (Config, error) {
	t.Helper()
	path := ""
	if yaml != "" {
		path = filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Load(path, environ)
}
