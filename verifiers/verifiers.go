package verifiers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/rules"
)

// Answer is a three-valued reply.
type Answer uint8

const (
	// Unknown: the system could not be asked, or its reply matched no
	// expectation.
	Unknown Answer = iota
	// Yes: found (lookup) or visible (verification).
	Yes
	// No: absent (lookup) or not visible yet (verification).
	No
)

var answerNames = [...]string{"unknown", "yes", "no"}

func (a Answer) String() string { return answerNames[a] }

// Result is one answer with what supports it. Evidence names the request
// and the status, never the body.
type Result struct {
	Answer      Answer
	OperationID string
	Status      int
	Evidence    string
	// Recovered is the part of a found lookup's answer that the rule's
	// lookup.answer names, to answer the agent with; nil when none.
	Recovered []byte
	// Body is the answer of a Check that said No; nil otherwise.
	Body []byte
}

// Client sends lookups and probes. It follows no redirect: a 3xx is an
// answer like any other (matching neither found nor absent, it is
// unknown), and the caller's credential headers go to the rule's URL only,
// never to a redirect's target.
type Client struct {
	// Transport sends requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds one request; zero means 10s.
	Timeout time.Duration
	// MaxBody bounds the response body read; a larger one is unknown.
	// Zero means 1 MiB.
	MaxBody int64
}

// Lookup asks whether a call took effect: found → Yes, absent → No,
// anything else → Unknown. A paged lookup (l.Next) reads pages while the
// effect is not found and the answer names a next page; running out of
// l.Next.Pages with pages left is Unknown, never absent.
func (c *Client) Lookup(ctx context.Context, l *rules.Lookup, v rules.Values, creds http.Header) Result {
	rq := l.Request
	for page := 1; ; page++ {
		status, body, ev, err := c.do(ctx, rq, v, creds)
		if err != nil {
			return Result{Answer: Unknown, Evidence: ev + ": " + err.Error()}
		}
		if l.Found != nil && l.Found.Bind(v.Key).Match(status, body) {
			r := Result{Answer: Yes, Status: status, OperationID: l.OperationID.Extract(nil, body)}
			r.Evidence = fmt.Sprintf("%s → %d: found%s", ev, status, pageNote(page))
			r.Recovered = recovered(l.Answer, body)
			return r
		}
		cursor, more := nextPage(l.Next, body)
		switch {
		case more && page >= l.Next.Pages:
			return Result{Answer: Unknown, Status: status, Evidence: fmt.Sprintf("%s → %d: not found in %d pages, and more remain", ev, status, page)}
		case more:
			rq = withQuery(rq, l.Next.Param, cursor)
			continue
		case l.Absent != nil && l.Absent.Bind(v.Key).Match(status, body):
			return Result{Answer: No, Status: status, Evidence: fmt.Sprintf("%s → %d: absent%s", ev, status, pageNote(page))}
		}
		return Result{Status: status, Evidence: fmt.Sprintf("%s → %d: matched neither found nor absent", ev, status)}
	}
}

func pageNote(page int) string {
	if page == 1 {
		return ""
	}
	return fmt.Sprintf(" (page %d)", page)
}

// recovered selects the part of a lookup's answer to answer the agent
// with; nil when the rule names none or the path selects nothing.
func recovered(a *rules.RecoveredAnswer, body []byte) []byte {
	if a == nil {
		return nil
	}
	if a.Body == "" {
		return append([]byte(nil), body...)
	}
	res := gjson.GetBytes(body, a.Body)
	if !res.Exists() {
		return nil
	}
	return []byte(res.Raw)
}

// nextPage reports the cursor of the page after this one, if any.
func nextPage(p *rules.Pagination, body []byte) (string, bool) {
	if p == nil {
		return "", false
	}
	if p.HasMore != "" && !gjson.GetBytes(body, p.HasMore).Bool() {
		return "", false
	}
	c := gjson.GetBytes(body, p.Cursor)
	if !c.Exists() || c.Type == gjson.Null || c.String() == "" {
		return "", false
	}
	return c.String(), true
}

