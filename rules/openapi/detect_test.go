package openapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolguard/toolguard/rules"
)

func TestConvertPath(t *testing.T) {
	tests := []struct {
		name, path, want string
		wilds            []string
		todo             string // a TODO holds this; "" wants none
	}{
		{name: "literal", path: "/v1/customers", want: "/v1/customers"},
		{name: "wildcards", path: "/v1/customers/{customer}/sources/{id}", want: "/v1/customers/{customer}/sources/{id}", wilds: []string{"customer", "id"}},
		{name: "dashed name", path: "/orders/{order-id}", want: "/orders/{order_id}", wilds: []string{"order_id"}, todo: "{order-id} is the wildcard {order_id}"},
		{name: "dotted name", path: "/x/{a.b}", want: "/x/{a_b}", wilds: []string{"a_b"}, todo: "{a_b}"},
		{name: "digit first", path: "/x/{1st}", want: "/x/{p1st}", wilds: []string{"p1st"}, todo: "{p1st}"},
		{name: "repeated name", path: "/a/{id}/b/{id}", want: "/a/{id}/b/{id2}", wilds: []string{"id", "id2"}, todo: "{id2}"},
		{name: "partial segment", path: "/files/{name}.json", want: "/files/{name_json}", wilds: []string{"name_json"}, todo: "among other text"},
		{name: "google style", path: "/v1/{name}:cancel", want: "/v1/{name_cancel}", wilds: []string{"name_cancel"}, todo: "among other text"},
		{name: "trailing slash", path: "/dir/", want: "/dir/{$}"},
		{name: "root", path: "/", want: "/{$}"},
		{name: "no leading slash", path: "a/b", want: "/a/b"},
		{name: "bad escape", path: "/100%/x", want: "/100%25/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, wilds, todos := convertPath(tc.path)
			if got != tc.want || !slices.Equal(wilds, tc.wilds) {
				t.Errorf("convertPath(%q) = %q %v, want %q %v", tc.path, got, wilds, tc.want, tc.wilds)
			}
			all := strings.Join(todos, "\n")
			if tc.todo == "" && all != "" || !strings.Contains(all, tc.todo) {
				t.Errorf("todos %q, want one holding %q", all, tc.todo)
			}
			if msg := registerPattern(http.NewServeMux(), "POST "+got); msg != "" {
				t.Errorf("ServeMux refuses %q: %s", got, msg)
			}
		})
	}
}

