package postgres

import (
	"testing"

	"github.com/toolguard/toolguard/notify"
	"github.com/toolguard/toolguard/notify/cursortest"
)

var _ notify.Cursors = (*Cursors)(nil)

// TestCursors runs the notification cursors' conformance suite on the
// table of a fresh schema per subtest.
func TestCursors(t *testing.T) {
	cursortest.Run(t, func(t *testing.T) notify.Cursors { return openTest(t, Options{}).Cursors() })
}
