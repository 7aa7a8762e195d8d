package rules

import "github.com/tidwall/gjson"

// MissingFields returns the key fields of r that none of docs contains;
// docs are request bodies in canonical form (Intent.Doc). A field no sample
// holds is most often a typo or a path into the wrong shape of body, and
// would make every request of the route share one key.
func (r *Route) MissingFields(docs [][]byte) []string {
	var missing []string
	for _, f := range r.Key.Fields {
		found := false
		for _, d := range docs {
			if gjson.GetBytes(d, f).Exists() {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, f)
		}
	}
	return missing
}
