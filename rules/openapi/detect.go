package openapi

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolguard/toolguard/rules"
)

// slug turns a title into an api name: lowercase letters and digits, runs
// of anything else as one '-'; "api" when nothing is left.
func slug(title string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(title) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "api"
	}
	return b.String()
}

// sanitizeName makes an operationId a valid route name: every character
// other than letters, digits, '_', '.' and '-' becomes '_'.
func sanitizeName(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			out[i] = '_'
		}
	}
	return string(out)
}

// routeNameFrom names an operation without operationId by its method and
// path: "post_v1_customers_customer".
func routeNameFrom(method, pattern string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	under := true
	for _, c := range strings.ToLower(pattern) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if under {
				b.WriteByte('_')
			}
			b.WriteRune(c)
			under = false
			continue
		}
		under = true
	}
	return b.String()
}

// convertPath turns an OpenAPI path template into a ServeMux pattern:
// {param} segments become wildcards named as Go identifiers (ServeMux's
// rule), a segment holding a parameter among other text becomes one
// wildcard (with a TODO: it matches more than the template), and a
// trailing '/' becomes "/{$}" (ServeMux would read it as a prefix). It
// returns the wildcard names.
func convertPath(path string) (pattern string, wilds []string, todos []string) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	parts := strings.Split(path[1:], "/")
	used := map[string]bool{}
	for i, p := range parts {
		switch {
		case p == "" && i == len(parts)-1:
			parts[i] = "{$}"
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") && strings.Count(p, "{") == 1:
			name := uniqueWild(wildName(p[1:len(p)-1]), used)
			if name != p[1:len(p)-1] {
				todos = append(todos, fmt.Sprintf("path parameter {%s} is the wildcard {%s} here (ServeMux wants distinct Go identifiers)", p[1:len(p)-1], name))
			}
			parts[i], wilds = "{"+name+"}", append(wilds, name)
		case strings.ContainsAny(p, "{}"):
			name := uniqueWild(wildName(p), used)
			todos = append(todos, fmt.Sprintf("path segment %q has a parameter among other text; the wildcard {%s} matches any segment: check the route does not catch others", p, name))
			parts[i], wilds = "{"+name+"}", append(wilds, name)
		default:
			parts[i] = escapeSegment(p)
		}
	}
	return "/" + strings.Join(parts, "/"), wilds, todos
}

// wildName makes a Go identifier of a parameter name.
func wildName(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9' && b.Len() > 0:
			b.WriteRune(c)
		case c >= '0' && c <= '9':
			b.WriteString("p" + string(c))
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	name := strings.TrimSuffix(b.String(), "_")
	if name == "" {
		return "param"
	}
	return name
}

func uniqueWild(name string, used map[string]bool) string {
	base := name
	for n := 2; used[name]; n++ {
		name = fmt.Sprintf("%s%d", base, n)
	}
	used[name] = true
	return name
}

// escapeSegment percent-escapes what a literal ServeMux segment cannot
// hold as it is.
func escapeSegment(s string) string {
	if _, err := url.PathUnescape(s); err != nil {
		return url.PathEscape(s)
	}
	return s
}

// servers is what a document's servers say about hosts and paths.
type servers struct {
	hosts    []string
	basePath string
	todos    []string
}

// serverInfo derives the rule file's hosts and the routes' base path from
// the servers list. Variables are replaced by their enum values (or
// default), with a TODO; no absolute server gives a placeholder host under
// .invalid, which matches nothing, with a TODO.
func serverInfo(list openapi3.Servers, api string) servers {
	var s servers
	seenPath := false
	for _, srv := range list {
		if srv == nil {
			continue
		}
		urls, todo := expandServer(srv)
		if todo != "" {
			s.todos = append(s.todos, todo)
		}
		for _, raw := range urls {
			u, err := url.Parse(raw)
			if err != nil {
				s.todos = append(s.todos, fmt.Sprintf("server %q is not a URL: %v", raw, err))
				continue
			}
			base := strings.TrimSuffix(u.Path, "/")
			switch {
			case !seenPath:
				s.basePath, seenPath = base, true
			case base != s.basePath:
				s.todos = append(s.todos, fmt.Sprintf("server %q has the base path %q, routes use %q", raw, base, s.basePath))
			}
			if u.Host == "" {
				continue
			}
			if h := strings.ToLower(u.Host); !slices.Contains(s.hosts, h) {
				if err := rules.ValidHost(h); err != nil {
					s.todos = append(s.todos, fmt.Sprintf("server host %q is left out: %v", u.Host, err))
					continue
				}
				s.hosts = append(s.hosts, h)
			}
		}
	}
	if len(s.hosts) == 0 {
		s.hosts = []string{api + ".invalid"}
		s.todos = append(s.todos, "hosts: the document names no absolute server URL; "+
			"replace the placeholder with the API's host (host or host:port)")
	}
	return s
}

// expandServer substitutes a server URL's variables: every enum value
// (or the default) of each variable, with a TODO naming them.
func expandServer(srv *openapi3.Server) ([]string, string) {
	names := templateNames(srv.URL)
	if len(names) == 0 {
		return []string{srv.URL}, ""
	}
	urls := []string{srv.URL}
	var said []string
	for _, name := range names {
		vals := []string{""}
		if v := srv.Variables[name]; v != nil {
			vals = slices.Clone(v.Enum)
			if len(vals) == 0 {
				vals = []string{v.Default}
			}
		}
		said = append(said, fmt.Sprintf("{%s} = %s", name, strings.Join(quoteAll(vals), " | ")))
		var next []string
		for _, u := range urls {
			for _, val := range vals {
				next = append(next, strings.ReplaceAll(u, "{"+name+"}", val))
			}
		}
		urls = next
	}
	return urls, fmt.Sprintf("server %q is templated (%s): check hosts lists every host the API is called at",
		srv.URL, strings.Join(said, ", "))
}

