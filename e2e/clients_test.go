package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is what a client saw of one guarded call.
type answer struct {
	status   int
	outcome  string // Toolguard-Outcome
	replayed string // Idempotent-Replayed
	key      string // Toolguard-Key
	body     string
}

func answerOf(resp *http.Response) answer {
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return answer{status: resp.StatusCode, outcome: resp.Header.Get("Toolguard-Outcome"),
		replayed: resp.Header.Get("Idempotent-Replayed"), key: resp.Header.Get("Toolguard-Key"), body: string(b)}
}

// guardedUpstream starts an upstream (TLS or not) and a proxy whose rules
// guard its invoice route and, for TLS, trust its certificate.
func guardedUpstream(t *testing.T, tlsUpstream bool) (*upstream, *proc) {
	t.Helper()
	up := newUpstream(t, tlsUpstream)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	if tlsUpstream {
		s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
	}
	return up, s.start(t)
}

// clientEnv is a minimal environment for a client process: no proxy or
// CA variables but the ones given.
func clientEnv(t *testing.T, env ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
}

// curlPost posts body to url with curl, which finds the proxy and the CA
// where env and args say.
func curlPost(t *testing.T, env []string, url, body string, args ...string) answer {
	t.Helper()
	cmd := exec.Command("curl", append([]string{"-sS", "-i", "--suppress-connect-headers", "--max-time", "30",
		"-H", "Content-Type: application/json", "-H", "Authorization: Bearer k1", "--data-binary", body, url}, args...)...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl %s: %v\n%s", url, err, stderrOf(err))
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
	if err != nil {
		t.Fatalf("curl %s: read its answer: %v\n%s", url, err, out)
	}
	return answerOf(resp)
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// pythonPost is urllib with the proxy from http_proxy/https_proxy and an
// SSL context that trusts SSL_CERT_FILE, as an agent's tool would be.
const pythonPost = `
import json, os, ssl, sys, urllib.request
url, body = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, data=body.encode(), method="POST",
    headers={"Content-Type": "application/json", "Authorization": "Bearer k1"})
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
    json.dump({"status": r.status, "outcome": r.headers.get("Toolguard-Outcome") or "",
        "replayed": r.headers.get("Idempotent-Replayed") or "", "key": r.headers.get("Toolguard-Key") or "",
        "body": r.read().decode()}, sys.stdout)
`

func pythonCall(t *testing.T, env []string, url, body string) answer {
	t.Helper()
	cmd := exec.Command("python3", "-c", pythonPost, url, body)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python urllib %s: %v\n%s", url, err, stderrOf(err))
	}
	var a struct {
		Status                       int
		Outcome, Replayed, Key, Body string
	}
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("python urllib %s: %v\n%s", url, err, out)
	}
	return answer{status: a.Status, outcome: a.Outcome, replayed: a.Replayed, key: a.Key, body: a.Body}
}

// checkDuplicate checks a first call and its duplicate: sent once,
// answered twice alike, the second from the journal.
func checkDuplicate(t *testing.T, up *upstream, first, second answer) {
	t.Helper()
	if got := up.effects.Load(); got != 1 {
		t.Errorf("upstream effects = %d, want 1", got)
	}
	if first.status != 201 || second.status != 201 {
		t.Errorf("status = %d, %d; want 201, 201", first.status, second.status)
	}
	if first.outcome != "forwarded" || second.outcome != "replayed" || second.replayed != "true" {
		t.Errorf("outcomes = %q, %q (Idempotent-Replayed %q); want forwarded, replayed (true)", first.outcome, second.outcome, second.replayed)
	}
	if first.key == "" || first.key != second.key {
		t.Errorf("keys = %q, %q; want one key", first.key, second.key)
	}
	if first.body != second.body || !strings.Contains(first.body, `"id":"inv_1"`) {
		t.Errorf("bodies = %s, %s; want the first one twice", first.body, second.body)
	}
}

