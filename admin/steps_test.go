package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// Regression: GET /v1/steps?limit=1000000000 built a 23 MB answer. A
// list answer now holds at most MaxListLimit steps and, when more match,
// a next cursor; following the cursors yields every step exactly once.
func TestListStepsCappedWithCursor(t *testing.T) {
	const n = MaxListLimit + MaxListLimit/2 + 7
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%064x", i)
		if _, err := j.Apply(context.Background(), k, func(*journal.Step) (journal.Change, error) {
			return journal.Change{Step: journal.Step{Key: k, API: "billing", Route: "create", Status: journal.StatusPrepared}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(Options{Journal: j, InsecureNoAuth: true}))
	defer srv.Close()
	list := func(query string) (steps []StepView, next string, status int) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/steps?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Steps []StepView `json:"steps"`
			Next  string     `json:"next"`
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return out.Steps, out.Next, resp.StatusCode
	}

	for _, q := range []string{"limit=1000000000", "", "limit=0"} {
		steps, next, _ := list(q)
		if len(steps) != MaxListLimit || next == "" {
			t.Errorf("?%s: %d steps, next %q; want %d and a cursor", q, len(steps), next, MaxListLimit)
		}
	}
	seen := map[string]bool{}
	pages := 0
	for q := "limit=600"; ; pages++ {
		steps, next, status := list(q)
		if status != http.StatusOK {
			t.Fatalf("?%s: status %d", q, status)
		}
		for _, s := range steps {
			if seen[s.Key] {
				t.Errorf("step %s listed twice", s.Key)
			}
			seen[s.Key] = true
		}
		if next == "" {
			break
		}
		q = "limit=600&cursor=" + next
	}
	if len(seen) != n || pages != 2 {
		t.Errorf("cursors gave %d steps in %d pages after the first, want %d in 2", len(seen), pages, n)
	}
	if steps, next, _ := list("limit=10"); len(steps) != 10 || next == "" {
		t.Errorf("limit=10: %d steps, next %q", len(steps), next)
	}
	if _, _, status := list("cursor=-1"); status != http.StatusBadRequest {
		t.Errorf("cursor=-1: status %d, want 400", status)
	}
	// The client follows the cursors up to the limit asked for.
	c := &Client{BaseURL: srv.URL}
	for _, limit := range []int{0, MaxListLimit + 10, 10} {
		want := limit
		if limit == 0 {
			want = n
		}
		if steps, err := c.Steps(context.Background(), journal.Filter{Limit: limit}); err != nil || len(steps) != want {
			t.Errorf("Client.Steps(limit %d): %d steps, %v; want %d", limit, len(steps), err, want)
		}
	}
}
