package rules

import (
	"strings"
	"testing"
)

func TestContainsKeyReference(t *testing.T) {
	const head = `
api: mail
hosts: [mail.example.com]
routes:
  - name: send
    match: POST /messages
    effect: irreversible
    key: {fields: [to]}
`
	tests := []struct {
		name, rest, wantErr string
	}{
		{name: "lookup found may name the key", rest: `
    lookup:
      request: GET https://mail.example.com/events
      found: {status: 200, contains: '"toolguard_key":"{{key}}"'}
      absent: {status: 200, body: {"items.#": "0"}}
`},
		{name: "another reference is refused", rest: `
    lookup:
      request: GET https://mail.example.com/events
      found: {status: 200, contains: '{{body.to}}'}
`, wantErr: "lookup.found.contains: only {{key}} may be referenced"},
		{name: "outside a lookup it is refused", rest: `
    operation_id: body:id
    verify:
      request: GET https://mail.example.com/messages/{{operation_id}}
      expect: {status: 200, contains: '{{key}}'}
      within: 1m
`, wantErr: "verify.expect.contains: templates are allowed only in lookup.found and lookup.absent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, err := Parse("mail.yaml", []byte(head+tc.rest))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Parse error = %v, want %q", err, tc.wantErr)
			case tc.wantErr == "":
				l := api.Routes[0].Lookup
				if got := l.Found.Bind("abc").Contains; got != `"toolguard_key":"abc"` {
					t.Errorf("Bind = %q", got)
				}
				if l.Absent.Bind("abc") != l.Absent {
					t.Errorf("Bind copied an expectation without references")
				}
			}
		})
	}
}
