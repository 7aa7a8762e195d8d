package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolguard/toolguard/journal"
)

const journalHelp = `Usage: toolguard journal COMMAND

Commands:
  ls [--status S] [--hold H] [--workflow W] [--limit N] [--json]   list steps (at most --limit, default 1000)
  show KEY [--json]                                                 show one step
  tail [-f] [--after SEQ] [--json]                                  print events, and follow them with -f
  backup FILE [--force]                                             a consistent copy, checked before it is kept, with the secret a restore needs
  check [--json]                                                    bbolt's consistency check and toolguard's invariants
  export --jsonl                                                    every step, one JSON object per line
  compact --journal FILE                                            rewrite a stopped proxy's journal without its free pages
  migrate [--dsn DSN]                                               bring a PostgreSQL journal's schema up to this version

ls, show, tail, check and export read the running proxy's admin API, a
stopped proxy's file (--journal FILE) or a PostgreSQL journal (--dsn DSN,
or TOOLGUARD_JOURNAL_DSN when TOOLGUARD_JOURNAL_BACKEND=postgres).
`

func runJournal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("journal", args, stdout, journalHelp)
	if err != nil {
		return err
	}
	switch sub {
	case "ls":
		return journalLs(ctx, rest, stdout, stderr)
	case "show":
		return journalShow(ctx, rest, stdout)
	case "tail":
		return journalTail(ctx, rest, stdout)
	case "backup":
		return journalBackup(ctx, rest, stdout)
	case "check":
		return journalCheck(ctx, rest, stdout)
	case "export":
		return journalExport(ctx, rest, stdout)
	case "compact":
		return journalCompact(rest, stdout)
	case "migrate":
		return journalMigrate(ctx, rest, stdout)
	}
	return usagef("journal: unknown sub-command %q\n%s", sub, journalHelp)
}

func journalLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var src sourceFlags
	var status, hold, workflow string
	var limit int
	var asJSON bool
	fs := newFlags("journal ls", "journal ls [--status S] [--hold H] [--workflow W] [--limit N] [--json]", stdout)
	src.register(fs)
	fs.StringVar(&status, "status", "", "only steps in this `status`: prepared, started, committed, verified, failed")
	fs.StringVar(&hold, "hold", "", "only steps with this `hold`: awaiting_approval, needs_review")
	fs.StringVar(&workflow, "workflow", "", "only steps of this workflow `id`")
	fs.IntVar(&limit, "limit", 1000, "at most `N` steps")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if limit < 1 {
		return usagef("journal ls: --limit must be at least 1 (got %d)", limit)
	}
	f := journal.Filter{Workflow: workflow, Limit: limit + 1} // one more tells whether --limit cut the list
	var err error
	if status != "" {
		if f.Status, err = journal.ParseStatus(status); err != nil {
			return usagef("--status: %v", err)
		}
	}
	if hold != "" {
		if f.Hold, err = journal.ParseHold(hold); err != nil {
			return usagef("--hold: %v", err)
		}
		f.HoldSet = true
	}
	s, err := src.open()
	if err != nil {
		return err
	}
	defer s.close()
	steps, err := s.steps(ctx, f)
	if err != nil {
		return err
	}
	steps = truncate(steps, limit, stderr)
	if asJSON {
		return printJSON(stdout, map[string]any{"steps": nonNil(steps)})
	}
	return printSteps(stdout, steps)
}

// truncate cuts list to limit, saying so on stderr when it held more: a
// list fetched with limit+1 items shows whether --limit hid any.
func truncate[T any](list []T, limit int, stderr io.Writer) []T {
	if len(list) <= limit {
		return list
	}
	fmt.Fprintf(stderr, "showing %d of more; use --limit to see more\n", limit)
	return list[:limit]
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func journalShow(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var asJSON bool
	fs := newFlags("journal show", "journal show KEY [--json]", stdout)
	src.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("journal show: want exactly one KEY")
	}
	s, err := src.open()
	if err != nil {
		return err
	}
	defer s.close()
	st, err := s.step(ctx, pos[0])
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, st)
	}
	return printStep(stdout, st)
}

func journalTail(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var follow, asJSON bool
	var after uint64
	fs := newFlags("journal tail", "journal tail [-f] [--after SEQ] [--json]", stdout)
	src.register(fs)
	fs.BoolVar(&follow, "f", false, "follow: keep printing new events")
	fs.Uint64Var(&after, "after", 0, "start after event `SEQ`")
	fs.BoolVar(&asJSON, "json", false, "print JSON lines")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	s, err := src.open()
	if err != nil {
		return err
	}
	defer s.close()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		evs, err := s.events(ctx, after, 1000)
		if err != nil {
			return err
		}
		if err := writeEvents(stdout, evs, asJSON); err != nil {
			return err
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			if len(evs) == 1000 {
				continue
			}
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func writeEvents(w io.Writer, evs []journal.Event, asJSON bool) error {
	if !asJSON {
		return printEvents(w, evs)
	}
	for _, e := range evs {
		if err := jsonLine(w, e); err != nil {
			return err
		}
	}
	return nil
}

func jsonLine(w io.Writer, v any) error {
	b, err := jsonMarshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
