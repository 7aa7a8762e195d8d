package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

const workflowHelp = `Usage: toolguard workflow COMMAND

Commands:
  ls [--json]           workflows and their status
  show ID [--json]      one workflow's record
  resume ID             the resume packet: checkpoint, evidence, unresolved steps, next safe action (JSON)
`

func runWorkflow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("workflow", args, stdout, workflowHelp)
	if err != nil {
		return err
	}
	var src sourceFlags
	var asJSON bool
	synopsis := "workflow " + sub + " ID [--json]"
	if sub == "ls" {
		synopsis = "workflow ls [--json]"
	}
	fs := newFlags("workflow "+sub, synopsis, stdout)
	src.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var rulesDir string
	if sub == "resume" {
		fs.StringVar(&rulesDir, "rules", envOr("TOOLGUARD_RULES_DIR", "./rules"), "rules `dir`ectory, with --journal: the next actions depend on the routes")
	}
	pos, err := interleaved(fs, rest)
	if err != nil {
		return err
	}
	switch sub {
	case "ls":
		if len(pos) > 0 {
			return usagef("workflow ls: unexpected argument %q", pos[0])
		}
		return workflowLs(ctx, &src, stdout, asJSON)
	case "show", "resume":
		if len(pos) != 1 {
			return usagef("workflow %s: want exactly one ID", sub)
		}
		if sub == "show" {
			return workflowShow(ctx, &src, pos[0], stdout, asJSON)
		}
		if src.journal != "" {
			return resumeOffline(src.journal, rulesDir, pos[0], stdout)
		}
		c, err := src.client()
		if err != nil {
			return err
		}
		packet, err := c.Resume(ctx, pos[0])
		if err != nil {
			return err
		}
		return printJSON(stdout, packet)
	}
	return usagef("workflow: unknown sub-command %q\n%s", sub, workflowHelp)
}

func workflowLs(ctx context.Context, src *sourceFlags, stdout io.Writer, asJSON bool) error {
	var list []journal.Workflow
	if src.journal != "" {
		j, err := openReadOnly(src.journal)
		if err != nil {
			return err
		}
		defer j.Close()
		if list, err = j.ListWorkflows(0); err != nil {
			return err
		}
	} else {
		c, err := src.client()
		if err != nil {
			return err
		}
		if list, err = c.Workflows(ctx); err != nil {
			return err
		}
	}
	if asJSON {
		for i := range list {
			list[i].Checkpoint = nil
		}
		return printJSON(stdout, map[string]any{"workflows": nonNil(list)})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tVERSION\tSTEPS\tHELD\tCURRENT_ROUTE\tUPDATED")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", w.ID, w.Status, w.Version, w.Steps, w.Held, dash(w.CurrentRoute), w.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func workflowShow(ctx context.Context, src *sourceFlags, id string, stdout io.Writer, asJSON bool) error {
	var w journal.Workflow
	if src.journal != "" {
		j, err := openReadOnly(src.journal)
		if err != nil {
			return err
		}
		defer j.Close()
		if w, err = admin.PickWorkflow(j, id, ""); err != nil {
			return fmt.Errorf("workflow %s: %w", id, err)
		}
	} else if c, err := src.client(); err != nil {
		return err
	} else if w, err = c.Workflow(ctx, id); err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, w)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\nstatus:\t%s\nversion:\t%d\nsteps:\t%d (%d held)\ncurrent step:\t%s %s\ninput hash:\t%s\nversions:\tprompt %s, policy %s\ncheckpoint:\t%s\nupdated:\t%s\n",
		w.ID, w.Status, w.Version, w.Steps, w.Held, dash(w.CurrentRoute), dash(w.CurrentStep), dash(w.InputHash),
		dash(w.PromptVersion), dash(w.PolicyVersion), dash(string(w.Checkpoint)), w.UpdatedAt.UTC().Format(time.RFC3339))
	return tw.Flush()
}

func openReadOnly(path string) (*bolt.Journal, error) {
	j, err := bolt.Open(path, bolt.Options{ReadOnly: true, Timeout: cliLockWait})
	if err != nil {
		return nil, lockHint(err, path)
	}
	return j, nil
}
