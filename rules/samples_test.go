package rules

import (
	"slices"
	"testing"
)

func TestMissingFields(t *testing.T) {
	r := &Route{Key: KeySpec{Fields: []string{"customer", "lines.#.sku", "metadata.order_id", "metadata[order_id]"}}}
	docs := [][]byte{[]byte(`{"customer":"c","lines":[{"sku":"a"}]}`), []byte(`{"metadata[order_id]":"o1"}`)}
	got := r.MissingFields(docs)
	if want := []string{"metadata.order_id"}; !slices.Equal(got, want) {
		t.Fatalf("MissingFields = %v, want %v", got, want)
	}
	if got := r.MissingFields(nil); len(got) != 4 {
		t.Fatalf("with no samples every field is missing, got %v", got)
	}
}
