package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/toolguard/toolguard/config"
)

// usageError is a mistake in how the command was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelp is returned after help was printed on request: exit code 0.
var errHelp = flag.ErrHelp

// exitCode prints err as one line and maps it to an exit code: 0 for none
// or help, 2 for usage and configuration errors, 1 for everything else.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ce *config.Error
	var child *childExit
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &child):
		return child.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "toolguard: %v\nRun 'toolguard help' for usage.\n", err)
		return 2
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "toolguard: config: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "toolguard: %v\n", err)
		return 1
	}
}

const usage = `toolguard keeps AI agents from repeating side effects.

Usage:
  toolguard serve [--config FILE] [flags]       run the proxy and the admin API
  toolguard exec [serve flags] [--proxy URL [--admin URL] [--ca FILE]] -- COMMAND [ARGS...]
  toolguard doctor [--config FILE] [serve flags] [--admin URL]
  toolguard journal ls [--status S] [--hold H] [--workflow W] [--limit N] [--json]
  toolguard journal show KEY [--json]
  toolguard journal tail [-f] [--after SEQ] [--json]
  toolguard journal backup FILE [--journal SRC] [--force]
  toolguard journal check [--journal FILE | --dsn DSN] [--json]
  toolguard journal export --jsonl [--journal FILE | --dsn DSN]
  toolguard journal compact --journal FILE
  toolguard journal migrate [--dsn DSN]
  toolguard review ls [--limit N] [--json]
  toolguard review approve KEY [--note T]
  toolguard review resolve KEY --outcome committed|not-executed [--operation-id ID] [--note T] [--force]
  toolguard workflow ls [--json]
  toolguard workflow show ID [--json]
  toolguard workflow resume ID [--json]
  toolguard report [--since DURATION] [--json]
  toolguard rules check [DIR|FILE] [--sample FILE|DIR]
  toolguard rules init --from-openapi SPEC [--api NAME] [-o FILE] [--force]
  toolguard rules coverage --from-openapi SPEC [--server URL]... [--json | --markdown] FILE
  toolguard key explain --method M --url URL [--header 'K: V'] [--body DATA|@FILE]
  toolguard ca init [--dir DIR]
  toolguard version

serve runs the proxy and the admin API. Inspection commands talk to the
running proxy's admin API (--admin URL or TOOLGUARD_ADMIN_URL, token from
TOOLGUARD_ADMIN_TOKEN or the file TOOLGUARD_ADMIN_TOKEN_FILE names), or with
--journal FILE open a stopped proxy's journal read-only, or with --dsn DSN
read a PostgreSQL journal. A KEY may be
abbreviated to a unique prefix of at least 4 characters.
Run 'toolguard COMMAND --help' for a command's flags.
`

// run dispatches a command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "exec":
		return runExec(ctx, rest, stdout, stderr)
	case "doctor":
		return runDoctor(ctx, rest, stdout, stderr)
	case "journal":
		return runJournal(ctx, rest, stdout, stderr)
	case "review":
		return runReview(ctx, rest, stdout, stderr)
	case "workflow":
		return runWorkflow(ctx, rest, stdout, stderr)
	case "report":
		return runReport(ctx, rest, stdout)
	case "rules":
		return runRules(rest, stdout, stderr)
	case "key":
		return runKey(rest, stdout, stderr)
	case "ca":
		return runCA(rest, stdout, stderr)
	case "version", "--version":
		return runVersion(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usagef("unknown command %q", cmd)
}

// subcommand picks the sub-command of a command group.
func subcommand(group string, args []string, stdout io.Writer, help string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usagef("%s: missing sub-command\n%s", group, help)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, help)
		return "", nil, errHelp
	}
	return args[0], args[1:], nil
}

// newFlags makes a FlagSet whose errors become usage errors and whose
// help goes to stdout.
func newFlags(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: toolguard %s\n\nFlags:\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return errHelp // Parse has printed the usage
	}
	if err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	return nil
}

// parseNoArgs parses flags of a command that takes no arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), pos[0])
	}
	return nil
}

// interleaved parses flags that may follow positional arguments.
func interleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
