package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
)

const reportSynopsis = "report [--since DURATION] [--json]"

// runReport prints what enforcement would have done with the calls of
// observe mode: the duplicates it would have stopped, by route, with
// example keys, and the holds and refusals it would have made.
func runReport(ctx context.Context, args []string, stdout io.Writer) error {
	var src sourceFlags
	var since time.Duration
	var asJSON bool
	fs := newFlags("report", reportSynopsis, stdout)
	src.register(fs)
	fs.DurationVar(&since, "since", admin.DefaultObservationWindow, "report the observations of the last `DURATION`")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if since <= 0 {
		return usagef("report: --since must be a positive duration (got %s)", since)
	}
	rep, err := observations(ctx, &src, since)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, rep)
	}
	return printReport(stdout, rep)
}

// observations reads the report from the journal --journal or --dsn
// names, or else from the admin API.
func observations(ctx context.Context, src *sourceFlags, since time.Duration) (admin.ObservationReport, error) {
	j, err := src.direct(ctx)
	if err != nil {
		return admin.ObservationReport{}, err
	}
	if j != nil {
		defer j.Close()
		return admin.Observations(j, time.Now().Add(-since), nil)
	}
	c, err := src.client()
	if err != nil {
		return admin.ObservationReport{}, err
	}
	return c.Observations(ctx, since)
}

// printReport prints the totals, then one table per kind of call that
// enforcement would have changed, with full example keys.
func printReport(w io.Writer, rep admin.ObservationReport) error {
	since := rep.Since.Format(time.RFC3339)
	if rep.Observed == 0 {
		_, err := fmt.Fprintf(w, "No observations since %s: no API is in observe mode (guard.mode), or none of its calls came.\n", since)
		return err
	}
	fmt.Fprintf(w, "Observed since %s: %s, forwarded untouched.\n", since, plural(rep.Observed, "call"))
	fmt.Fprintf(w, "Enforcement would have stopped %s, held %s and refused %s.\n",
		plural(rep.Stopped, "duplicate"), plural(rep.Held, "call"), plural(rep.Refused, "call"))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "API\tROUTE\tOBSERVED\tSTOPPED\tHELD\tREFUSED")
	for _, r := range rep.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", r.API, r.Route, r.Observed, r.Stopped, r.Held, r.Refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sections := []struct {
		title string
		of    func(journal.Would) bool
	}{
		{"Duplicates it would have stopped", journal.Would.Stopped},
		{"Holds it would have made", journal.Would.Held},
		{"Refusals it would have made", journal.Would.Refused},
	}
	for _, sec := range sections {
		if err := printWoulds(w, rep, sec.title, sec.of); err != nil {
			return err
		}
	}
	return nil
}

// printWoulds prints the routes' calls of the woulds that of selects, with
// their example keys; nothing when there are none.
func printWoulds(w io.Writer, rep admin.ObservationReport, title string, of func(journal.Would) bool) error {
	var rows []string
	for _, r := range rep.Routes {
		for _, name := range sortedWoulds(r.Would) {
			if wd, err := journal.ParseWould(name); err != nil || !of(wd) {
				continue
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%s", r.API, r.Route, name, r.Would[name], strings.Join(r.Examples[name], " ")))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "API\tROUTE\tWOULD\tCALLS\tEXAMPLE KEYS")
	for _, row := range rows {
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// sortedWoulds are the names of counts in the order of journal.Would.
func sortedWoulds(counts map[string]int) []string {
	var out []string
	for _, name := range journal.WouldNames() {
		if counts[name] > 0 {
			out = append(out, name)
		}
	}
	return slices.Clip(out)
}
