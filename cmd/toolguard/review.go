package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

const reviewHelp = `Usage: toolguard review COMMAND

Commands:
  ls [--limit N] [--json]                         held steps and what is known about them
  approve KEY [--note T]                          let the next retry of an approval-gated call through, once
  resolve KEY --outcome committed|not-executed [--operation-id ID] [--note T] [--force]
                                                  end a hold with what you found out
`

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func runReview(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("review", args, stdout, reviewHelp)
	if err != nil {
		return err
	}
	switch sub {
	case "ls":
		return reviewLs(ctx, rest, stdout, stderr)
	case "approve":
		return reviewApprove(ctx, rest, stdout)
	case "resolve":
		return reviewResolve(ctx, rest, stdout)
	}
	return usagef("review: unknown sub-command %q\n%s", sub, reviewHelp)
}

func reviewLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var src sourceFlags
	var asJSON bool
	var limit int
	fs := newFlags("review ls", "review ls [--limit N] [--json]", stdout)
	src.register(fs)
	fs.IntVar(&limit, "limit", 1000, "at most `N` steps")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if limit < 1 {
		return usagef("review ls: --limit must be at least 1 (got %d)", limit)
	}
	s, err := src.open()
	if err != nil {
		return err
	}
	defer s.close()
	var held []admin.StepView
	for _, h := range []journal.Hold{journal.HoldNeedsReview, journal.HoldAwaitingApproval} {
		steps, err := s.steps(ctx, journal.Filter{Hold: h, HoldSet: true, Limit: limit + 1})
		if err != nil {
			return err
		}
		held = append(held, steps...)
	}
	held = truncate(held, limit, stderr)
	if asJSON {
		return printJSON(stdout, map[string]any{"steps": nonNil(held)})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tROUTE\tWORKFLOW\tHOLD\tREASON\tSINCE\tATTEMPT\tOPERATION_ID\tKEY_FIELDS\tKNOWN")
	for _, st := range held {
		known := st.LastError
		if known == "" {
			known = st.Evidence
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", st.Key, st.API, st.Route, dash(st.Workflow), st.Hold,
			dash(st.HoldReason), st.UpdatedAt.UTC().Format(time.RFC3339), st.Attempt, dash(st.OperationID),
			dash(keyFieldsColumn(st.KeyFields)), dash(known))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printShown(stdout, held)
}

// printShown prints, under review ls's table, what each held step would
// send: its method and full target, and every body field with its value,
// for the operator to read before approving.
func printShown(w io.Writer, held []admin.StepView) error {
	for _, st := range held {
		if st.Target == "" && len(st.RequestFields) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s  %s %s\n", st.Key, st.Method, st.Target)
		for _, f := range st.RequestFields {
			fmt.Fprintf(w, "  %s\n", keyFieldsText([]journal.KeyField{f}))
		}
	}
	return nil
}

func reviewApprove(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var note string
	var asJSON bool
	fs := newFlags("review approve", "review approve KEY [--note T]", stdout)
	src.register(fs)
	fs.StringVar(&note, "note", "", "why you approve, kept in the event log")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("review approve: want exactly one KEY")
	}
	var st admin.StepView
	if src.journal != "" {
		st, err = applyOffline(ctx, src.journal, pos[0], admin.ApproveMutation(note))
	} else {
		st, err = approveOnline(ctx, &src, pos[0], note)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, st)
	}
	fmt.Fprintf(stdout, "approved %s: the next retry with the same body is sent, once\n", st.Key)
	return nil
}

func reviewResolve(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var res admin.Resolution
	var asJSON bool
	fs := newFlags("review resolve", "review resolve KEY --outcome committed|not-executed [--operation-id ID] [--note T] [--force]", stdout)
	src.register(fs)
	fs.StringVar(&res.Outcome, "outcome", "", "what really happened: committed or not-executed")
	fs.StringVar(&res.OperationID, "operation-id", "", "the provider's `id` of the effect, when committed")
	fs.StringVar(&res.Note, "note", "", "how you found out, kept in the event log")
	fs.BoolVar(&res.Force, "force", false, "resolve not-executed although an interrupted attempt may still land at the provider")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("review resolve: want exactly one KEY")
	}
	switch res.Outcome {
	case "committed":
	case "not-executed", "not_executed":
		res.Outcome = "not_executed"
	default:
		return usagef("review resolve: --outcome must be committed or not-executed (got %q)", res.Outcome)
	}
	var st admin.StepView
	if src.journal != "" {
		m, merr := admin.ResolveMutation(res)
		if merr != nil {
			return usagef("review resolve: %v", merr)
		}
		st, err = applyOffline(ctx, src.journal, pos[0], m)
	} else {
		st, err = resolveOnline(ctx, &src, pos[0], res)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, st)
	}
	fmt.Fprintf(stdout, "resolved %s as %s\n", st.Key, res.Outcome)
	return nil
}

// approveOnline approves through the running proxy's admin API.
func approveOnline(ctx context.Context, src *sourceFlags, key, note string) (admin.StepView, error) {
	c, err := src.client()
	if err != nil {
		return admin.StepView{}, err
	}
	return c.Approve(ctx, key, note)
}

// resolveOnline resolves through the running proxy's admin API.
func resolveOnline(ctx context.Context, src *sourceFlags, key string, res admin.Resolution) (admin.StepView, error) {
	c, err := src.client()
	if err != nil {
		return admin.StepView{}, err
	}
	return c.Resolve(ctx, key, res)
}

// applyOffline makes an operator decision on a stopped proxy's journal.
func applyOffline(ctx context.Context, path, key string, m journal.Mutation) (admin.StepView, error) {
	j, err := bolt.Open(path, bolt.Options{Timeout: cliLockWait})
	if err != nil {
		return admin.StepView{}, lockHint(err, path)
	}
	defer j.Close()
	found, err := admin.FindStep(j, key)
	if err != nil {
		return admin.StepView{}, fmt.Errorf("step %s: %w", key, err)
	}
	st, err := j.Apply(ctx, found.Key, m)
	if err != nil {
		return admin.StepView{}, err
	}
	return admin.ViewOf(&st), nil
}
