package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
		calls   int
		batch   bool
	}{
		{name: "call", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, calls: 1},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{name: "response", body: `{"jsonrpc":"2.0","id":"s1","result":{}}`},
		{name: "batch", body: ` [{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, calls: 1, batch: true},
		{name: "not JSON", body: `{"jsonrpc":`, wantErr: ErrParse},
		{name: "duplicate key", body: `{"jsonrpc":"2.0","id":1,"method":"a","method":"tools/call"}`, wantErr: ErrParse},
		{name: "no version", body: `{"id":1,"method":"ping"}`, wantErr: ErrInvalidRequest},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantErr: ErrInvalidRequest},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, wantErr: ErrInvalidRequest},
		{name: "call as notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`, wantErr: ErrInvalidRequest},
		{name: "neither", body: `{"jsonrpc":"2.0","id":1}`, wantErr: ErrInvalidRequest},
		{name: "empty batch", body: `[]`, wantErr: ErrInvalidRequest},
		{name: "array of numbers", body: `[1]`, wantErr: ErrInvalidRequest},
		{name: "scalar", body: `3`, wantErr: ErrInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Parse([]byte(tc.body))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Parse() error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (b.Calls() != tc.calls || b.Batch != tc.batch) {
				t.Errorf("Parse() = %d calls, batch %v; want %d, %v", b.Calls(), b.Batch, tc.calls, tc.batch)
			}
		})
	}
}

