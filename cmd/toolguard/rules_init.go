package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolguard/toolguard/rules/openapi"
)

const rulesInitSynopsis = "rules init --from-openapi SPEC [--api NAME] [-o FILE] [--force]"

// runRulesInit writes a starting rule file from an OpenAPI document.
func runRulesInit(args []string, stdout io.Writer) error {
	var spec, api, out string
	var force bool
	fl := newFlags("rules init", rulesInitSynopsis, stdout)
	fl.StringVar(&spec, "from-openapi", "", "OpenAPI 3.0 or 3.1 `file` (YAML or JSON)")
	fl.StringVar(&api, "api", "", "api `name` (default: the document's info.title, slugged)")
	fl.StringVar(&out, "o", "", "write to `FILE` instead of stdout")
	fl.BoolVar(&force, "force", false, "replace FILE if it exists")
	pos, err := interleaved(fl, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("rules init: unexpected argument %q", pos[0])
	case spec == "":
		return usagef("rules init: --from-openapi SPEC is required")
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		return fmt.Errorf("rules init: %w", err)
	}
	text, err := openapi.Skeleton(data, openapi.SkeletonOptions{API: api, Source: filepath.Base(spec), Location: spec})
	if err != nil {
		return fmt.Errorf("rules init: %s: %w", spec, err)
	}
	if out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return writeNew(out, text, force)
}

// writeNew writes a file, refusing to replace an existing one unless
// force is set.
func writeNew(path string, data []byte, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("rules init: %s exists (use --force to replace it)", path)
	}
	if err != nil {
		return fmt.Errorf("rules init: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("rules init: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("rules init: write %s: %w", path, err)
	}
	return nil
}
