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
	for _, bad := range []string{`{"a":"{{status}}"}`, `{"a":{{detail}}}`, `["{{detail}}"]`, `{"a":"{{detail"}`} {
		if _, msg := checkErrorTemplate(bad); msg == "" {
			t.Errorf("checkErrorTemplate(%s) found nothing wrong", bad)
		} else {
			t.Logf("%s → %s", bad, msg)
		}
	}
}
