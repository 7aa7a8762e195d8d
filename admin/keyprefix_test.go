package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

func TestAdminStepByKeyPrefix(t *testing.T) {
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	unique := "c0ffee" + strings.Repeat("0", 58)
	twinA, twinB := "abcd01"+strings.Repeat("0", 58), "abcd02"+strings.Repeat("0", 58)
	for _, k := range []string{unique, twinA, twinB} {
		_, err := j.Apply(context.Background(), k, func(*journal.Step) (journal.Change, error) {
			return journal.Change{Step: journal.Step{Key: k, API: "billing", Route: "create", Status: journal.StatusPrepared}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(Options{Journal: j, InsecureNoAuth: true}))
	defer srv.Close()

	tests := []struct {
		name       string
		key        string
		wantStatus int
		wantKey    string   // the step answered, for 200
		wantDetail []string // substrings of the problem's detail
	}{
		{name: "full key", key: unique, wantStatus: 200, wantKey: unique},
		{name: "unique prefix", key: "c0ff", wantStatus: 200, wantKey: unique},
		{name: "ambiguous prefix", key: "abcd", wantStatus: 409, wantDetail: []string{"key prefix abcd is ambiguous", twinA, twinB}},
		{name: "longer prefix resolves", key: "abcd02", wantStatus: 200, wantKey: twinB},
		{name: "no match", key: "dead", wantStatus: 404},
		{name: "too short to expand", key: "c0f", wantStatus: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/v1/steps/" + tc.key)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			var body struct {
				Key    string `json:"key"`
				Type   string `json:"type"`
				Detail string `json:"detail"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if tc.wantKey != "" && body.Key != tc.wantKey {
				t.Errorf("key %q, want %q", body.Key, tc.wantKey)
			}
			for _, d := range tc.wantDetail {
				if !strings.Contains(body.Detail, d) {
					t.Errorf("detail %q does not contain %q", body.Detail, d)
				}
			}
			if tc.wantStatus == 409 && body.Type != "urn:toolguard:admin:ambiguous-key" {
				t.Errorf("type %q, want urn:toolguard:admin:ambiguous-key", body.Type)
			}
		})
	}
}
