package postgres

import "fmt"

// KeysWithPrefix returns the keys of steps that start with prefix, in key
// order, at most limit of them (limit 0 or less means 1), as
// bolt.Journal.KeysWithPrefix does. Keys are a few dozen hex digits, and
// this is an operator's query, so a scan of the table is acceptable.
// An empty prefix matches nothing.
func (j *Journal) KeysWithPrefix(prefix string, limit int) ([]string, error) {
	if prefix == "" {
		return nil, nil
	}
	op := "find keys with prefix " + prefix
	if err := j.begin(op); err != nil {
		return nil, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	rows, err := j.pool.Query(ctx, "SELECT key FROM steps WHERE starts_with(key, $1) ORDER BY key LIMIT $2",
		prefix, max(limit, 1))
	if err != nil {
		return nil, j.fault(op, err, false)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, j.fault(op, err, false)
	}
	return keys, nil
}
