package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/journal"
)

// Format is the shape of a webhook's body. The zero value is FormatJSON.
type Format int

// Body formats.
const (
	// FormatJSON: the Payload as JSON.
	FormatJSON Format = iota
	// FormatSlack: a Slack incoming-webhook message, {"text", "blocks"}.
	FormatSlack
)

var formatNames = []string{"json", "slack"}

func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// ParseFormat parses "json" or "slack".
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if s == n {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("unknown webhook format %q (want json or slack)", s)
}

// Body renders p in format f.
func (f Format) Body(p Payload) ([]byte, error) {
	switch f {
	case FormatJSON:
		return marshal(p)
	case FormatSlack:
		return marshal(slackMessage(p))
	}
	return nil, fmt.Errorf("render notification: %w: %v", ErrOptions, f)
}

// marshal is json.Marshal without the escaping of <, > and & for HTML,
// which no receiver needs (Slack's mrkdwn has its own).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("render notification: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// keyPrefixLen is how much of a key messages show.
const keyPrefixLen = 12

// slack is an incoming-webhook message: text is the notification's
// fallback, blocks its layout (https://api.slack.com/messaging/webhooks).
type slack struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type string     `json:"type"`
	Text *slackText `json:"text,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func section(mrkdwn string) slackBlock {
	return slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: mrkdwn}}
}

// slackMessage says what happened to whom in a line (text) and in blocks:
// the headline with api.route, the reason and the key's prefix; the key
// summary; the console link.
func slackMessage(p Payload) slack {
	what := headline(p)
	target := "step"
	if p.API != "" || p.Route != "" {
		target = p.API + "." + p.Route
	}
	key := p.Key
	if len(key) > keyPrefixLen {
		key = key[:keyPrefixLen]
	}
	text := fmt.Sprintf("%s: %s, key %s", what, target, key)
	if p.Reason != "" {
		text += " (" + p.Reason + ")"
	}
	var head strings.Builder
	fmt.Fprintf(&head, "*%s*: %s\n", what, code(target))
	if p.Reason != "" {
		fmt.Fprintf(&head, "*Reason:* %s\n", escape(p.Reason))
	}
	fmt.Fprintf(&head, "*Key:* %s", code(key))
	msg := slack{Text: escape(text), Blocks: []slackBlock{section(head.String())}}
	if len(p.KeyFields) > 0 {
		var b strings.Builder
		b.WriteString("*Key fields*")
		for _, f := range p.KeyFields {
			b.WriteString("\n" + code(f.Field))
			if f.Value != "" {
				b.WriteString(" " + code(f.Value))
			}
		}
		msg.Blocks = append(msg.Blocks, section(b.String()))
	}
	if p.ConsoleURL != "" {
		msg.Blocks = append(msg.Blocks, section("<"+escape(p.ConsoleURL)+"|Open in the toolguard console>"))
	}
	return msg
}

// headline names what happened: "Held for approval", "Held for review",
// "Approved", "Resolved".
func headline(p Payload) string {
	switch {
	case p.Type == KindHeld && p.Hold == journal.HoldAwaitingApproval.String():
		return "Held for approval"
	case p.Type == KindHeld:
		return "Held for review"
	case p.Event == journal.EventApproved:
		return "Approved"
	}
	return "Resolved"
}

// escape makes text safe in Slack mrkdwn: &, < and > are its control
// characters.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// code sets s in a code span, in which mrkdwn formats nothing; a
// backquote in s would end the span and becomes a quote.
func code(s string) string {
	return "`" + strings.ReplaceAll(escape(s), "`", "'") + "`"
}
