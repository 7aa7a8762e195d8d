package openapi

import "errors"

// Errors of Skeleton; it wraps them with the document's title.
var (
	// ErrNoWriteOperations means an OpenAPI document has no POST, PUT,
	// PATCH or DELETE operation to write a route for.
	ErrNoWriteOperations = errors.New("no POST, PUT, PATCH or DELETE operations")
)

// Errors of CoverageOf.
var (
	// ErrNoOperations means an OpenAPI document has no operation at all.
	ErrNoOperations = errors.New("the OpenAPI document has no operations")
	// ErrNotREST means the rule file describes an MCP server's tools,
	// which an OpenAPI document does not describe.
	ErrNotREST = errors.New("not a REST rule file")
	// ErrServerHost means a server URL given by hand names no host.
	ErrServerHost = errors.New("want an absolute URL such as https://host/base")
)
