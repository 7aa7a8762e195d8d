package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// webhookSecret signs the deliveries of the tests here.
const webhookSecret = "whsec_e2e_0123456789abcdef"

// hookDelivery is one request a webhook receiver got.
type hookDelivery struct {
	eventID string
	sigErr  error
	payload struct {
		Type       string `json:"type"`
		Seq        uint64 `json:"seq"`
		Event      string `json:"event"`
		Key        string `json:"key"`
		API        string `json:"api"`
		Route      string `json:"route"`
		Hold       string `json:"hold"`
		Reason     string `json:"reason"`
		ConsoleURL string `json:"console_url"`
		KeyFields  []struct {
			Field, Value string
		} `json:"key_fields"`
	}
}

// hookReceiver is a webhook endpoint that checks every delivery's
// signature as docs/notifications.md tells receivers to, and answers 500
// until accept is set.
type hookReceiver struct {
	*httptest.Server
	accept atomic.Bool
	got    chan hookDelivery
}

func newHookReceiver(t *testing.T, ln net.Listener) *hookReceiver {
	r := &hookReceiver{got: make(chan hookDelivery, 1000)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := hookDelivery{eventID: req.Header.Get("Toolguard-Event-Id"),
			sigErr: verifySignature(req.Header.Get("Toolguard-Signature"), body, time.Now())}
		if err := json.Unmarshal(body, &d.payload); err != nil {
			d.sigErr = fmt.Errorf("body %s: %v", body, err)
		}
		if r.accept.Load() {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusInternalServerError)
		}
		r.got <- d
	}))
	if ln != nil {
		r.Listener.Close()
		r.Listener = ln
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// verifySignature checks a Toolguard-Signature header the way a receiver
// in any language does: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body>">, within 5 minutes.
func verifySignature(header string, body []byte, now time.Time) error {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("malformed signature header %q", header)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("signature timestamp %s is off by %s", ts, d)
	}
	m := hmac.New(sha256.New, []byte(webhookSecret))
	m.Write([]byte(ts + "." + string(body)))
	if want := hex.EncodeToString(m.Sum(nil)); !hmac.Equal([]byte(sig), []byte(want)) {
		return fmt.Errorf("signature %s does not match the body", sig)
	}
	return nil
}

// next waits for the receiver's next delivery and checks its signature.
func (r *hookReceiver) next(t *testing.T, what string) hookDelivery {
	t.Helper()
	select {
	case d := <-r.got:
		if d.sigErr != nil {
			t.Fatalf("%s: %v", what, d.sigErr)
		}
		return d
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no delivery within 30s", what)
		return hookDelivery{}
	}
}

// useWebhook configures webhook n of s to url, its secret in a file.
func (s *setup) useWebhook(t *testing.T, n int, url, format string) {
	t.Helper()
	secret := filepath.Join(s.dir, fmt.Sprintf("webhook-%d.secret", n))
	writeSecret(t, secret, webhookSecret+"\n")
	prefix := fmt.Sprintf("TOOLGUARD_NOTIFY_WEBHOOKS_%d_", n)
	s.env = append(s.env, prefix+"URL="+url, prefix+"SECRET_FILE="+secret, prefix+"FORMAT="+format)
}

