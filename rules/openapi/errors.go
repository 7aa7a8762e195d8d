package openapi

import "errors"

// Errors of Skeleton; it wraps them with the document's title.
var (
	// ErrNoWriteOperations means an OpenAPI document has no POST, PUT,
	// PATCH or DELETE operation to write a route for.
	ErrNoWriteOperations = errors.New("no POST, PUT, PATCH or DELETE operations")
)
