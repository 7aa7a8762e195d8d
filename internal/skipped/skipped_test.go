package skipped

import (
	"bytes"
	"testing"
)

func TestReport(t *testing.T) {
	var b bytes.Buffer
	Report(&b)
	if b.Len() != 0 {
		t.Fatalf("report with no skips = %q, want nothing", b.String())
	}
	for range 2 {
		t.Run("needs db", func(t *testing.T) { Skip(t, "PostgreSQL", "no database") })
	}
	t.Run("needs node", func(t *testing.T) { Skip(t, "node", "no node") })
	Report(&b)
	if want := "skipped 3 tests for want of: PostgreSQL ×2, node ×1\n"; b.String() != want {
		t.Fatalf("report = %q, want %q", b.String(), want)
	}
}
