// Package skipped counts the tests a package skips for want of something
// the machine lacks (PostgreSQL, a browser, a tool) and prints one summary
// line when the package's tests end. Without it, `go test ./...` skips
// them silently unless -v is given.
package skipped

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	counts = map[string]int{}
)

// Skip records that t is skipped for want of what (a short name: "PostgreSQL
// (set TOOLGUARD_TEST_POSTGRES)") and skips it with msg.
func Skip(t testing.TB, what, msg string) {
	t.Helper()
	mu.Lock()
	counts[what]++
	mu.Unlock()
	t.Skip(msg)
}

// Run runs the package's tests and then prints the summary line (see
// Print) when any test was skipped; it returns m.Run's code.
func Run(m *testing.M) int {
	code := m.Run()
	Print()
	return code
}

// Print writes the summary line to stderr, which go test shows with -v or
// when the package fails, and to the controlling terminal when there is
// one: in package list mode (`go test ./...`) go test keeps a passing
// package's output to itself, and the line would never be seen. Without a
// terminal (CI) only stderr gets it.
func Print() {
	Report(os.Stderr)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		Report(tty)
		tty.Close()
	}
}

// Report writes "skipped N tests: WHAT ×k, …" to w when any test was
// skipped.
func Report(w io.Writer) {
	mu.Lock()
	defer mu.Unlock()
	if len(counts) == 0 {
		return
	}
	whats := make([]string, 0, len(counts))
	n := 0
	for what, k := range counts {
		whats = append(whats, fmt.Sprintf("%s ×%d", what, k))
		n += k
	}
	sort.Strings(whats)
	fmt.Fprintf(w, "skipped %d tests for want of: %s\n", n, strings.Join(whats, ", "))
}
