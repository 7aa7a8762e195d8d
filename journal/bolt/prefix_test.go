package bolt

import (
	"reflect"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

func TestKeysWithPrefix(t *testing.T) {
	b := mustOpen(t)
	for _, k := range []string{"ab01", "ab02", "ab10", "abc0", "b000", "a"} {
		mustApply(t, b, k, put(journal.Step{Key: k, API: "api", Route: "r", Status: journal.StatusPrepared}))
	}
	tests := []struct {
		name   string
		prefix string
		limit  int
		want   []string
	}{
		{name: "unique", prefix: "ab1", limit: 2, want: []string{"ab10"}},
		{name: "ambiguous, limited", prefix: "ab0", limit: 2, want: []string{"ab01", "ab02"}},
		{name: "limit bounds the walk", prefix: "ab", limit: 3, want: []string{"ab01", "ab02", "ab10"}},
		{name: "whole key", prefix: "b000", limit: 2, want: []string{"b000"}},
		{name: "a key that is a prefix of none else", prefix: "abc", limit: 5, want: []string{"abc0"}},
		{name: "shorter key first", prefix: "a", limit: 2, want: []string{"a", "ab01"}},
		{name: "none", prefix: "c", limit: 2, want: nil},
		{name: "past the last key", prefix: "zz", limit: 2, want: nil},
		{name: "empty prefix matches nothing", prefix: "", limit: 2, want: nil},
		{name: "zero limit means one", prefix: "ab", limit: 0, want: []string{"ab01"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.KeysWithPrefix(tc.prefix, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("KeysWithPrefix(%q, %d) = %q, want %q", tc.prefix, tc.limit, got, tc.want)
			}
		})
	}
}

func TestKeysWithPrefixClosed(t *testing.T) {
	b, err := Open(tempPath(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := b.KeysWithPrefix("ab", 2); err == nil {
		t.Error("KeysWithPrefix on a closed journal: no error")
	}
}
