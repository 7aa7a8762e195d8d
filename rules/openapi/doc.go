// Package openapi reads a provider's OpenAPI 3.0 or 3.1 document for
// rule files: Skeleton writes a starting rule file from it (toolguard
// rules init --from-openapi), and CoverageOf tells how a rule file handles
// each of its write operations (toolguard rules coverage). Skeleton
// proposes what the document suggests and leaves a "# TODO(toolguard): "
// comment for every decision a human must make; its output always loads
// with rules.Parse.
//
// # What a skeleton holds
//
// A route per POST, PUT, PATCH and DELETE operation, key fields from the
// required properties of the request body, native idempotency from header
// parameters or body fields named or described as idempotency keys, the
// credential header of the document's security schemes, and hosts from
// its servers. Skeleton reads the document and the local files its $refs
// name, nothing else.
//
// # Coverage
//
// CoverageOf matches every POST, PUT, PATCH and DELETE operation, at each
// of its servers, against the rule file as the proxy matches a request,
// and lists the routes that match no operation of the document (typos,
// retired paths).
package openapi
