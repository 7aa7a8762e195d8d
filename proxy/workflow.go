package proxy

import (
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/policy"
)

// versionChange compares the versions a request carries with the ones its
// workflow recorded in the caller's scope (another caller's steps in a
// workflow of the same id never decide); it describes the change, or
// returns "" when there is none (or nothing to compare).
func (s *Server) versionChange(c *call) string {
	id := c.in.Header.Get(HeaderWorkflow)
	if id == "" {
		return ""
	}
	w, err := s.journal.GetWorkflow(c.callerMAC, id)
	if err != nil {
		return ""
	}
	var changes []string
	if v := c.in.Header.Get(HeaderPromptVersion); v != "" && w.PromptVersion != "" && v != w.PromptVersion {
		changes = append(changes, fmt.Sprintf("prompt version %s → %s", w.PromptVersion, v))
	}
	if v := c.in.Header.Get(HeaderPolicyVersion); v != "" && w.PolicyVersion != "" && v != w.PolicyVersion {
		changes = append(changes, fmt.Sprintf("policy version %s → %s", w.PolicyVersion, v))
	}
	return strings.Join(changes, ", ")
}

// applyVersionPolicy adjusts the decision for a new step whose workflow
// changed versions: stop holds it (nothing is sent), allow goes on and
// leaves an event.
func (s *Server) applyVersionPolicy(c *call, d lifecycle.Decision) lifecycle.Decision {
	if c.versionChange == "" || d.Action != lifecycle.ActionForward {
		return d
	}
	if s.opts.OnVersionChange == policy.VersionAllow {
		return d
	}
	return lifecycle.Decision{Action: lifecycle.ActionHold, Hold: journal.HoldNeedsReview, Reason: lifecycle.ReasonVersionChanged,
		Why: c.versionChange + " in the middle of the workflow"}
}
