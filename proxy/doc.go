// Package proxy is toolguard's forward proxy: it accepts HTTP and CONNECT
// requests from agents, intercepts TLS for the hosts named in rules, and runs
// every side-effecting call through the guard pipeline, which decides to
// forward, replay, wait or block it. The admin API that operators use to
// inspect the journal and resolve holds is package admin; the proxy answers
// what only it knows (readiness, landing windows, credential scopes, next
// safe actions) through the methods admin.Proxy names.
//
// # The guard pipeline
//
// For a request that a rule describes, the pipeline derives the key of its
// business intent, records the step as started in the journal before a byte
// goes upstream, forwards it (with the key in the provider's idempotency
// header where the rule names one), records the outcome, and only then
// answers the agent. A duplicate is answered from the journal, or waits for
// the call in flight (in this process, or on another replica sharing the
// journal). A step whose outcome is unknown is resolved by the recovery
// table (lifecycle.Decide), never by blindly sending it again; a step
// nobody comes back for is settled in the background (package abandoned),
// and a committed effect whose rule asks for it is verified (package
// verification). Every change a step goes through is a pure function of
// package lifecycle.
//
// # Observe mode
//
// The calls of an API in observe mode (Options.Mode, or its rule file's
// guard: {mode}) are forwarded untouched, as passed-through calls are, and
// journaled afterwards as observations of what the pipeline would have
// done: the same recovery table, on a read with no claim (package
// observe records them; observe.go is the glue).
//
// # What lives here
//
// The forward proxy and its TLS interception (server.go, intercept.go,
// tunnel.go), the guard pipeline (guard.go, forward.go, answer.go) and its
// two carriers (carrier.go): REST, and MCP tools/call requests (mcp*.go:
// the MCP carrier, and the Pipeline that the MCP gateway, package
// mcp/gateway, reaches; which server a message is for and which route
// guards each tool is package mcp/servers'). The glue of observe mode
// (observe.go, observe_stream.go, mcp_observe.go), the wiring of the
// background work (abandon.go, verify.go, sweeper.go: packages abandoned,
// verification and retention do it) and the refusals (refuse.go). The
// leaf mechanisms the pipeline uses (calls in flight, header filters, the
// upstream transport, the wire watch, body reads) are internal packages.
//
// # Dependencies
//
// The recovery table and every transition of a step are package
// lifecycle's, pure functions with no I/O; the problems toolguard answers
// with, and their error formats, are package problem's; the Prometheus
// metrics are package metrics' (Options.Metrics), and the spans of
// Options.Tracer are made by internal/calltrace. Every upstream connection is opened by
// egress.Dial (the egress policy, checked at dial time on every address a
// name resolves to), through a transport the proxy always builds itself;
// certificates for intercepted hosts come from tlsca. The package consumes
// the journal through one interface, journal.Store, whatever its backend,
// and discovers nothing at run time; file maintenance (the size gauge) is
// the optional journal.Maintainer, passed in Options. It consumes rules
// through *rules.Set; none of these packages knows about this one, and
// neither does admin.
package proxy
