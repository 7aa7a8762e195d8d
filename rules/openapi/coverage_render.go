package openapi

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// CoverageCounts sums up a Coverage. An operation handled differently at
// different hosts counts once per handling.
type CoverageCounts struct {
	Operations int `json:"operations"`
	Routed     int `json:"routed"`
	Unlisted   int `json:"unlisted"`
	Passes     int `json:"passes"`
	OtherHost  int `json:"other_host"`
	Stale      int `json:"stale_routes"`
}

// Counts sums up the coverage.
func (c *Coverage) Counts() CoverageCounts {
	n := CoverageCounts{Operations: len(c.Operations), Stale: len(c.Stale)}
	for _, o := range c.Operations {
		switch o.Handling {
		case HandledByRoute:
			n.Routed++
		case HandledUnlisted:
			n.Unlisted++
		case HandledPasses:
			n.Passes++
		case HandledOtherHost:
			n.OtherHost++
		}
	}
	return n
}

// Summary is one line: "N write operations: X routed, Y unlisted policy,
// Z pass; K routes match no operation" ("1 route matches"), with the
// operations at hosts the file does not name after the passes when there
// are some.
func (c *Coverage) Summary() string {
	n := c.Counts()
	other := ""
	if n.OtherHost > 0 {
		other = fmt.Sprintf(", %d at hosts api %s does not name", n.OtherHost, c.API)
	}
	stale := fmt.Sprintf("%d routes match", n.Stale)
	if n.Stale == 1 {
		stale = "1 route matches"
	}
	return fmt.Sprintf("%d write operations: %d routed, %d unlisted policy, %d pass%s; %s no operation",
		n.Operations, n.Routed, n.Unlisted, n.Passes, other, stale)
}

// handledBy says in words how an operation is handled.
func (o *OperationCoverage) handledBy() string {
	switch o.Handling {
	case HandledByRoute:
		return fmt.Sprintf("route %s (%s)", o.Route, o.Effect)
	case HandledUnlisted:
		return "unlisted policy (guard)"
	case HandledPasses:
		if o.Route == "" {
			return "passes (unlisted: pass)"
		}
		return fmt.Sprintf("passes (route %s, %s)", o.Route, o.Effect)
	case HandledOtherHost:
		return "not intercepted (host not in the file)"
	}
	return o.Handling.String()
}

// maxHosts bounds the hosts a cell lists.
const maxHosts = 3

func hostsText(hosts []string) string {
	if len(hosts) > maxHosts {
		return fmt.Sprintf("%s +%d", strings.Join(hosts[:maxHosts], ", "), len(hosts)-maxHosts)
	}
	return strings.Join(hosts, ", ")
}

// showHosts reports whether a table needs a host column: the operations
// are not all handled at the same hosts.
func (c *Coverage) showHosts() bool {
	for _, o := range c.Operations {
		if hostsText(o.Hosts) != hostsText(c.Operations[0].Hosts) {
			return true
		}
	}
	return false
}

// WriteTable writes the coverage as an aligned table, then the stale
// routes, the notes and the summary line.
func (c *Coverage) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hosts := c.showHosts()
	head := "METHOD\tPATH\tOPERATION\t"
	if hosts {
		head += "HOSTS\t"
	}
	fmt.Fprintln(tw, head+"HANDLED BY")
	for _, o := range c.Operations {
		row := fmt.Sprintf("%s\t%s\t%s\t", o.Method, o.Path, dash(o.OperationID))
		if hosts {
			row += hostsText(o.Hosts) + "\t"
		}
		fmt.Fprintln(tw, row+o.handledBy())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b bytes.Buffer
	c.writeTail(&b, false)
	_, err := w.Write(b.Bytes())
	return err
}

// writeTail writes the stale routes, notes and summary; in Markdown the
// stale routes are a list and each note a paragraph.
func (c *Coverage) writeTail(b *bytes.Buffer, markdown bool) {
	item, gap := "", ""
	if markdown {
		item, gap = "- ", "\n"
	}
	if len(c.Stale) > 0 {
		b.WriteString("\n")
	}
	for _, s := range c.Stale {
		fmt.Fprintf(b, "%sroute %s (%s, line %d) matches no operation of the document\n", item, s.Route, s.Match, s.Line)
	}
	b.WriteString("\n")
	for _, n := range c.Notes {
		fmt.Fprintf(b, "note: %s\n%s", n, gap)
	}
	fmt.Fprintf(b, "%s\n", c.Summary())
}

// Markdown writes the coverage as a Markdown table, then the stale
// routes, the notes and the summary line: what a pack's README carries.
func (c *Coverage) Markdown() []byte {
	var b bytes.Buffer
	hosts := c.showHosts()
	head, rule := "| operation | id |", "| --- | --- |"
	if hosts {
		head, rule = head+" hosts |", rule+" --- |"
	}
	b.WriteString(head + " handled by |\n" + rule + " --- |\n")
	for _, o := range c.Operations {
		fmt.Fprintf(&b, "| `%s %s` | %s |", o.Method, mdEscape(o.Path), mdEscape(dash(o.OperationID)))
		if hosts {
			fmt.Fprintf(&b, " %s |", mdEscape(hostsText(o.Hosts)))
		}
		fmt.Fprintf(&b, " %s |\n", mdEscape(o.handledBy()))
	}
	c.writeTail(&b, true)
	return b.Bytes()
}

// mdEscape keeps a cell's text from ending the cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