func TestIsIdempotencyName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"Idempotency-Key", true}, {"idempotency-key", true}, {"X-Idempotency-Key", true},
		{"Idempotency-Token", true}, {"x-idempotency-token", true}, {"IDEMPOTENCY_KEY", true},
		{"idempotency_key", true}, {"IdempotencyKey", true}, {"x-amz-idempotent-id", true},
		{"Authorization", false}, {"X-Request-Id", false}, {"key", false}, {"client_token", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isIdempotencyName(tc.name); got != tc.want {
				t.Errorf("isIdempotencyName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

func header(name, desc string) *openapi3.Parameter {
	return &openapi3.Parameter{Name: name, In: "header", Description: desc}
}

func TestIdempotencyHeader(t *testing.T) {
	tests := []struct {
		name   string
		params []*openapi3.Parameter
		want   string
		todo   string
	}{
		{name: "none", params: []*openapi3.Parameter{header("X-Trace", "")}},
		{name: "by name", params: []*openapi3.Parameter{header("X-Trace", ""), header("Idempotency-Key", "")}, want: "Idempotency-Key"},
		{name: "by description", params: []*openapi3.Parameter{header("X-Request-Token", "An idempotency token.")}, want: "X-Request-Token", todo: "described as an idempotency key"},
		{name: "name beats description", params: []*openapi3.Parameter{header("X-Req", "idempotent retries"), header("x-idempotency-key", "")},
			want: "x-idempotency-key", todo: "several headers"},
		{name: "query is not a header", params: []*openapi3.Parameter{{Name: "idempotency_key", In: "query"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, todos := idempotencyHeader(tc.params)
			all := strings.Join(todos, "\n")
			if got != tc.want || (tc.todo == "") != (all == "") || !strings.Contains(all, tc.todo) {
				t.Errorf("idempotencyHeader = %q %q, want %q with a TODO holding %q", got, all, tc.want, tc.todo)
			}
		})
	}
}

func TestIdempotencyField(t *testing.T) {
	str := func(desc string) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Description: desc}}
	}
	tests := []struct {
		name  string
		props openapi3.Schemas
		want  string
	}{
		{name: "square", props: openapi3.Schemas{"idempotency_key": str(""), "amount": str("")}, want: "idempotency_key"},
		{name: "description", props: openapi3.Schemas{"client_token": str("Ensures idempotency."), "name": str("")}, want: "client_token"},
		{name: "name beats description", props: openapi3.Schemas{"a": str("idempotent"), "idempotencyKey": str("")}, want: "idempotencyKey"},
		{name: "object is not a key", props: openapi3.Schemas{"idempotency": {Value: &openapi3.Schema{Type: &openapi3.Types{"object"}}}}},
		{name: "none", props: openapi3.Schemas{"amount": str("")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := idempotencyField(tc.props); got != tc.want {
				t.Errorf("idempotencyField = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServerInfo(t *testing.T) {
	tests := []struct {
		name    string
		servers openapi3.Servers
		hosts   []string
		base    string
		todo    string
	}{
		{name: "none", hosts: []string{"x.invalid"}, todo: "no absolute server URL"},
		{name: "relative", servers: openapi3.Servers{{URL: "/api/v3"}}, hosts: []string{"x.invalid"}, base: "/api/v3", todo: "no absolute server URL"},
		{name: "plain", servers: openapi3.Servers{{URL: "https://api.stripe.com/"}}, hosts: []string{"api.stripe.com"}},
		{name: "port and path", servers: openapi3.Servers{{URL: "http://LOCALHOST:8080/v1/"}}, hosts: []string{"localhost:8080"}, base: "/v1"},
		{name: "enum variable", servers: openapi3.Servers{{URL: "https://{region}.example.com", Variables: map[string]*openapi3.ServerVariable{
			"region": {Default: "eu", Enum: []string{"eu", "us"}}}}}, hosts: []string{"eu.example.com", "us.example.com"}, todo: "templated"},
		{name: "default variable", servers: openapi3.Servers{{URL: "https://api.example.com/{version}", Variables: map[string]*openapi3.ServerVariable{
			"version": {Default: "v2"}}}}, hosts: []string{"api.example.com"}, base: "/v2", todo: `{version} = "v2"`},
		{name: "differing base paths", servers: openapi3.Servers{{URL: "https://a.example.com/v1"}, {URL: "https://b.example.com/v2"}},
			hosts: []string{"a.example.com", "b.example.com"}, base: "/v1", todo: `base path "/v2"`},
		{name: "same host twice", servers: openapi3.Servers{{URL: "https://a.example.com"}, {URL: "https://a.example.com"}}, hosts: []string{"a.example.com"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serverInfo(tc.servers, "x")
			all := strings.Join(s.todos, "\n")
			if !slices.Equal(s.hosts, tc.hosts) || s.basePath != tc.base {
				t.Errorf("hosts %v base %q, want %v %q", s.hosts, s.basePath, tc.hosts, tc.base)
			}
			if (tc.todo == "") != (all == "") || !strings.Contains(all, tc.todo) {
				t.Errorf("todos %q, want one holding %q", all, tc.todo)
			}
		})
	}
}

func TestCredentialHeader(t *testing.T) {
	scheme := func(s openapi3.SecurityScheme) *openapi3.SecuritySchemeRef {
		return &openapi3.SecuritySchemeRef{Value: &s}
	}
	tests := []struct {
		name    string
		schemes openapi3.SecuritySchemes
		want    string
		todo    string
	}{
		{name: "none", todo: "declares no security scheme"},
		{name: "bearer", schemes: openapi3.SecuritySchemes{"b": scheme(openapi3.SecurityScheme{Type: "http", Scheme: "bearer"})}, want: "Authorization"},
		{name: "api key header", schemes: openapi3.SecuritySchemes{"k": scheme(openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "X-API-Key"})}, want: "X-API-Key"},
		{name: "api key query", schemes: openapi3.SecuritySchemes{"k": scheme(openapi3.SecurityScheme{Type: "apiKey", In: "query", Name: "key"})}, todo: "only a header"},
		{name: "oauth2", schemes: openapi3.SecuritySchemes{"o": scheme(openapi3.SecurityScheme{Type: "oauth2"})}, want: "Authorization"},
		{name: "two headers", schemes: openapi3.SecuritySchemes{
			"a": scheme(openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "X-Key"}),
			"b": scheme(openapi3.SecurityScheme{Type: "http", Scheme: "basic"})}, want: "X-Key", todo: "X-Key, Authorization"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := &openapi3.T{Components: &openapi3.Components{SecuritySchemes: tc.schemes}}
			got, todos := credentialHeader(doc)
			all := strings.Join(todos, "\n")
			if got != tc.want || (tc.todo == "") != (all == "") || !strings.Contains(all, tc.todo) {
				t.Errorf("credentialHeader = %q %q, want %q with a TODO holding %q", got, all, tc.want, tc.todo)
			}
		})
	}
}

func TestSlugAndNames(t *testing.T) {
	tests := []struct{ in, slug, name string }{
		{in: "Stripe API", slug: "stripe-api", name: "Stripe_API"},
		{in: "  Orders & Files — v2 ", slug: "orders-files-v2", name: "__Orders___Files___v2_"},
		{in: "issues/create", slug: "issues-create", name: "issues_create"},
		{in: "!!!", slug: "api", name: "___"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := slug(tc.in); got != tc.slug || !rules.ValidAPIName(got) {
				t.Errorf("slug(%q) = %q, want %q", tc.in, got, tc.slug)
			}
			if got := sanitizeName(tc.in); !rules.ValidRouteName(got) || (tc.name != "" && !strings.HasPrefix(got, tc.name[:1])) {
				t.Errorf("sanitizeName(%q) = %q: not a route name", tc.in, got)
			}
		})
	}
	if got := routeNameFrom("POST", "/v1/customers/{customer}/{$}"); got != "post_v1_customers_customer" {
		t.Errorf("routeNameFrom = %q", got)
	}
}

func TestYAMLScalar(t *testing.T) {
	tests := []struct{ in, want string }{
		{"amount", "amount"}, {"metadata[order_id]", `"metadata[order_id]"`}, {`ship\.to`, `"ship\\.to"`},
		{"true", `"true"`}, {"123", `"123"`}, {"", `""`}, {"-x", `"-x"`}, {"a: b", `"a: b"`}, {"a #b", `"a #b"`},
		{"Idempotency-Key", "Idempotency-Key"}, {"x.invalid", "x.invalid"},
	}
	for _, tc := range tests {
		if got := yamlScalar(tc.in); got != tc.want {
			t.Errorf("yamlScalar(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := matchScalar("POST /a/{id}/{$}"); got != "POST /a/{id}/{$}" {
		t.Errorf("matchScalar = %s", got)
	}
	if got := matchScalar("POST /a #b"); got != `"POST /a #b"` {
		t.Errorf("matchScalar = %s", got)
	}
}

func TestEscapeKeyName(t *testing.T) {
	tests := []struct {
		in   string
		kind oaBody
		want string
	}{
		{"amount", oaJSON, "amount"}, {"ship.to", oaJSON, `ship\.to`}, {"a*b?", oaJSON, `a\*b\?`},
		{"x[y]", oaJSON, `x\[y\]`}, {"x[y]", oaForm, "x[y]"}, {"a.b", oaForm, `a\.b`},
	}
	for _, tc := range tests {
		got := escapeKeyName(tc.in, tc.kind)
		if got != tc.want || rules.ValidKeyPath(got) != nil {
			t.Errorf("escapeKeyName(%q, %d) = %q (valid: %v), want %q", tc.in, tc.kind, got, rules.ValidKeyPath(got), tc.want)
		}
	}
	if got := joinKeyPath("metadata", "order_id", oaForm); got != "metadata[order_id]" {
		t.Errorf("joinKeyPath form = %q", got)
	}
	if got := joinKeyPath("a", "b[c]", oaForm); got != "a[b][c]" {
		t.Errorf("joinKeyPath nested form = %q", got)
	}
	if got := joinKeyPath("a", "b.c", oaJSON); got != "a.b.c" {
		t.Errorf("joinKeyPath json = %q", got)
	}
}
