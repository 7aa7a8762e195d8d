package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/config"
)

// serveOut is where serve writes what is not a log line: the addresses
// (stdout) and, on first start, the generated operator token (notice).
type serveOut struct {
	stdout, notice io.Writer
	// hideToken prints the generated token's file but not the token: exec
	// shares its terminal with the command it runs.
	hideToken bool
}

// adminAuth settles the admin API's authentication before serve listens.
// With admin.insecure_no_auth it warns, loudly, at every start. With no
// configured admin.token it loads the generated one (creating it on first
// start, when it prints it once to out.notice) into cfg.Admin.Token, and
// logs where it is kept on every start, never the token itself.
func adminAuth(cfg *config.Config, log *slog.Logger, out serveOut) error {
	if cfg.Admin.InsecureNoAuth {
		log.Warn("INSECURE: admin.insecure_no_auth is set: the admin API needs no token, and anyone who can reach it, an agent included, may approve and resolve held steps; remove it (TOOLGUARD_ADMIN_INSECURE_NO_AUTH) to have an operator token generated",
			"admin", cfg.Admin.Listen)
		return nil
	}
	if cfg.Admin.Token != "" {
		return nil
	}
	path := absPath(cfg.GeneratedTokenPath())
	token, created, err := admin.LoadOrCreateToken(path)
	if err != nil {
		return fmt.Errorf("admin API: no admin.token is configured and the generated one cannot be used: %w "+
			"(or set TOOLGUARD_ADMIN_TOKEN / TOOLGUARD_ADMIN_TOKEN_FILE)", err)
	}
	cfg.Admin.Token = token
	if created && out.notice != nil {
		fmt.Fprint(out.notice, tokenNotice(token, path, out.hideToken))
	}
	log.Info("admin API: operator token in a generated file; the CLI reads it (or set TOOLGUARD_ADMIN_TOKEN_FILE to it), the console asks for it",
		"token_file", path, "created", created)
	return nil
}

// tokenNotice is the box serve prints when it has generated the operator
// token.
func tokenNotice(token, path string, hide bool) string {
	shown := token
	if hide {
		shown = "(not shown here: cat " + path + ")"
	}
	lines := []string{
		"toolguard generated an operator token for the admin API (no admin.token is configured):",
		"",
		"  operator token: " + shown,
		"  stored in:      " + path + " (mode 0600, reused on every start)",
		"",
		"The CLI (journal, review, workflow) reads it from that file; the web console",
		"asks for it: paste it at sign-in. Never give it to an agent.",
	}
	width := 0
	for _, l := range lines {
		width = max(width, len([]rune(l)))
	}
	var b strings.Builder
	rule := "+" + strings.Repeat("-", width+2) + "+\n"
	b.WriteString(rule)
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s%s |\n", l, strings.Repeat(" ", width-len([]rune(l))))
	}
	b.WriteString(rule)
	return b.String()
}
