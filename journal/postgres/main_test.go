package postgres

import (
	"os"
	"testing"

	"github.com/toolguard/toolguard/internal/skipped"
)

// TestMain prints one line naming the tests skipped for want of
// PostgreSQL (TOOLGUARD_TEST_POSTGRES unset), which go test shows only
// with -v otherwise.
func TestMain(m *testing.M) { os.Exit(skipped.Run(m)) }
