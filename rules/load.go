package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IsRuleFileName reports whether Load reads a file of this name: one that
// ends in .yaml or .yml, in any case.
func IsRuleFileName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// Load parses every *.yaml and *.yml file of dir, in name order, and checks
// them together (see NewSet). Problems in the rules come as one *Errors
// that lists those of every file; a directory or file that cannot be read
// gives a plain error. A directory without rule files gives an empty Set.
func Load(dir string) (*Set, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && IsRuleFileName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var apis []*API
	var errs Errors
	for _, name := range names {
		file := filepath.Join(dir, name)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("load rules: %w", err)
		}
		api, err := Parse(file, data)
		if err != nil {
			var es *Errors
			if !errors.As(err, &es) {
				return nil, err
			}
			errs.List = append(errs.List, es.List...)
			continue
		}
		apis = append(apis, api)
	}
	set, err := NewSet(apis...)
	if err != nil {
		var es *Errors
		if errors.As(err, &es) {
			errs.List = append(errs.List, es.List...)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return set, nil
}
