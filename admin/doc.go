// Package admin is toolguard's admin HTTP API: the steps and events of the
// journal, the operators' approvals and resolutions of held steps, workflows
// with their checkpoints and resume packets, and journal maintenance. It also
// holds the API's wire types (StepView, ResumePacket, ...) and Client, with
// which the CLI inspects a running proxy without linking the proxy itself.
//
// # Dependencies
//
// The API reads and changes the journal through Journal, the narrow view of
// a journal backend it needs, and asks the proxy that handles the calls
// through Proxy what only the proxy knows: readiness, when an interrupted
// attempt can no longer land, a caller's credential scope and the next safe
// action of a step. Both are declared here and provided by the caller
// (cmd/toolguard wires them); this package never imports the proxy.
//
// # Errors
//
// Every failed request is answered by one mapper (problemFor in problem.go):
// each error kind gets its RFC 9457 problem type and status; a journal
// failure is logged and answered 500 without its text.
//
// # Authentication
//
// A bearer token grants a Role: the operator token may do everything, the
// agent token reads steps and workflows and writes checkpoints, limited to
// the credential scope its caller presents (scope.go). /healthz, /readyz
// and the web console's static files need no token.
package admin
