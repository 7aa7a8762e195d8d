package mcp

import "encoding/json"

func jsonNumber(b []byte, f *float64) bool { return json.Unmarshal(b, f) == nil }
