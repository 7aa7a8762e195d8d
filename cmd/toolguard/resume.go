package main

import (
	"fmt"
	"io"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/rules"
)

// resumeOffline builds the resume packet from a stopped proxy's journal
// and its rules. The next safe action of each step comes from the proxy's
// recovery table, so this file, unlike the other inspection commands,
// builds a proxy (one that serves nothing) on the read-only journal.
func resumeOffline(path, rulesDir, id string, stdout io.Writer) error {
	set, err := rules.Load(rulesDir)
	if err != nil {
		return fmt.Errorf("workflow resume: load rules from %s: %w", rulesDir, err)
	}
	j, err := openReadOnly(path)
	if err != nil {
		return err
	}
	defer j.Close()
	srv, err := proxy.New(proxy.Options{Journal: j, Rules: set})
	if err != nil {
		return err
	}
	defer srv.Close()
	p, err := admin.Resume(j, srv, id, "")
	if err != nil {
		return fmt.Errorf("workflow %s: %w", id, err)
	}
	return printJSON(stdout, p)
}
