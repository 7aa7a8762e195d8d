package postgres

import (
	"regexp"
	"strconv"
	"testing"
)

// TestLeanStatements checks that each lean statement takes exactly the
// arguments lean hands it: PostgreSQL refuses a parameter it cannot type,
// and one the statement does not reference.
func TestLeanStatements(t *testing.T) {
	q := newStatements()
	full := make([]any, 36)
	for i := range full {
		full[i] = i + 1
	}
	for _, tc := range []struct {
		name, full string
		args       []any
		want       string
	}{
		{"insert", q.insert, full[:35], q.leanInsert},
		{"update", q.update, full[:35], q.leanUpdate},
		{"hinted", q.updateHinted, full, q.leanUpdateHinted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maxParam(tc.full); got != len(tc.args) {
				t.Fatalf("full statement takes $1-$%d, the caller passes %d arguments", got, len(tc.args))
			}
			stmt, args := q.lean(tc.full, tc.args)
			if stmt != tc.want {
				t.Fatalf("lean(%s) picked another statement", tc.name)
			}
			if got := maxParam(stmt); got != len(args) {
				t.Fatalf("lean statement takes $1-$%d, lean passes %d arguments", got, len(args))
			}
			if tc.name == "hinted" && args[len(args)-1] != 36 {
				t.Fatalf("the hinted statement's updated_at is %v, want the full statement's $36", args[len(args)-1])
			}
		})
	}
}

func maxParam(stmt string) int {
	n := 0
	for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(stmt, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	return n
}
