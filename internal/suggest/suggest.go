// Package suggest proposes the known name closest to a misspelt one, for
// "did you mean" hints in configuration and rule-file errors.
package suggest

import "fmt"

// Closest returns the name in known nearest to got by edit distance, or ""
// when none is within maxDist edits. A name is also too far when the edits
// make up more than half of got, so that short words do not match anything.
// Ties go to the earlier name in known.
func Closest(got string, known []string, maxDist int) string {
	best, bestDist := "", maxDist+1
	for _, k := range known {
		if d := Distance(got, k); d < bestDist && 2*d <= len(got) {
			best, bestDist = k, d
		}
	}
	return best
}

// Hint is ` (did you mean "x"?)` for the closest name within two edits, or
// "" when there is none.
func Hint(got string, known []string) string {
	if best := Closest(got, known, 2); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// Distance is the Levenshtein distance between a and b, counted in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
