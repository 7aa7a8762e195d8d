package bolt

import "bytes"

// KeysWithPrefix returns the keys of steps that start with prefix, in key
// order, at most limit of them (limit 0 or less means 1). It walks the key
// index from the prefix with one cursor seek, so its cost does not grow with
// the journal. Callers that let operators abbreviate keys, as git does,
// ask for two: one key means the prefix is unique, two that it is
// ambiguous. An empty prefix matches nothing.
func (b *Journal) KeysWithPrefix(prefix string, limit int) ([]string, error) {
	if prefix == "" {
		return nil, nil
	}
	limit = max(limit, 1)
	var keys []string
	err := b.view("find keys with prefix "+prefix, func(bk *buckets) error {
		p := []byte(prefix)
		c := bk.keys.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(keys) < limit; k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return nil
	})
	return keys, err
}
