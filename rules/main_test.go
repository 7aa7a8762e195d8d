package rules_test

import (
	"os"
	"testing"

	"github.com/toolguard/toolguard/internal/skipped"
)

// TestMain reports the tests skipped for want of the providers' OpenAPI
// documents.
func TestMain(m *testing.M) { os.Exit(skipped.Run(m)) }