// TestNotifyHoldSurvivesKill: a held step's notification is signed, is
// not lost when toolguard is killed before the receiver took it, and is
// delivered by the next process; the approval is notified too. On both
// journal backends.
func TestNotifyHoldSurvivesKill(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			up := newUpstream(t, false)
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), approvalRoute)})
			s.useBackend(t, backend)
			r := newHookReceiver(t, nil)
			s.useWebhook(t, 0, r.URL+"/hooks/toolguard", "json")
			s.env = append(s.env, "TOOLGUARD_NOTIFY_BACKOFF=50ms", "TOOLGUARD_NOTIFY_MAX_BACKOFF=200ms")
			p := s.start(t)

			resp, _ := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1","amount":5}`)
			key := resp.Header.Get("Toolguard-Key")
			if resp.StatusCode != http.StatusConflict || key == "" {
				t.Fatalf("held call: %d, key %q; want 409 awaiting approval", resp.StatusCode, key)
			}
			// The receiver answers 500: nothing is acknowledged when
			// toolguard is killed.
			first := r.next(t, "the hold's first attempt")
			pl := first.payload
			if pl.Type != "step.held" || pl.Event != "held" || pl.Key != key || pl.API != "billing" || pl.Route != "create_invoice" ||
				pl.Hold != "awaiting_approval" || pl.Reason == "" || first.eventID != strconv.FormatUint(pl.Seq, 10) {
				t.Fatalf("hold notification: event id %s, %+v", first.eventID, pl)
			}
			if !strings.HasPrefix(pl.ConsoleURL, p.adminURL+"/ui/") || !strings.HasSuffix(pl.ConsoleURL, "#/step/"+key) {
				t.Errorf("console_url %q, want %s/ui/#/step/%s", pl.ConsoleURL, p.adminURL, key)
			}
			if len(pl.KeyFields) != 1 || pl.KeyFields[0].Field != "customer" || pl.KeyFields[0].Value != `"c1"` {
				t.Errorf("key_fields %+v, want customer \"c1\"", pl.KeyFields)
			}
			p.kill()
			for len(r.got) > 0 { // attempts before the kill
				<-r.got
			}

			r.accept.Store(true)
			p = s.start(t)
			again := r.next(t, "the hold after the restart")
			if again.eventID != first.eventID || again.payload.Key != key || again.payload.Type != "step.held" {
				t.Fatalf("after the restart: event id %s %+v, want event %s again", again.eventID, again.payload, first.eventID)
			}

			if out, err := p.cli("review", "approve", key, "--admin", p.adminURL).CombinedOutput(); err != nil {
				t.Fatalf("review approve: %v\n%s", err, out)
			}
			settled := r.next(t, "the approval")
			for settled.eventID == first.eventID { // a redelivery of the hold is allowed
				settled = r.next(t, "the approval")
			}
			if sp := settled.payload; sp.Type != "step.settled" || sp.Event != "approved" || sp.Key != key || sp.Hold != "" || sp.Seq <= pl.Seq {
				t.Fatalf("settled notification: event id %s, %+v", settled.eventID, sp)
			}
			if v := metricValue(t, p, `toolguard_notify_deliveries_total{result="delivered"}`); v < 1 {
				t.Errorf("toolguard_notify_deliveries_total{result=\"delivered\"} = %v", v)
			}
		})
	}
}

// TestNotifyEgressRefused: a webhook aimed at toolguard's own admin
// listener, or at an address in egress.deny, is never delivered to:
// refused, counted and logged, while a webhook elsewhere gets the event.
func TestNotifyEgressRefused(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), approvalRoute)})
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminAddr := free.Addr().String()
	free.Close()
	s.args = append(s.args, "--admin-listen", adminAddr)
	// A receiver on 127.0.0.2, which egress.deny lists.
	denied, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	deniedHook := newHookReceiver(t, denied)
	deniedHook.accept.Store(true)
	good := newHookReceiver(t, nil)
	good.accept.Store(true)
	s.useWebhook(t, 0, "http://"+adminAddr+"/v1/steps", "json")
	s.useWebhook(t, 1, deniedHook.URL+"/hook", "slack")
	s.useWebhook(t, 2, good.URL+"/hook", "json")
	s.env = append(s.env, "TOOLGUARD_EGRESS_DENY=169.254.169.254/32,127.0.0.2/32")
	p := s.start(t)
	if p.adminURL != "http://"+adminAddr {
		t.Fatalf("admin listens on %s, want %s", p.adminURL, adminAddr)
	}

	resp, _ := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1","amount":5}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("held call: %d", resp.StatusCode)
	}
	if d := good.next(t, "the allowed webhook"); d.payload.Type != "step.held" {
		t.Fatalf("allowed webhook got %+v", d.payload)
	}
	refused := `toolguard_notify_deliveries_total{result="refused"}`
	eventually(t, refused, func() bool { return metricValue(t, p, refused) == 2 })
	logs := p.logs.String()
	for _, why := range []string{"toolguard does not proxy requests to its own listeners", "the address is in egress.deny (127.0.0.2/32)"} {
		if !strings.Contains(logs, why) {
			t.Errorf("no refusal logged with %q:\n%s", why, logs)
		}
	}
	if strings.Contains(logs, "/v1/steps\"") || strings.Contains(logs, "/hook\"") {
		t.Errorf("a webhook URL's path reached the log:\n%s", logs)
	}
	if n := len(deniedHook.got); n != 0 {
		t.Errorf("the denied receiver got %d requests", n)
	}
	if v := metricValue(t, p, `toolguard_notify_deliveries_total{result="failed"}`); v != 0 {
		t.Errorf("refusals were retried: %v failed attempts", v)
	}
}
