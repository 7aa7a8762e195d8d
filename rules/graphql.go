package rules

import (
	"encoding/json"
	"fmt"
	"strings"
)

// GraphQLMatch selects operations of a GraphQL endpoint: by operation
// name, by the first root field of the selection set, or both (both must
// then hold), among operations of one type: mutations unless Type says
// query or subscription. A query is guarded only when a route selects it
// with type: query.
type GraphQLMatch struct {
	Operation string
	Field     string
	// Type is "mutation", "query" or "subscription"; "" means mutation.
	Type string
}

// opType is the operation type the selector matches.
func (m *GraphQLMatch) opType() string {
	if m.Type == "" {
		return "mutation"
	}
	return m.Type
}

// GraphQLOperation is what SelectGraphQL reads from a request: the
// operation's type (query, mutation or subscription), its name ("" when
// anonymous) and its first root field ("" when the selection starts with
// a fragment spread).
type GraphQLOperation struct {
	Type, Name, Field string
}

// SelectGraphQL picks the route for a POST to a GraphQL endpoint whose
// first route r is (Match returns it). For a route that is not such an
// endpoint it returns r. Otherwise it parses the request body ({"query",
// "operationName", "variables"}) and returns:
//   - the route whose graphql selector matches the operation;
//   - else, for a mutation or subscription, the endpoint's route without
//     a selector; when there is none, a mutation gets the API's route of
//     unlisted writes (nil under unlisted: pass, and for a subscription:
//     the call is unmatched);
//   - else (a query) nil with pass set: a query is never guarded unless a
//     route selects it.
//
// A body that is not one GraphQL request gives an error wrapping
// ErrInvalidBody: bad JSON, a batch (an array), several operations
// without operationName, an operationName that names none.
func SelectGraphQL(r *Route, body []byte) (route *Route, pass bool, err error) {
	if r == nil || r.graphqlGroup == nil {
		return r, false, nil
	}
	op, err := ParseGraphQLRequest(body)
	if err != nil {
		return nil, false, err
	}
	var plain *Route
	for _, g := range r.graphqlGroup {
		switch {
		case g.GraphQL == nil:
			plain = g
		case g.GraphQL.matches(op):
			return g, false, nil
		}
	}
	if op.Type == "query" {
		return nil, true, nil
	}
	if plain == nil && op.Type == "mutation" {
		// A mutation no route describes is an unlisted write.
		return r.API.UnlistedRouteOf(r.Method), false, nil
	}
	return plain, false, nil
}

func (m *GraphQLMatch) matches(op GraphQLOperation) bool {
	return m.opType() == op.Type && (m.Operation == "" || m.Operation == op.Name) && (m.Field == "" || m.Field == op.Field)
}

// IsGraphQLEndpoint reports whether SelectGraphQL must read the body to
// choose among r and the routes that share its endpoint.
func (r *Route) IsGraphQLEndpoint() bool { return r != nil && r.graphqlGroup != nil }

// ParseGraphQLRequest reads the operation a GraphQL-over-HTTP POST body
// asks for.
func ParseGraphQLRequest(body []byte) (GraphQLOperation, error) {
	var req struct {
		Query         *string `json:"query"`
		OperationName *string `json:"operationName"`
	}
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL batches are not supported (send one operation per request)", ErrInvalidBody)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL request: %v", ErrInvalidBody, err)
	}
	if req.Query == nil {
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL request without a query (persisted queries are not supported)", ErrInvalidBody)
	}
	name := ""
	if req.OperationName != nil {
		name = *req.OperationName
	}
	return ParseGraphQLDocument(*req.Query, name)
}

// ParseGraphQLDocument finds the operation of a GraphQL document: the one
// named operationName, or its only operation when operationName is "".
func ParseGraphQLDocument(doc, operationName string) (GraphQLOperation, error) {
	ops, err := (&gqlLexer{src: doc}).operations()
	if err != nil {
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL query: %v", ErrInvalidBody, err)
	}
	if operationName == "" {
		switch len(ops) {
		case 0:
			return GraphQLOperation{}, fmt.Errorf("%w: GraphQL query has no operation", ErrInvalidBody)
		case 1:
			return ops[0], nil
		}
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL query has %d operations and no operationName says which to run", ErrInvalidBody, len(ops))
	}
	var found []GraphQLOperation
	for _, op := range ops {
		if op.Name == operationName {
			found = append(found, op)
		}
	}
	if len(found) != 1 {
		return GraphQLOperation{}, fmt.Errorf("%w: GraphQL query has %d operations named %q (want exactly one)", ErrInvalidBody, len(found), operationName)
	}
	return found[0], nil
}

func validGraphQLName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