// templateNames lists the {names} of a URL template, in order, once each.
func templateNames(s string) []string {
	var names []string
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return names
		}
		if n := s[i+1 : i+j]; !slices.Contains(names, n) {
			names = append(names, n)
		}
		s = s[i+j+1:]
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// credentialHeader picks the header that carries the caller's credential
// from the security schemes the document's operations use (all declared
// ones when none is required): an apiKey in a header, or Authorization
// for http, oauth2 and openIdConnect schemes.
func credentialHeader(doc *openapi3.T) (string, []string) {
	if doc.Components == nil || len(doc.Components.SecuritySchemes) == 0 {
		return "", []string{"credential: the document declares no security scheme; " +
			"name the header that carries the caller's credential (credential: {header: Authorization}) so callers never share keys"}
	}
	var headers, todos []string
	for _, name := range sortedKeys(doc.Components.SecuritySchemes) {
		ref := doc.Components.SecuritySchemes[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		h, todo := schemeHeader(name, ref.Value)
		if todo != "" {
			todos = append(todos, todo)
		}
		if h != "" && !slices.Contains(headers, h) {
			headers = append(headers, h)
		}
	}
	if len(headers) == 0 {
		return "", todos
	}
	if len(headers) > 1 {
		todos = append(todos, fmt.Sprintf("credential: the security schemes use the headers %s; "+
			"a rule file scopes keys by one of them", strings.Join(headers, ", ")))
	}
	return headers[0], todos
}

func schemeHeader(name string, s *openapi3.SecurityScheme) (string, string) {
	switch strings.ToLower(s.Type) {
	case "apikey":
		if strings.EqualFold(s.In, "header") && rules.ValidHeaderName(s.Name) {
			return s.Name, ""
		}
		return "", fmt.Sprintf("credential: security scheme %q sends its key in the %s %q; "+
			"only a header can scope keys by caller", name, s.In, s.Name)
	case "http", "oauth2", "openidconnect":
		return "Authorization", ""
	}
	return "", fmt.Sprintf("credential: security scheme %q of type %q is not understood", name, s.Type)
}

// idempotencyNames are header names that providers use for idempotency
// keys, lowercase without '-' and '_'.
var idempotencyNames = []string{
	"idempotencykey", "xidempotencykey", "idempotencytoken", "xidempotencytoken",
	"idempotentkey", "xidempotentkey", "idempotencyid", "xidempotencyid",
}

// isIdempotencyName reports whether a header or field name names an
// idempotency key: one of idempotencyNames, or any name holding
// "idempotency" or "idempotent", ignoring case, '-' and '_'.
func isIdempotencyName(name string) bool {
	n := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(name))
	return slices.Contains(idempotencyNames, n) ||
		strings.Contains(n, "idempotency") || strings.Contains(n, "idempotent")
}

// mentionsIdempotency reports whether a description speaks of idempotency.
func mentionsIdempotency(desc string) bool {
	return strings.Contains(strings.ToLower(desc), "idempoten")
}

// idempotencyHeader finds the header parameter that carries a native
// idempotency key: by its name, else by its description. Several
// candidates give a TODO naming the others.
func idempotencyHeader(params []*openapi3.Parameter) (string, []string) {
	var byName, byDesc []string
	for _, p := range params {
		if !strings.EqualFold(p.In, openapi3.ParameterInHeader) || !rules.ValidHeaderName(p.Name) {
			continue
		}
		switch {
		case isIdempotencyName(p.Name):
			byName = append(byName, p.Name)
		case mentionsIdempotency(p.Description):
			byDesc = append(byDesc, p.Name)
		}
	}
	all := append(byName, byDesc...)
	switch len(all) {
	case 0:
		return "", nil
	case 1:
		if len(byDesc) == 1 {
			return all[0], []string{fmt.Sprintf("native_idempotency: the header %s is described as an idempotency key; check the provider deduplicates on it", all[0])}
		}
		return all[0], nil
	}
	return all[0], []string{fmt.Sprintf("native_idempotency: several headers look like idempotency keys (%s); keep the one the provider deduplicates on", strings.Join(all, ", "))}
}

// yamlScalar writes s as a YAML scalar: plain when it is unambiguous,
// double-quoted (JSON escapes are valid YAML) otherwise.
func yamlScalar(s string) string {
	if plainSafe(s) {
		return s
	}
	return strconv.Quote(s)
}

// matchScalar writes a match value: plain unless it holds more than
// letters, digits, "_-./ " and the wildcard braces (block context allows
// those), since a path may hold any character.
func matchScalar(s string) string {
	if plainSafe(strings.NewReplacer("{", "", "}", "", "$", "").Replace(s)) {
		return s
	}
	return strconv.Quote(s)
}

func plainSafe(s string) bool {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@` ") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return false
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./ ", c) >= 0) {
			return false
		}
	}
	return !strings.HasSuffix(s, " ")
}

func joinScalars(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = yamlScalar(s)
	}
	return strings.Join(out, ", ")
}