func TestParseCall(t *testing.T) {
	tests := []struct {
		name, params string
		wantArgs     string
		cont         bool
		wantErr      error
	}{
		{name: "arguments", params: `{"name":"x","arguments":{"a":1},"_meta":{"progressToken":1}}`, wantArgs: `{"a":1}`},
		{name: "no arguments", params: `{"name":"x"}`, wantArgs: `{}`},
		{name: "null arguments", params: `{"name":"x","arguments":null}`, wantArgs: `{}`},
		{name: "continuation", params: `{"name":"x","arguments":{},"inputResponses":{"a":{}}}`, wantArgs: `{}`, cont: true},
		{name: "no name", params: `{"arguments":{}}`, wantErr: ErrInvalidParams},
		{name: "empty name", params: `{"name":""}`, wantErr: ErrInvalidParams},
		{name: "array arguments", params: `{"name":"x","arguments":[]}`, wantErr: ErrInvalidParams},
		{name: "params not an object", params: `[1]`, wantErr: ErrInvalidParams},
		{name: "duplicate name", params: `{"name":"x","name":"y"}`, wantErr: ErrInvalidParams},
		{name: "control character in name", params: `{"name":"x\u0000"}`, wantErr: ErrInvalidParams},
		{name: "name too long", params: `{"name":"` + strings.Repeat("x", 129) + `"}`, wantErr: ErrInvalidParams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCall(Message{ID: json.RawMessage(`7`), Method: MethodCallTool, Params: json.RawMessage(tc.params)})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ParseCall() error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (string(c.Arguments) != tc.wantArgs || c.Continuation != tc.cont || c.Name != "x") {
				t.Errorf("ParseCall() = %+v", c)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name, raw string
		want      Outcome
	}{
		{name: "result", raw: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, want: OutcomeResult},
		{name: "tool error", raw: `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, want: OutcomeToolError},
		{name: "input required", raw: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}`, want: OutcomeNotExecuted},
		{name: "invalid params", raw: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, want: OutcomeNotExecuted},
		{name: "unknown method", raw: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, want: OutcomeNotExecuted},
		{name: "internal error", raw: `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`, want: OutcomeUnknown},
		{name: "server error", raw: `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}`, want: OutcomeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseResponse([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Classify(); got != tc.want {
				t.Errorf("Classify() = %s, want %s", got, tc.want)
			}
		})
	}
}

// A replay carries the new request's id byte for byte, with its JSON type.
func TestWithID(t *testing.T) {
	r, err := ParseResponse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"T-1"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`2`, `"2"`, `"req-\u00e9"`, `1e3`, `-7`} {
		out := r.WithID(json.RawMessage(id))
		var got struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(out, &got); err != nil || string(got.ID) != id || !strings.Contains(string(got.Result), "T-1") {
			t.Errorf("WithID(%s) = %s", id, out)
		}
	}
}

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, ct, body string
		want           string
		wantErr        error
	}{
		{name: "json", ct: "application/json", body: `{"jsonrpc":"2.0","id":3,"result":{}}`, want: `{"jsonrpc":"2.0","id":3,"result":{}}`},
		{name: "sse after a notification and another id", ct: "text/event-stream",
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":{\"ok\":true}}\r\n\r\n",
			want: "{\"jsonrpc\":\"2.0\",\n\"id\":3,\"result\":{\"ok\":true}}"},
		{name: "sse with charset, no final blank line", ct: "text/event-stream; charset=utf-8", body: "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1,\"message\":\"m\"}}",
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}`},
		// Regression: a JSON answer was taken whatever its id.
		{name: "json, another id", ct: "application/json", body: `{"jsonrpc":"2.0","id":4,"result":{}}`, wantErr: ErrOtherResponse},
		{name: "json, the id as a string", ct: "application/json", body: `{"jsonrpc":"2.0","id":"3","result":{}}`, wantErr: ErrOtherResponse},
		{name: "json, no id", ct: "application/json", body: `{"jsonrpc":"2.0","result":{}}`, wantErr: ErrOtherResponse},
		{name: "json, a request", ct: "application/json", body: `{"jsonrpc":"2.0","id":3,"method":"ping"}`, wantErr: ErrOtherResponse},
		{name: "json, a batch", ct: "application/json", body: `[{"jsonrpc":"2.0","id":3,"result":{}}]`, wantErr: ErrOtherResponse},
		{name: "json, the same number spelt otherwise", ct: "application/json; charset=utf-8", body: ` {"jsonrpc":"2.0","id":3.0,"error":{"code":1,"message":"m"}}` + "\n",
			want: ` {"jsonrpc":"2.0","id":3.0,"error":{"code":1,"message":"m"}}` + "\n"},
		{name: "broken stream", ct: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"res", wantErr: ErrNoResponse},
		{name: "only notifications", ct: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n", wantErr: ErrNoResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadResponse(tc.ct, strings.NewReader(tc.body), []byte(`3`), 1<<20)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadResponse() error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Errorf("ReadResponse() = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ReadResponse("text/event-stream", strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), []byte(`3`), 50); err == nil {
		t.Error("ReadResponse() read an event larger than max")
	}
}

func TestHoldResult(t *testing.T) {
	h := Hold{Type: "urn:toolguard:awaiting-approval", Title: "Awaiting an operator's approval", Status: 409,
		Detail: "an operator must approve this call", Key: "abc123", RetryAfter: 30}
	var res struct {
		Result ToolResult `json:"result"`
		ID     json.RawMessage
	}
	if err := json.Unmarshal(h.Response(json.RawMessage(`"r-9"`), "close_ticket"), &res); err != nil {
		t.Fatal(err)
	}
	text := res.Result.Content[0].Text
	for _, want := range []string{"close_ticket", "Awaiting an operator's approval", "wait, then call again with the same arguments", "Step key: abc123"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q does not say %q", text, want)
		}
	}
	if !res.Result.IsError || res.Result.Meta[MetaProblem] == nil || string(res.ID) != `"r-9"` {
		t.Errorf("hold result = %+v", res)
	}
}

// A stream the server closed early tells where to resume it.
func TestReadResponseFromRecordsResumption(t *testing.T) {
	var st Stream
	body := "id: s1_0\nevent: prime\ndata:\n\nevent: close\nretry: 250\n\n"
	if _, err := ReadResponseFrom("text/event-stream", strings.NewReader(body), []byte(`1`), 1<<20, &st); !errors.Is(err, ErrNoResponse) {
		t.Fatalf("err = %v, want ErrNoResponse", err)
	}
	if st.LastEventID != "s1_0" || st.Retry.Milliseconds() != 250 {
		t.Errorf("stream = %+v, want last id s1_0 and retry 250ms", st)
	}
}

// Regression: the advice of an outcome-unknown hold said not to retry,
// while its detail (and the recovery) needs the same call again.
func TestHoldAdviceOutcomeUnknown(t *testing.T) {
	h := Hold{Type: "urn:toolguard:outcome-unknown", Title: "Sent, but no answer; outcome unknown", Status: 504,
		Detail: "the call was sent but its outcome is unknown", Key: "k"}
	text := h.Result("create_ticket").Content[0].Text
	if !strings.Contains(text, "call again with the same arguments") || strings.Contains(text, "do not retry") || !strings.Contains(text, "The call was sent") {
		t.Errorf("text = %q", text)
	}
}