// TestClientTools runs real HTTP clients through the proxy as an agent's
// tools would: each sends one intent twice, as two processes with a
// different trace id (a retry after a crash).
func TestClientTools(t *testing.T) {
	tests := []struct {
		name string
		tool string
		tls  bool
		call func(t *testing.T, p *proc, url, body string) answer
	}{
		{name: "curl http_proxy", tool: "curl", call: func(t *testing.T, p *proc, url, body string) answer {
			// curl reads only the lowercase http_proxy (HTTP_PROXY is a CGI hazard).
			return curlPost(t, clientEnv(t, "http_proxy="+p.proxyURL.String()), url, body)
		}},
		{name: "curl HTTPS_PROXY cacert", tool: "curl", tls: true, call: func(t *testing.T, p *proc, url, body string) answer {
			return curlPost(t, clientEnv(t, "HTTPS_PROXY="+p.proxyURL.String()), url, body, "--cacert", p.caFile)
		}},
		{name: "python urllib http", tool: "python3", call: func(t *testing.T, p *proc, url, body string) answer {
			return pythonCall(t, clientEnv(t, "http_proxy="+p.proxyURL.String(), "SSL_CERT_FILE="+p.caFile), url, body)
		}},
		{name: "python urllib https", tool: "python3", tls: true, call: func(t *testing.T, p *proc, url, body string) answer {
			return pythonCall(t, clientEnv(t, "https_proxy="+p.proxyURL.String(), "SSL_CERT_FILE="+p.caFile), url, body)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				skipped.Skip(t, tc.tool, tc.tool+" is not installed")
			}
			up, p := guardedUpstream(t, tc.tls)
			first := tc.call(t, p, up.URL+"/v1/invoices", `{"customer":"c1","amount":100,"trace_id":"first"}`)
			second := tc.call(t, p, up.URL+"/v1/invoices", `{"amount":100,"customer":"c1","trace_id":"retry"}`)
			checkDuplicate(t, up, first, second)
		})
	}
}

// TestClientConnectTunnelPlainHTTP does what Node's undici does with a
// proxy (EnvHttpProxyAgent, axios): it sends CONNECT even for an http://
// URL and then speaks plain HTTP/1.1 inside the tunnel, keeping the
// connection alive between requests. Node 20's fetch reads no proxy
// variables, so its wire behaviour is emulated here.
func TestClientConnectTunnelPlainHTTP(t *testing.T) {
	up, p := guardedUpstream(t, false)
	conn, err := net.DialTimeout("tcp", p.proxyURL.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Connection: keep-alive\r\n\r\n", up.host(), up.host())
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("read CONNECT answer: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %s", up.host(), resp.Status)
	}

	var answers []answer
	for _, body := range []string{`{"customer":"c1","amount":100,"trace_id":"first"}`, `{"customer":"c1","amount":100,"trace_id":"retry"}`} {
		req, err := http.NewRequest(http.MethodPost, "http://"+up.host()+"/v1/invoices", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k1")
		req.Header.Set("Connection", "keep-alive")
		if err := req.Write(conn); err != nil { // origin-form, as inside any tunnel
			t.Fatalf("write request %d into the tunnel: %v", len(answers)+1, err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("read answer %d from the tunnel: %v", len(answers)+1, err)
		}
		if resp.Close {
			t.Errorf("answer %d closes the tunnel; keep-alive was asked for", len(answers)+1)
		}
		answers = append(answers, answerOf(resp))
	}
	checkDuplicate(t, up, answers[0], answers[1])
}

// TestClientGoKeepAlive makes 20 sequential guarded calls (10 intents,
// each twice) with one Go client, over plain HTTP and through a TLS
// tunnel: they all share one connection to the proxy, and the proxy
// reuses its upstream connection.
//
// The client sets its proxy with http.ProxyURL: http.ProxyFromEnvironment
// reads the same variables but never proxies loopback hosts such as the
// test upstream.
func TestClientGoKeepAlive(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			up, p := guardedUpstream(t, scheme == "https")
			var mu sync.Mutex
			upstreamConns := map[string]bool{}
			up.setHook(func(stage string, r *http.Request) bool {
				if stage == "before" {
					mu.Lock()
					upstreamConns[r.RemoteAddr] = true
					mu.Unlock()
				}
				return true
			})
			pemData, err := os.ReadFile(p.caFile)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(pemData)
			c := &http.Client{Timeout: 30 * time.Second, Transport: credentialed{&http.Transport{
				Proxy:           http.ProxyURL(p.proxyURL),
				TLSClientConfig: &tls.Config{RootCAs: roots},
			}}}

			newConns := 0
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
				if !info.Reused {
					newConns++
				}
			}}
			outcomes := map[string]int{}
			for i := range 20 {
				body := fmt.Sprintf(`{"customer":"c%d","amount":%d,"trace_id":"t%d"}`, i%10, 100+i%10, i)
				req, err := http.NewRequest(http.MethodPost, up.URL+"/v1/invoices", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				a := answerOf(resp)
				if a.status != 201 {
					t.Fatalf("call %d: status %d: %s", i, a.status, a.body)
				}
				outcomes[a.outcome]++
			}
			if got := up.effects.Load(); got != 10 {
				t.Errorf("upstream effects = %d, want 10", got)
			}
			if outcomes["forwarded"] != 10 || outcomes["replayed"] != 10 {
				t.Errorf("outcomes = %v, want 10 forwarded and 10 replayed", outcomes)
			}
			if newConns != 1 {
				t.Errorf("the client opened %d connections to the proxy for 20 sequential calls, want 1", newConns)
			}
			if len(upstreamConns) != 1 {
				t.Errorf("the proxy used %d upstream connections for 10 sequential calls, want 1 (keep-alive)", len(upstreamConns))
			}
		})
	}
}
