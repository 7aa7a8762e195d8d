package deploy

import (
	"os"
	"testing"

	"github.com/toolguard/toolguard/internal/skipped"
)

func TestMain(m *testing.M) { os.Exit(skipped.Run(m)) }
