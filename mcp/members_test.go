package mcp

import (
	"encoding/json"
	"testing"
)

// A tools/call as agents send it: the message, then its params.
var benchCall = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"create_invoice","arguments":{"customer":"cus_42","amount":1999,"currency":"eur","lines":[{"sku":"a","qty":1},{"sku":"b","qty":2}]},"_meta":{"progressToken":"t-17"}}}`)

func BenchmarkMembers(b *testing.B) {
	for _, bm := range []struct {
		name  string
		split func([]byte) (map[string]json.RawMessage, error)
	}{
		{"walk", members}, {"decoder", decodeMembers},
	} {
		split := bm.split
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ms, err := split(benchCall)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := split(ms["params"]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
