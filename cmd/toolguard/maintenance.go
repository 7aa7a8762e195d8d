package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// journalBackup writes a consistent copy of the journal to FILE: online
// through the admin API, or offline from --journal. The copy is written to
// a temporary file, fsynced, checked, and only then put in place; an
// existing FILE is replaced only with --force. Offline, the HMAC secret
// beside the journal, which a restore needs, is copied to FILE.secret;
// online, the command names it, since the admin API does not serve it.
func journalBackup(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var force bool
	fs := newFlags("journal backup", "journal backup FILE [--journal SRC] [--force]", stdout)
	src.register(fs)
	fs.BoolVar(&force, "force", false, "replace FILE (and FILE.secret) when they exist")
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("journal backup: want exactly one FILE")
	}
	dst := pos[0]
	secretSrc, secretDst := "", secretPath(dst)
	if src.journal != "" {
		secretSrc = secretPath(src.journal)
		if _, err := os.Stat(secretSrc); err != nil {
			return fmt.Errorf("backup %s: the journal's secret %s, which a restore needs, cannot be read: %w", dst, secretSrc, err)
		}
	}
	for _, f := range []string{dst, secretDst} {
		if f == secretDst && secretSrc == "" {
			continue
		}
		if _, err := os.Lstat(f); err == nil && !force {
			return fmt.Errorf("backup %s: %s exists; use --force to replace it", dst, f)
		}
	}
	n, err := writeBackup(ctx, &src, dst, force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup %s: %d bytes, check ok\n", dst, n)
	if secretSrc == "" {
		fmt.Fprintf(stdout, "keep the journal's secret with it: copy <journal.path>.secret (or journal.secret_file) from the proxy's host to %s; a restore needs it\n", secretDst)
		return nil
	}
	if err := copySecret(secretSrc, secretDst, force); err != nil {
		return fmt.Errorf("backup %s: %w", dst, err)
	}
	fmt.Fprintf(stdout, "secret %s: copied from %s; a restore needs it beside the journal\n", secretDst, secretSrc)
	return nil
}

// writeBackup copies the journal to a temporary file beside dst, checks it
// and puts it in place: over an existing dst only when force is set.
func writeBackup(ctx context.Context, src *sourceFlags, dst string, force bool) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("create backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("create backup: %w", err)
	}
	n, err := copyJournal(ctx, src, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("write backup %s: %w", dst, err)
	}
	if problems, err := checkFile(tmp.Name(), cliLockWait); err != nil {
		return 0, fmt.Errorf("backup %s: the copy does not open: %w", dst, err)
	} else if len(problems) > 0 {
		return 0, fmt.Errorf("backup %s: the copy fails its check: %v", dst, problems[0])
	}
	if err := place(tmp.Name(), dst, force); err != nil {
		return 0, fmt.Errorf("write backup %s: %w", dst, err)
	}
	return n, nil
}

// place moves the file tmp to dst. Without force it never replaces dst,
// even one created meanwhile: a hard link fails when dst exists.
func place(tmp, dst string, force bool) error {
	if force {
		return os.Rename(tmp, dst)
	}
	if err := os.Link(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; use --force to replace it", dst)
		}
		return err
	}
	return os.Remove(tmp)
}

// copySecret copies the journal's HMAC secret, mode 0600, fsynced.
func copySecret(src, dst string, force bool) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy secret: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("copy secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = place(tmp.Name(), dst, force)
	}
	if err != nil {
		return fmt.Errorf("copy secret to %s: %w", dst, err)
	}
	return nil
}

func copyJournal(ctx context.Context, src *sourceFlags, w io.Writer) (int64, error) {
	if src.dsn != "" {
		return 0, usagef("journal backup: a PostgreSQL journal is backed up with pg_dump (see docs/operations.md)")
	}
	if src.journal != "" {
		j, err := openReadOnly(src.journal)
		if err != nil {
			return 0, err
		}
		defer j.Close()
		return j.WriteTo(w)
	}
	c, err := src.client()
	if err != nil {
		return 0, err
	}
	body, err := c.Backup(ctx)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return io.Copy(w, body)
}

// checkFile opens a journal file read-only, waiting at most wait for its
// lock, and checks it as it is: the writes a crash left in its log are
// applied by the next writable open, not here, so that a damaged file is
// never written to.
func checkFile(path string, wait time.Duration) ([]error, error) {
	j, err := bolt.Open(path, bolt.Options{ReadOnly: true, SkipLog: true, Timeout: wait})
	if err != nil {
		return nil, err
	}
	defer j.Close()
	return j.Check(), nil
}

// journalCheck runs bbolt's consistency check and toolguard's invariants.
func journalCheck(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var asJSON bool
	fs := newFlags("journal check", "journal check [--journal FILE | --dsn DSN] [--json]", stdout)
	src.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var report admin.CheckReport
	if j, err := src.direct(ctx); err != nil {
		return err
	} else if j != nil {
		problems := j.Check()
		j.Close()
		report = admin.NewCheckReport(problems)
	} else if c, err := src.client(); err != nil {
		return err
	} else if report, err = c.Check(ctx); err != nil {
		return err
	}
	if asJSON {
		printJSON(stdout, report)
	} else if report.OK {
		fmt.Fprintln(stdout, "journal check: ok")
	} else {
		for _, p := range report.Problems {
			fmt.Fprintln(stdout, p)
		}
	}
	if !report.OK {
		return fmt.Errorf("journal check: %d problems", len(report.Problems))
	}
	return nil
}

// journalExport prints every step as a JSON line.
func journalExport(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var jsonl bool
	fs := newFlags("journal export", "journal export --jsonl [--journal FILE | --dsn DSN]", stdout)
	src.register(fs)
	fs.BoolVar(&jsonl, "jsonl", true, "one JSON object per line (the only format)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if j, err := src.direct(ctx); err != nil {
		return err
	} else if j != nil {
		defer j.Close()
		return j.ForEach(func(st journal.Step) error { return jsonLine(stdout, admin.ViewOf(&st)) })
	}
	c, err := src.client()
	if err != nil {
		return err
	}
	body, err := c.Export(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(stdout, body)
	return err
}

// journalCompact rewrites a stopped proxy's journal without its free pages.
func journalCompact(args []string, stdout io.Writer) error {
	var path string
	fs := newFlags("journal compact", "journal compact --journal FILE", stdout)
	fs.StringVar(&path, "journal", "", "the stopped proxy's journal `file` (required: compaction needs the file lock)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if path == "" {
		return usagef("journal compact: --journal FILE is required; stop toolguard first")
	}
	before, after, err := bolt.Compact(path, cliLockWait)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compacted %s: %d → %d bytes, check ok\n", path, before, after)
	return nil
}
