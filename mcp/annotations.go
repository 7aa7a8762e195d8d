package mcp

import "encoding/json"

// Annotations are the hints a server gives about a tool in tools/list.
// They come from the server and are only as trustworthy as it is.
type Annotations struct {
	// ReadOnly and Destructive are nil when the server left them out.
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
}

// ToolAnnotations reads the annotations of every tool of a tools/list
// result, by tool name.
func ToolAnnotations(result json.RawMessage) map[string]Annotations {
	var r struct {
		Tools []struct {
			Name        string      `json:"name"`
			Annotations Annotations `json:"annotations"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	out := make(map[string]Annotations, len(r.Tools))
	for _, t := range r.Tools {
		if t.Name != "" {
			out[t.Name] = t.Annotations
		}
	}
	return out
}
