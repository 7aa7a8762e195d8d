package openapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// oaDoc wraps paths (and components) in a minimal OpenAPI document.
func oaDoc(version, paths, components string) []byte {
	doc := "openapi: " + version + "\ninfo: {title: Cases, version: '1'}\nservers: [{url: 'https://api.example.com'}]\npaths:\n" + paths
	if components != "" {
		doc += "components:\n" + components
	}
	return []byte(doc)
}

// Edge cases of the generator, each checked as the rules package loads the
// result: the route's key fields, its native idempotency, and a TODO.
func TestSkeletonCases(t *testing.T) {
	ok := "      responses: {'200': {description: ok}}\n"
	tests := []struct {
		name       string
		version    string
		paths      string
		components string
		fields     []string
		native     string // header or body name
		todo       string // the output holds this TODO text ("" checks nothing)
		note       string // the output holds this comment
	}{
		{name: "allOf cycle", version: "3.0.3",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}\n" + ok,
			components: "  schemas:\n    A: {allOf: [{$ref: '#/components/schemas/B'}], required: [x], properties: {x: {type: string}}}\n" +
				"    B: {allOf: [{$ref: '#/components/schemas/A'}], required: [y], properties: {y: {type: integer}}}\n",
			fields: []string{"x", "y"}},
		{name: "self-referencing required property", version: "3.1.0",
			paths:      "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/N'}}}}\n" + ok,
			components: "  schemas:\n    N: {type: object, required: [next], properties: {next: {$ref: '#/components/schemas/N'}}}\n",
			fields:     []string{"next"}},
		{name: "no request body", version: "3.0.0",
			paths: "  /a/{id}/cancel:\n    post:\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n" + ok,
			todo:  "no request body: every call keyed on the path's {id}"},
		{name: "delete keyed on its path", version: "3.0.0",
			paths: "  /a/{id}:\n    delete:\n" + ok,
			note:  "no body: keyed on the path's {id}"},
		{name: "anyOf body", version: "3.1.0",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {anyOf: [{type: object}, {type: array}]}}}}\n" + ok,
			todo:  "one of 2 shapes"},
		{name: "oneOf body by ref", version: "3.0.0",
			paths:      "  /a:\n    put:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/S'}}}}\n" + ok,
			components: "  schemas:\n    S: {oneOf: [{type: object, required: [a], properties: {a: {type: string}}}, {type: string}]}\n",
			todo:       "one of 2 shapes"},
		{name: "nullable object 3.1", version: "3.1.0",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {type: [object, 'null'], required: [p], " +
				"properties: {p: {type: [object, 'null'], required: [q], properties: {q: {type: string}}}}}}}}\n" + ok,
			fields: []string{"p.q"}},
		{name: "read-only required property", version: "3.0.0",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {type: object, required: [id, name], " +
				"properties: {id: {type: string, readOnly: true}, name: {type: string}}}}}}\n" + ok,
			fields: []string{"name"}},
		{name: "JSON object without required parts", version: "3.0.0",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {type: object, required: [meta], " +
				"properties: {meta: {type: object, additionalProperties: {type: string}}}}}}}\n" + ok,
			fields: []string{"meta"}},
		{name: "form object without required parts", version: "3.0.0",
			paths: "  /a:\n    post:\n      requestBody: {content: {application/x-www-form-urlencoded: {schema: {type: object, required: [amount, meta], " +
				"properties: {amount: {type: integer}, meta: {type: object}}}}}}\n" + ok,
			fields: []string{"amount"}, todo: "the required meta cannot be keyed as it is"},
		{name: "JSON preferred over form", version: "3.0.0",
			paths: "  /a:\n    post:\n      requestBody:\n        content:\n" +
				"          application/x-www-form-urlencoded: {schema: {type: object, required: [f], properties: {f: {type: string}}}}\n" +
				"          application/json; charset=utf-8: {schema: {type: object, required: [j], properties: {j: {type: string}}}}\n" + ok,
			fields: []string{"j"}},
		{name: "octet stream", version: "3.0.0",
			paths: "  /a:\n    put:\n      requestBody: {content: {application/octet-stream: {schema: {type: string, format: binary}}}}\n" + ok,
			todo:  "reads neither as JSON nor as a form"},
		{name: "path-level header overridden by the operation", version: "3.0.0",
			paths: "  /a:\n    parameters: [{name: Idempotency-Key, in: header, schema: {type: string}}]\n    post:\n" +
				"      parameters: [{name: idempotency-key, in: header, description: the operation's own, schema: {type: string}}]\n" + ok,
			native: "Idempotency-Key"},
		{name: "header by ref", version: "3.1.0",
			paths:      "  /a:\n    post:\n      parameters: [{$ref: '#/components/parameters/I'}]\n" + ok,
			components: "  parameters:\n    I: {name: X-Idempotency-Token, in: header, schema: {type: string}}\n",
			native:     "X-Idempotency-Token"},
		{name: "header beats body field", version: "3.0.0",
			paths: "  /a:\n    post:\n      parameters: [{name: Idempotency-Key, in: header, schema: {type: string}}]\n" +
				"      requestBody: {content: {application/json: {schema: {type: object, required: [n], properties: {n: {type: string}, idempotency_key: {type: string}}}}}}\n" + ok,
			fields: []string{"n"}, native: "Idempotency-Key"},
		{name: "request body by ref with required body field", version: "3.0.0",
			paths: "  /a:\n    post:\n      requestBody: {$ref: '#/components/requestBodies/R'}\n" + ok,
			components: "  requestBodies:\n    R: {content: {application/json: {schema: {type: object, required: [idempotency_key, amount], " +
				"properties: {idempotency_key: {type: string}, amount: {type: integer}}}}}}\n",
			fields: []string{"amount"}, native: "idempotency_key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Skeleton(oaDoc(tc.version, tc.paths, tc.components), SkeletonOptions{})
			if err != nil {
				t.Fatal(err)
			}
			api, err := rules.Parse("cases.yaml", out)
			if err != nil {
				t.Fatal(err)
			}
			if len(api.Routes) != 1 {
				t.Fatalf("%d routes, want 1:\n%s", len(api.Routes), out)
			}
			r := api.Routes[0]
			if !slices.Equal(r.Key.Fields, tc.fields) {
				t.Errorf("key.fields %q, want %q\n%s", r.Key.Fields, tc.fields, out)
			}
			native := ""
			if ni := r.NativeIdempotency; ni != nil {
				native = ni.Header + ni.Body
			}
			if native != tc.native {
				t.Errorf("native_idempotency %q, want %q", native, tc.native)
			}
			if tc.todo != "" && !strings.Contains(string(out), TodoMarker) || !strings.Contains(todoText(out), tc.todo) {
				t.Errorf("no TODO holds %q:\n%s", tc.todo, out)
			}
			if !strings.Contains(string(out), "  # "+tc.note) {
				t.Errorf("no comment holds %q:\n%s", tc.note, out)
			}
		})
	}
}

// todoText is the text of every TODO comment of a skeleton.
func todoText(out []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(out)) {
		if _, todo, ok := strings.Cut(line, TodoMarker); ok {
			b.WriteString(todo)
		}
	}
	return b.String()
}

// Names and summaries with line breaks and control characters stay inside
// their comments, and the file still loads.
func TestSkeletonHostileText(t *testing.T) {
	paths := "  /a:\n    post:\n      summary: \"one\\ntwo: x\\r\\n- three \\u0007 #four\"\n      operationId: \"op\\nname: evil\"\n" +
		"      requestBody: {content: {application/json: {schema: {type: object, properties: {\"x\\ny\": {type: string}, \"a\\u0000b\": {type: string}}}}}}\n" +
		"      responses: {'200': {description: ok}}\n"
	out, err := Skeleton(oaDoc("3.0.0", paths, ""), SkeletonOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse("hostile.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(api.Routes) != 1 || api.Routes[0].Name != "op_name__evil" {
		t.Errorf("routes %v:\n%s", api.Routes, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' && r != '\n' }) {
			t.Errorf("control character in %q", line)
		}
	}
}
