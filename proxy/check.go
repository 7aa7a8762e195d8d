package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// CheckHost is a name that toolguard answers itself, over HTTP and HTTPS,
// without dialing anything: `toolguard doctor` calls it through the proxy
// to prove that a client uses the proxy and trusts toolguard's CA. The
// .invalid top-level domain never resolves (RFC 2606), so a client that
// bypasses the proxy fails instead of reaching someone else.
const CheckHost = "toolguard.invalid"

// HeaderCheck marks the check host's answers.
const HeaderCheck = "Toolguard-Check"

// isCheckHost reports whether host (with or without a port) is CheckHost.
func isCheckHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), CheckHost)
}

// checkResponse answers a request to the check host: 200 with the
// proxy's clock, so a caller can also compare clocks.
func (s *Server) checkResponse(req *http.Request) *http.Response {
	now := s.now().UTC()
	body, _ := json.Marshal(map[string]string{"toolguard": "ok", "scheme": req.URL.Scheme, "time": now.Format(time.RFC3339Nano)})
	resp := &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Cache-Control", "no-store")
	resp.Header.Set("Date", now.Format(http.TimeFormat))
	resp.Header.Set(HeaderCheck, "ok")
	return resp
}
