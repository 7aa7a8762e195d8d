package proxy

import "net/http"

// testCredential is the caller's credential that test clients send.
const testCredential = "Bearer sk_test_tenant_1"

// credentialed adds a caller's credential (Authorization: testCredential)
// to requests that carry none, as a real agent does: a guarded call without
// one is refused. A test that sends none on purpose sets Authorization to
// "", which is removed before sending.
type credentialed struct{ rt http.RoundTripper }

func (c credentialed) RoundTrip(req *http.Request) (*http.Response, error) {
	vs, ok := req.Header["Authorization"]
	switch {
	case !ok:
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", testCredential)
	case len(vs) == 1 && vs[0] == "":
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return c.rt.RoundTrip(req)
}

// CloseIdleConnections closes the wrapped transport's idle connections.
func (c credentialed) CloseIdleConnections() {
	if ci, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
