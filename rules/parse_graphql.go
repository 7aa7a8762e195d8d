package rules

import "net/http"

// This file parses a route's graphql: selector, and groups the routes of
// one GraphQL endpoint.

// graphql reads graphql: {operation, field}.
func (d *decoder) graphql(r *Route, e entry) *GraphQLMatch {
	fs, ok := d.mapping(e.val, "graphql", "operation", "field", "type")
	if !ok {
		return nil
	}
	g := &GraphQLMatch{}
	for _, k := range []string{"operation", "field"} {
		f, ok := fs[k]
		if !ok {
			continue
		}
		s, ok := d.str(f.val, "graphql."+k)
		if ok && !validGraphQLName(s) {
			d.errorf(f.val, "graphql.%s: invalid GraphQL name %q", k, s)
		}
		if k == "operation" {
			g.Operation = s
		} else {
			g.Field = s
		}
	}
	if t, ok := fs["type"]; ok {
		if g.Type, ok = d.str(t.val, "graphql.type"); ok && g.Type != "mutation" && g.Type != "query" && g.Type != "subscription" {
			d.errorf(t.val, "graphql.type: unknown operation type %q (want mutation, query or subscription)", g.Type)
		}
	}
	if g.Operation == "" && g.Field == "" {
		d.errorf(e.node, "graphql: want operation or field (or both)")
	}
	if r.Method != "" && r.Method != http.MethodPost {
		d.errorf(e.node, "graphql: GraphQL routes match POST only (got %s)", r.Method)
	}
	return g
}

// graphqlGroups links the routes of each GraphQL endpoint (method and
// pattern with at least one graphql route) to the first of them, which
// Match returns, and refuses two routes with the same selector or two
// without one.
func (d *decoder) graphqlGroups(routes []*Route) {
	groups := map[string][]*Route{}
	var order []string
	for _, r := range routes {
		if r.segs == nil {
			continue
		}
		k := r.Method + " " + r.Pattern
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		g := groups[k]
		if !hasGraphQL(g) {
			continue
		}
		g[0].graphqlGroup = g
		var plain *Route
		seen := map[GraphQLMatch]*Route{}
		for _, r := range g {
			switch {
			case r.GraphQL == nil && plain != nil:
				d.errs.add(r.matchPos, "match: route %q and route %q both serve GraphQL endpoint %s without a graphql selector (keep one, for mutations no other route selects)", plain.Name, r.Name, k)
			case r.GraphQL == nil:
				plain = r
			case seen[*r.GraphQL] != nil:
				d.errs.add(r.Pos, "graphql: route %q selects the same operations as route %q", r.Name, seen[*r.GraphQL].Name)
			default:
				seen[*r.GraphQL] = r
			}
		}
	}
}

func hasGraphQL(rs []*Route) bool {
	for _, r := range rs {
		if r.GraphQL != nil {
			return true
		}
	}
	return false
}

// sameEndpoint reports whether r shares its method and pattern with a
// GraphQL endpoint's first route, other than being that route: conflicts
// leaves such routes to graphqlGroups.
func sameEndpoint(r *Route, routes []*Route) bool {
	for _, g := range routes {
		if g.graphqlGroup != nil && g != r && g.Method == r.Method && g.Pattern == r.Pattern {
			return true
		}
	}
	return false
}