// withQuery is rq with query parameter name set to value on every page.
func withQuery(rq rules.Request, name, value string) rules.Request {
	out := rq
	out.Query = append(append([][2]string(nil), rq.Query...), [2]string{name, value})
	return out
}

// Probe asks whether a committed effect is visible: Yes when the answer
// meets the expectation, No otherwise, Unknown when it could not be asked.
func (c *Client) Probe(ctx context.Context, vr *rules.Verify, v rules.Values, creds http.Header) Result {
	status, body, ev, err := c.do(ctx, vr.Request, v, creds)
	if err != nil {
		return Result{Answer: Unknown, Evidence: ev + ": " + err.Error()}
	}
	if vr.Expect.Match(status, body) {
		return Result{Answer: Yes, Status: status, Evidence: fmt.Sprintf("%s → %d: visible", ev, status)}
	}
	return Result{Answer: No, Status: status, Evidence: fmt.Sprintf("%s → %d: not as expected", ev, status)}
}

// Check asks whether a precondition holds (verify.before): Yes when the
// answer meets the expectation; No when it does not and is a definitive
// answer about the thing (2xx, 404 or 410); Unknown when it could not be
// asked or the answer says nothing about the thing (401, 403, 429, any
// other 4xx, 3xx or 5xx: the check was refused, not answered). A No
// carries the answer's body in Body, in memory only.
func (c *Client) Check(ctx context.Context, ch *rules.Check, v rules.Values, creds http.Header) Result {
	status, body, ev, err := c.do(ctx, ch.Request, v, creds)
	if err != nil {
		return Result{Answer: Unknown, Evidence: ev + ": " + err.Error()}
	}
	if ch.Expect.Match(status, body) {
		return Result{Answer: Yes, Status: status, Evidence: fmt.Sprintf("%s → %d: as expected", ev, status)}
	}
	if !definitive(status) {
		return Result{Answer: Unknown, Status: status, Evidence: fmt.Sprintf("%s → %d: not an answer about the thing", ev, status)}
	}
	return Result{Answer: No, Status: status, Body: body, Evidence: fmt.Sprintf("%s → %d: not as expected", ev, status)}
}

// definitive reports whether a check's answer speaks about the thing
// checked: a 2xx describes it, 404 and 410 say it is not there.
func definitive(status int) bool {
	return status >= 200 && status < 300 || status == http.StatusNotFound || status == http.StatusGone
}

var errTooLarge = errors.New("response larger than the verifier's limit")

// do sends one templated request. ev describes it without query or body.
func (c *Client) do(ctx context.Context, rq rules.Request, v rules.Values, creds http.Header) (status int, body []byte, ev string, err error) {
	raw, err := rq.URL.Expand(v, true)
	ev = rq.Method + " " + rq.URL.String()
	if err != nil {
		return 0, nil, ev, fmt.Errorf("expand request: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return 0, nil, ev, fmt.Errorf("parse request URL: %w", err)
	}
	if len(rq.Query) > 0 {
		q := u.Query()
		for _, kv := range rq.Query {
			q.Set(kv[0], kv[1])
		}
		u.RawQuery = q.Encode()
	}
	ev = rq.Method + " " + u.Scheme + "://" + u.Host + u.Path
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rq.Method, u.String(), nil)
	if err != nil {
		return 0, nil, ev, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range creds {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	// A RoundTripper, not an http.Client: a redirect is not followed, so
	// the credential headers set above reach no other origin.
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, nil, ev, fmt.Errorf("send: %w", err)
	}
	defer resp.Body.Close()
	body, err = readLimited(resp.Body, c.MaxBody)
	if err != nil {
		return resp.StatusCode, nil, ev, err
	}
	return resp.StatusCode, body, ev, nil
}

func readLimited(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = 1 << 20
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// CredentialHeaders picks the headers a lookup or probe reuses from the
// triggering request: the API's credential headers that it carries, or
// Authorization when the API names none. They are held in memory only.
func CredentialHeaders(api *rules.API, h http.Header) http.Header {
	names := []string{"Authorization"}
	if hs := api.CredentialHeaders(); len(hs) > 0 {
		names = hs
	}
	out := http.Header{}
	for _, name := range names {
		if vs := h.Values(name); len(vs) > 0 {
			out[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
		}
	}
	return out
}
