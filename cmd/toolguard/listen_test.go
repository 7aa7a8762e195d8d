package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestWarnExposed: one WARN line when the proxy listens beyond loopback,
// none on loopback.
func TestWarnExposed(t *testing.T) {
	tests := []struct {
		addr string
		warn bool
	}{
		{addr: "127.0.0.1:8480", warn: false},
		{addr: "[::1]:8480", warn: false},
		{addr: "0.0.0.0:8480", warn: true},
		{addr: "[::]:8480", warn: true},
		{addr: "192.0.2.2:8480", warn: true},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		warnExposed(log, addr)
		got := strings.Count(buf.String(), "level=WARN")
		if want := map[bool]int{true: 1, false: 0}[tc.warn]; got != want || strings.Count(buf.String(), "\n") != want {
			t.Errorf("%s: %d WARN lines, want %d:\n%s", tc.addr, got, want, buf.String())
		}
		if tc.warn && !strings.Contains(buf.String(), "listen="+tc.addr) {
			t.Errorf("%s: the warning does not name the address: %s", tc.addr, buf.String())
		}
	}
}
