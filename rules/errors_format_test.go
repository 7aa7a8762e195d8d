package rules

import "testing"

// TestRenderErrorEscapes: a value cannot break out of its JSON string.
func TestRenderErrorEscapes(t *testing.T) {
	f := ErrorFormat{Style: ErrorsJSON, Template: `{"error":{"code":"{{type}}","message":"{{ detail }}","key":"{{key}}"}}`}
	got := string(f.RenderError(map[string]string{"type": "t", "detail": `a "quoted"` + "\n" + `","x":"y`, "key": "k"}))
	want := `{"error":{"code":"t","message":"a \"quoted\"\n\",\"x\":\"y","key":"k"}}`
	if got != want {
		t.Fatalf("RenderError = %s\nwant %s", got, want)
	}
	if _, msg := checkErrorTemplate(f.Template); msg != "" {
		t.Fatal(msg)
	}
	// {{status}} is a number: outside quotes it keeps the document JSON.
	n := ErrorFormat{Style: ErrorsJSON, Template: `{"status":{{status}},"s":"{{status}}"}`}
	if _, msg := checkErrorTemplate(n.Template); msg != "" {
		t.Fatal(msg)
	}
	if got := string(n.RenderError(map[string]string{"status": "409"})); got != `{"status":409,"s":"409"}` {
		t.Errorf("RenderError with status = %s", got)
	}
	if got := string(n.RenderError(map[string]string{"status": "4,0}"})); got != `{"status":0,"s":"0"}` {
		t.Errorf("RenderError with a status that is no number = %s", got)
	}
	for _, bad := range []string{`{"a":"{{code}}"}`, `{"a":{{detail}}}`, `["{{detail}}"]`, `{"a":"{{detail"}`} {
		if _, msg := checkErrorTemplate(bad); msg == "" {
			t.Errorf("checkErrorTemplate(%s) found nothing wrong", bad)
		} else {
			t.Logf("%s → %s", bad, msg)
		}
	}
}
