package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/config"
)

// Regression: durations in JSON logs were integer nanoseconds
// ("drain_timeout":25000000000), not "25s".
func TestLogDurationsAreStrings(t *testing.T) {
	tests := []struct {
		name   string
		format config.LogFormat
		want   []string // substrings of the line
	}{
		{name: "json", format: config.FormatJSON, want: []string{`"drain_timeout":"25s"`, `"call":{"took":"1.5ms"}`}},
		{name: "text", format: config.FormatText, want: []string{`drain_timeout=25s`, `call.took=1.5ms`}},
		{name: "tint", format: config.FormatTint, want: []string{`drain_timeout=25s`, `call.took=1.5ms`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := newLogger(&buf, config.Log{Level: config.LevelInfo, Format: tc.format})
			log.Info("stopping", "drain_timeout", 25*time.Second, slog.Group("call", "took", 1500*time.Microsecond))
			line := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("log line does not contain %s:\n%s", w, line)
				}
			}
			if tc.format == config.FormatJSON && !json.Valid(buf.Bytes()) {
				t.Errorf("not JSON: %s", line)
			}
		})
	}
}
