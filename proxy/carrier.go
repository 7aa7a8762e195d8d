package proxy

import (
	"net/url"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
)

// A carrier takes a guarded call to its provider and brings the answer
// back in the call's own protocol. The pipeline (admit, decide, forward,
// recover) is one for every protocol; what differs lives behind this
// interface: REST calls travel as the agent's own HTTP request
// (restCarrier), MCP tools/call requests as JSON-RPC messages to the tool's
// server (mcpCall, in the mcp_*.go files).
//
// Every method runs on the call's goroutine; a carrier may keep per-call
// state (mcpCall does), so one value serves one call, except restCarrier,
// which keeps none and is shared.
type carrier interface {
	// send makes one upstream attempt, only inside the claim's lease (see
	// package wirewatch). The agent going away does not cancel it.
	send(c *call) result
	// outcome returns the journal change that records an attempt's
	// result; it is applied, fenced, to the step the call claimed.
	outcome(c *call, res result, now time.Time) func(journal.Step) journal.Change
	// forwarded answers a call just sent, from the record of its outcome.
	forwarded(c *call, rec journal.Step, res result, d lifecycle.Decision) *answer
	// replay answers from a step's stored outcome.
	replay(c *call, st *journal.Step, outcome string, d lifecycle.Decision) *answer
	// problem renders a refusal or a hold in the protocol's own shape.
	problem(c *call, p *problem.Details, d lifecycle.Decision) *answer
	// lookup asks the provider whether the step's call took effect and
	// remembers the answer in c for the step's current fence.
	lookup(c *call, st *journal.Step)
	// verifyTarget is the endpoint that verification probes of the call
	// go to; nil when the probe's request names its own URL (REST).
	verifyTarget() *url.URL
	// routeLabel is the route label of the call's metrics.
	routeLabel(c *call) string
	// legacyKeys reports whether the protocol's keys had a previous form
	// that the journal may still hold (see Server.legacyStep).
	legacyKeys() bool
}

// restCarrier carries REST calls: the agent's request, forwarded.
type restCarrier struct{ s *Server }

var (
	_ carrier = restCarrier{}
	_ carrier = (*mcpCall)(nil)
)

func (r restCarrier) verifyTarget() *url.URL    { return nil }
func (r restCarrier) routeLabel(c *call) string { return c.route.Name }
func (r restCarrier) legacyKeys() bool          { return true }
