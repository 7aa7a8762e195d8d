package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printSteps prints steps as a table with full keys.
func printSteps(w io.Writer, steps []admin.StepView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATUS\tHOLD\tAPI\tROUTE\tWORKFLOW\tATTEMPT\tOPERATION_ID\tUPDATED")
	for _, s := range steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Key, statusText(s), dash(s.Hold), s.API, s.Route,
			dash(s.Workflow), s.Attempt, dash(s.OperationID), s.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// statusText is a step's status, marked when the step is an observation
// of observe mode, never replayed.
func statusText(s admin.StepView) string {
	if s.Observed {
		return s.Status + " (observed)"
	}
	return s.Status
}

// printStep prints one step as aligned fields.
func printStep(w io.Writer, s admin.StepView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, dash(v)) }
	row("key", s.Key)
	row("api", s.API)
	row("route", s.Route)
	row("target", s.Method+" "+s.Target)
	row("workflow", s.Workflow)
	row("status", statusText(s))
	row("hold", strings.TrimSpace(s.Hold+" "+s.HoldReason))
	row("attempt", fmt.Sprint(s.Attempt))
	row("operation_id", s.OperationID)
	if s.ResponseStatus != 0 {
		row("response", fmt.Sprintf("%d, %d bytes, sha256 %s", s.ResponseStatus, s.ResponseBytes, s.ResponseHash))
	}
	row("evidence", s.Evidence)
	row("last_error", s.LastError)
	row("decision", s.Decision)
	row("key_fields", keyFieldsText(s.KeyFields))
	for i, f := range s.RequestFields { // every body field, one a line
		name := ""
		if i == 0 {
			name = "request:"
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, keyFieldsText([]journal.KeyField{f}))
	}
	row("body_hash", s.BodyHash)
	row("versions", strings.TrimSpace(s.PromptVersion+" "+s.PolicyVersion))
	row("epoch/fence", fmt.Sprintf("%d/%d", s.Epoch, s.Fence))
	row("created", s.CreatedAt.UTC().Format(time.RFC3339Nano))
	row("updated", s.UpdatedAt.UTC().Format(time.RFC3339Nano))
	if !s.VerifyBy.IsZero() {
		row("verify_by", s.VerifyBy.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// keyFieldsText renders a step's key summary on one line: field=value, or
// the member name alone for a body keyed whole.
func keyFieldsText(fs []journal.KeyField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Field
		if f.Value != "" {
			parts[i] += "=" + f.Value
		}
	}
	return strings.Join(parts, " ")
}

// keyFieldsColumn is keyFieldsText cut to fit a table column.
func keyFieldsColumn(fs []journal.KeyField) string {
	const width = 48
	s := keyFieldsText(fs)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	return string([]rune(s)[:width-1]) + "…"
}

// printEvents prints events one a line.
func printEvents(w io.Writer, evs []journal.Event) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range evs {
		trans := ""
		if e.From != e.To {
			trans = e.From.String() + "→" + e.To.String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Key, e.Type, dash(trans),
			strings.TrimSpace(e.Reason+" "+quoteNote(e.Note)))
	}
	return tw.Flush()
}

func quoteNote(n string) string {
	if n == "" {
		return ""
	}
	return fmt.Sprintf("note=%q", n)
}
