package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseMCPGolden parses every testdata/mcp file: good_* files must
// parse (their golden file is a dump of the tools), every other file must
// fail with exactly the errors of its golden file.
func TestParseMCPGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/mcp/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			api, err := Parse(filepath.ToSlash(file), data)
			wantOK := strings.HasPrefix(name, "good")
			var got string
			switch {
			case err == nil && wantOK:
				got = dumpMCP(t, api)
			case err != nil && !wantOK:
				var es *Errors
				if !errors.As(err, &es) {
					t.Fatalf("error is %T, want *Errors: %v", err, err)
				}
				got = err.Error() + "\n"
			default:
				t.Fatalf("Parse() error = %v, want ok = %v", err, wantOK)
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".golden", got)
		})
	}
}

func dumpMCP(t *testing.T, api *API) string {
	var b strings.Builder
	fmt.Fprintf(&b, "api %s path %s hosts %v credential %s\n", api.Name, api.MCP.Path, api.Hosts, api.Credential)
	names := make([]string, 0, len(api.MCP.Tools))
	for n := range api.MCP.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		r := api.MCP.Tools[n]
		fmt.Fprintf(&b, "tool %s %s %s effect=%s fields=%v approval=%v operation_id=%s\n", r.Name, r.Method, r.Pattern, r.Effect, r.Key.Fields, r.ApprovalRequired, r.OperationID)
		if l := r.Lookup; l != nil {
			args, err := l.Request.Tool.Arguments.Expand(Values{Key: "K", Body: []byte(`{"project":"ops","title":"Disk full"}`)})
			if err != nil {
				t.Fatalf("expand lookup arguments: %v", err)
			}
			fmt.Fprintf(&b, "  lookup %s %s found=%v absent=%v operation_id=%s\n", l.Request.Tool.Name, args, l.Found.Body, l.Absent.Body, l.OperationID)
		}
		if v := r.Verify; v != nil {
			args, err := v.Request.Tool.Arguments.Expand(Values{Key: "K", OperationID: "T-1", Body: []byte(`{"project":"ops"}`),
				Response: []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"made T-1"}]}}`)})
			if err != nil {
				t.Fatalf("expand verify arguments: %v", err)
			}
			fmt.Fprintf(&b, "  verify %s %s expect=%v within=%s mode=%s\n", v.Request.Tool.Name, args, v.Expect.Body, v.Within, v.Mode)
		}
	}
	return b.String()
}

func TestMCPEndpoint(t *testing.T) {
	data, err := os.ReadFile("testdata/mcp/good_tickets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := Parse("good_tickets.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host, path string
		want             bool
	}{
		{name: "endpoint", host: "tickets.example.com:443", path: "/mcp", want: true},
		{name: "other path", host: "tickets.example.com:443", path: "/mcp/x"},
		{name: "other host", host: "example.com:443", path: "/mcp"},
		// Regression: these spellings were matched literally and passed
		// unguarded, though servers route them to /mcp.
		{name: "escaped letter", host: "tickets.example.com:443", path: "/%6Dcp", want: true},
		{name: "all escaped, lower case", host: "tickets.example.com:443", path: "/%6d%63%70", want: true},
		{name: "trailing slash", host: "tickets.example.com:443", path: "/mcp/", want: true},
		{name: "double slash", host: "tickets.example.com:443", path: "//mcp", want: true},
		{name: "dot segments", host: "tickets.example.com:443", path: "/a/../mcp/.", want: true},
		{name: "escaped slash and dots", host: "tickets.example.com:443", path: "/a%2F..%2Fmcp", want: true},
		{name: "relative", host: "tickets.example.com:443", path: "mcp"},
		{name: "escaped other path", host: "tickets.example.com:443", path: "/mcp%2Fx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := set.MCPEndpoint(tc.host, tc.path) != nil; got != tc.want {
				t.Errorf("MCPEndpoint(%q, %q) = %v, want %v", tc.host, tc.path, got, tc.want)
			}
		})
	}
	if !set.Intercepts("tickets.example.com:443") {
		t.Error("Intercepts(tickets.example.com) = false: the forward proxy would not see the endpoint's calls")
	}
	if r, _ := set.Match("tickets.example.com:443", "POST", "/mcp"); r != nil {
		t.Errorf("Match() = %s, want no REST route for an MCP endpoint", r.Name)
	}
	if api.Tool("create_ticket") == nil || api.Tool("nope") != nil {
		t.Error("Tool() does not find exactly the named tools")
	}
}

// FuzzParseMCP checks that MCP rule files never make the parser panic,
// and that whatever it accepts can be matched and its tool calls expanded.
// Seeds: the files of testdata/mcp.
func FuzzParseMCP(f *testing.F) {
	files, _ := filepath.Glob("testdata/mcp/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	vals := Values{Key: "k", OperationID: "op", Body: []byte(`{"a":1,"title":"t"}`), Response: []byte(`{"result":{"id":"x"}}`)}
	f.Fuzz(func(t *testing.T, data []byte) {
		api, err := Parse("fuzz.yaml", data)
		if err != nil || api.MCP == nil {
			return
		}
		set, err := NewSet(api)
		if err != nil {
			t.Fatalf("NewSet of one valid api: %v", err)
		}
		for _, h := range api.Hosts {
			set.MCPEndpoint(h, api.MCP.Path)
		}
		for _, name := range api.ToolNames() {
			r := api.Tool(name)
			if r.Lookup != nil {
				if out, err := r.Lookup.Request.Tool.Arguments.Expand(vals); err == nil && !json.Valid(out) {
					t.Fatalf("lookup arguments expand to invalid JSON %q", out)
				}
			}
			if r.Verify != nil {
				if out, err := r.Verify.Request.Tool.Arguments.Expand(vals); err == nil && !json.Valid(out) {
					t.Fatalf("verify arguments expand to invalid JSON %q", out)
				}
			}
		}
	})
}

// Regression: arguments with control characters expanded to Go's quoting
// (\x02), which is not JSON (found by FuzzParseMCP).
func TestArgsTemplateControlCharacters(t *testing.T) {
	api, err := Parse("a.yaml", []byte("api: a\nmcp: {}\ntools:\n  - name: t\n    effect: reversible\n    lookup:\n      tool: l\n      arguments: {q: \"a\\x02{{arguments.s}}\"}\n      found: {result: {n: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := api.Tool("t").Lookup.Request.Tool.Arguments.Expand(Values{Body: []byte(`{"s":"\u0007é"}`)})
	if err != nil || !json.Valid(out) {
		t.Fatalf("Expand() = %q, %v; want valid JSON", out, err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil || got["q"] != "a\x02\u0007é" {
		t.Errorf("Expand() = %q, want the value kept", out)
	}
}
