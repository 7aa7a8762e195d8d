// Package calltrace makes the OpenTelemetry spans of the calls the proxy
// handles, through the trace.Tracer of the proxy's options. It knows the
// span names, kinds and attributes, and how trace context travels (W3C
// traceparent in headers, params._meta of an MCP message); the proxy
// decides when a span starts and ends.
//
// Every guarded or passed-through request is one SERVER span, continuing
// the caller's W3C traceparent: started when the proxy takes the request,
// and ended where its decision line is written, with the decision's
// attributes. An MCP tools/call is a SERVER span of its own, named for its
// tool and parented on the trace context of the message's params._meta,
// as the MCP semantic conventions say. Each upstream attempt is a CLIENT
// span, child of the call's, whose context goes upstream in traceparent; a
// replay makes none. Lookups and verification probes are INTERNAL spans
// over the CLIENT spans of their requests. A refusal, or a tunnel, is a
// SERVER span ended at once.
//
// Attributes carry rule names (api, route, tool), fixed words (outcome,
// decision, status, hold), the step key (a keyed hash), the method, the
// status code and the target host; never a credential, a header value, a
// body or key-field value, a path, a query or the workflow id.
//
// With no trace.Tracer every method returns at once: tracing costs
// nothing.
package calltrace
