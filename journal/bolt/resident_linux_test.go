package bolt

import "testing"

// fileResident reads the process's own figure.
func TestFileResident(t *testing.T) {
	if n := fileResident(); n <= 0 {
		t.Fatalf("fileResident = %d, want > 0 (the test binary's own text is file-backed)", n)
	}
}
