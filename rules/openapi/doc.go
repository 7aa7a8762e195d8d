// Package openapi writes a starting rule file from an OpenAPI 3.0 or 3.1
// document, for toolguard rules init --from-openapi. Skeleton proposes
// what the document suggests and leaves a "# TODO(toolguard): " comment
// for every decision a human must make; its output always loads with
// rules.Parse.
//
// # What a skeleton holds
//
// A route per POST, PUT, PATCH and DELETE operation, key fields from the
// required properties of the request body, native idempotency from header
// parameters or body fields named or described as idempotency keys, the
// credential header of the document's security schemes, and hosts from
// its servers. Skeleton reads the document and the local files its $refs
// name, nothing else.
package openapi
