package rules

// This file parses a route's native_idempotency: where the provider
// takes an idempotency key.

func (d *decoder) nativeIdempotency(e entry) *NativeIdempotency {
	fs, ok := d.mapping(e.val, "native_idempotency", "header", "body", "ttl", "length")
	if !ok {
		return nil
	}
	h, hasHeader := fs["header"]
	b, hasBody := fs["body"]
	ni := &NativeIdempotency{}
	switch {
	case hasHeader && hasBody:
		d.errorf(b.node, "native_idempotency: header and body are mutually exclusive")
	case hasHeader:
		ni.Header = d.headerName(h, "native_idempotency.header")
	case hasBody:
		if ni.Body, ok = d.str(b.val, "native_idempotency.body"); ok && ni.Body == "" {
			d.errorf(b.val, "native_idempotency.body: empty field name")
		}
	default:
		d.errorf(e.node, "native_idempotency: want header or body")
	}
	if x, ok := fs["ttl"]; ok {
		ni.TTL = d.duration(x, "native_idempotency.ttl")
	}
	if x, ok := fs["length"]; ok {
		ni.Length = d.keyLength(x)
	}
	return ni
}

// minNativeLength is the shortest native_idempotency.length: 32 hex
// characters are 128 bits of the key, still collision-free in practice.
const minNativeLength = 32

// keyLength parses native_idempotency.length: 32 to 64 characters of the
// 64-character hex key.
func (d *decoder) keyLength(e entry) int {
	n, ok := d.integer(e.val, "native_idempotency.length")
	if !ok {
		return 0
	}
	if n < minNativeLength || n > 64 {
		d.errorf(e.val, "native_idempotency.length: %d out of range (want %d-64: the key is 64 hex characters)", n, minNativeLength)
		return 0
	}
	return n
}
