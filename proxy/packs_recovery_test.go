package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// packSim is a provider simulator for the rule packs' recovery tests: the
// first write answers 500 after taking effect (an unknown outcome), and
// reads answer what the effect left behind.
type packSim struct {
	mu     sync.Mutex
	writes int
	reads  []string // method and URL of every read
	read   string   // the body reads answer
}

func (p *packSim) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status, body := 200, p.read
	if req.Method == http.MethodGet {
		p.reads = append(p.reads, req.Method+" "+req.URL.String())
	} else {
		p.writes++
		status, body = 500, `{"name":"INTERNAL_SERVER_ERROR"}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// loadPack returns the path and text of a pack's rule file.
func loadPack(t *testing.T, name string) (file, text string) {
	t.Helper()
	file = "../rules/packs/" + name + "/" + name + ".yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, string(data)
}

// The packs recover an interrupted money call past the provider's key
// lifetime through their lookup, never by a second send, and answer the
// agent with the provider's object and the original route's status.
func TestPacksRecoverThroughLookup(t *testing.T) {
	tests := []struct {
		name, pack, host, path, ctype, body string
		ttl                                 time.Duration // the pack's native key lifetime; 0: none
		read                                string        // the lookup's answer
		wantLookup                          string
		wantStatus                          int
		wantBody                            string
	}{
		{
			name: "paypal capture", pack: "paypal", host: "api-m.paypal.com",
			path: "/v2/checkout/orders/5O190127TN364715T/capture", ctype: "application/json", body: `{}`,
			ttl:        6 * time.Hour,
			read:       `{"id":"5O190127TN364715T","status":"COMPLETED"}`,
			wantLookup: "GET https://api-m.paypal.com/v2/checkout/orders/5O190127TN364715T",
			wantStatus: 201, wantBody: `{"id":"5O190127TN364715T","status":"COMPLETED"}`,
		},
		{
			name: "stripe payment intent", pack: "stripe", host: "api.stripe.com",
			path: "/v1/payment_intents", ctype: "application/x-www-form-urlencoded",
			body:       "amount=4200&currency=eur&metadata[order_id]=o77",
			ttl:        24 * time.Hour,
			read:       `{"object":"search_result","data":[{"id":"pi_1","object":"payment_intent","amount":4200}],"has_more":false}`,
			wantLookup: "GET https://api.stripe.com/v1/payment_intents/search?query=metadata['order_id']:'o77'+AND+amount:4200+AND+currency:'eur'",
			wantStatus: 200, wantBody: `{"id":"pi_1","object":"payment_intent","amount":4200}`,
		},
		{
			name: "square complete payment", pack: "square", host: "connect.squareup.com",
			path: "/v2/payments/GQTFp1ZlXdpoW4o6eGiZhbjosiDFf/complete", ctype: "application/json", body: `{}`,
			read:       `{"payment":{"id":"GQTFp1ZlXdpoW4o6eGiZhbjosiDFf","status":"COMPLETED"}}`,
			wantLookup: "GET https://connect.squareup.com/v2/payments/GQTFp1ZlXdpoW4o6eGiZhbjosiDFf",
			wantStatus: 200, wantBody: `{"payment":{"id":"GQTFp1ZlXdpoW4o6eGiZhbjosiDFf","status":"COMPLETED"}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := &packSim{read: tc.read}
			file, text := loadPack(t, tc.pack)
			p := newSetProxy(t, file, text, tc.host, sim, Options{})
			send := func() (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, p.baseURL+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Content-Type", tc.ctype)
				req.Header.Set("Authorization", "Bearer test")
				resp, err := p.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, string(b)
			}
			if r, b := send(); r.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("first call: %d %s, want 504 outcome-unknown", r.StatusCode, b)
			}
			p.clock.add(tc.ttl + time.Minute) // the provider has forgotten the key
			r, b := send()
			if r.StatusCode != tc.wantStatus || b != tc.wantBody || r.Header.Get(HeaderOutcome) != "recovered" {
				t.Fatalf("retry: %d %s %s, want %d %s recovered", r.StatusCode, r.Header.Get(HeaderOutcome), b, tc.wantStatus, tc.wantBody)
			}
			sim.mu.Lock()
			defer sim.mu.Unlock()
			if sim.writes != 1 {
				t.Fatalf("upstream writes = %d, want 1", sim.writes)
			}
			if len(sim.reads) != 1 || sim.reads[0] != tc.wantLookup {
				t.Fatalf("lookups = %q, want [%q]", sim.reads, tc.wantLookup)
			}
		})
	}
}

// keySim records the idempotency key of every write; the first answers 500
// (an unknown outcome), the next ones 200.
type keySim struct {
	mu   sync.Mutex
	keys []string
	get  func(*http.Request) string
}

func (k *keySim) RoundTrip(req *http.Request) (*http.Response, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, k.get(req))
	status := 200
	if len(k.keys) == 1 {
		status = 500
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"id":"x"}`)), Request: req}, nil
}

// The packs send the intent's key as the provider's idempotency key, in
// place of the fresh one an SDK mints per call: a retry that differs in
// that key, in field order and in fields outside the key re-sends the
// same provider key.
func TestPacksNativeKeyReplacesSDKKey(t *testing.T) {
	header := func(name string) func(*http.Request) string {
		return func(r *http.Request) string { return r.Header.Get(name) }
	}
	bodyField := func(r *http.Request) string {
		b, _ := io.ReadAll(r.Body)
		var v struct {
			Key string `json:"idempotency_key"`
		}
		_ = json.Unmarshal(b, &v)
		return v.Key
	}
	tests := []struct {
		name, pack, host, path, ctype string
		first, retry                  string
		sdkHeader                     string
		get                           func(*http.Request) string
		wantLen                       int
	}{
		{name: "stripe", pack: "stripe", host: "api.stripe.com", path: "/v1/payment_intents",
			ctype: "application/x-www-form-urlencoded", sdkHeader: "Idempotency-Key", get: header("Idempotency-Key"), wantLen: 64,
			first: "amount=4200&currency=eur&metadata[order_id]=o77",
			retry: "metadata[order_id]=o77&currency=eur&amount=4200&expand[]=latest_charge"},
		{name: "paypal", pack: "paypal", host: "api-m.paypal.com", path: "/v2/checkout/orders",
			ctype: "application/json", sdkHeader: "PayPal-Request-Id", get: header("PayPal-Request-Id"), wantLen: 64,
			first: `{"intent":"CAPTURE","purchase_units":[{"reference_id":"o1","amount":{"currency_code":"USD","value":"10.00"}}]}`,
			retry: `{"purchase_units":[{"amount":{"value":"10.00","currency_code":"USD"},"reference_id":"o1","description":"d"}],"intent":"CAPTURE"}`},
		{name: "square", pack: "square", host: "connect.squareup.com", path: "/v2/payments",
			ctype: "application/json", get: bodyField, wantLen: 45,
			first: `{"idempotency_key":"sdk-1","source_id":"cnon:1","amount_money":{"amount":100,"currency":"USD"},"reference_id":"o1"}`,
			retry: `{"reference_id":"o1","amount_money":{"currency":"USD","amount":100},"source_id":"cnon:1","idempotency_key":"sdk-2","note":"n"}`},
		{name: "adyen", pack: "adyen", host: "checkout-test.adyen.com", path: "/v71/payments",
			ctype: "application/json", sdkHeader: "Idempotency-Key", get: header("Idempotency-Key"), wantLen: 64,
			first: `{"merchantAccount":"M","reference":"o1","amount":{"currency":"EUR","value":100},"paymentMethod":{"type":"scheme","encryptedCardNumber":"a"}}`,
			retry: `{"paymentMethod":{"encryptedCardNumber":"b","type":"scheme"},"amount":{"value":100,"currency":"EUR"},"reference":"o1","merchantAccount":"M"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := &keySim{get: tc.get}
			file, text := loadPack(t, tc.pack)
			p := newSetProxy(t, file, text, tc.host, sim, Options{})
			for i, body := range []string{tc.first, tc.retry} {
				req, _ := http.NewRequest(http.MethodPost, p.baseURL+tc.path, strings.NewReader(body))
				req.Header.Set("Content-Type", tc.ctype)
				req.Header.Set("Authorization", "Bearer test")
				req.Header.Set("X-API-Key", "test")
				if tc.sdkHeader != "" {
					req.Header.Set(tc.sdkHeader, fmt.Sprintf("sdk-minted-%d", i))
				}
				resp, err := p.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			sim.mu.Lock()
			defer sim.mu.Unlock()
			if len(sim.keys) != 2 || sim.keys[0] != sim.keys[1] || len(sim.keys[0]) != tc.wantLen {
				t.Fatalf("provider keys = %q, want one %d-character key sent twice", sim.keys, tc.wantLen)
			}
		})
	}
}

// A Stripe charge sent without metadata[order_id] cannot be looked up (the
// pack's search needs it): its unknown outcome is resolved by the native
// key's re-send inside the key's 24 hours, and held past them, or when
// nobody retries; never by a search made without the reference. The step
// says why.
func TestStripeRecoveryWithoutReference(t *testing.T) {
	const body = "amount=2000&currency=usd&source=tok_visa&description=no+order"
	tests := []struct {
		name       string
		wait       time.Duration
		abandon    bool // nobody retries: the resolver settles the step
		wantStatus int
		wantWrites int
	}{
		{name: "inside the key's lifetime, re-sent", wait: time.Hour, wantStatus: http.StatusGatewayTimeout, wantWrites: 2},
		{name: "past the key's lifetime, held", wait: 25 * time.Hour, wantStatus: http.StatusConflict, wantWrites: 1},
		{name: "abandoned, held", wait: 2 * time.Hour, abandon: true, wantWrites: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := &packSim{read: `{"object":"search_result","data":[],"has_more":false}`}
			file, text := loadPack(t, "stripe")
			p := newSetProxy(t, file, text, "api.stripe.com", sim, Options{})
			send := func() (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, p.baseURL+"/v1/charges", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Authorization", "Bearer test")
				resp, err := p.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, string(b)
			}
			first, b := send()
			if first.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("first call: %d %s, want 504 outcome-unknown", first.StatusCode, b)
			}
			key := first.Header.Get(HeaderKey)
			p.clock.add(tc.wait)
			if tc.abandon {
				if n := p.srv.newResolver().Pass(context.Background()); n != 1 {
					t.Fatalf("resolver settled %d steps, want 1", n)
				}
			} else if r, b := send(); r.StatusCode != tc.wantStatus {
				t.Fatalf("retry: %d %s, want %d", r.StatusCode, b, tc.wantStatus)
			}
			sim.mu.Lock()
			writes, reads := sim.writes, len(sim.reads)
			sim.mu.Unlock()
			if writes != tc.wantWrites || reads != 0 {
				t.Fatalf("upstream writes = %d, lookups = %d; want %d and none", writes, reads, tc.wantWrites)
			}
			st, err := p.j.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantWrites == 2 {
				return // re-sent: nothing held
			}
			if !st.Held() || !strings.Contains(st.LastError, "no lookup: the request has no body.metadata[order_id]") {
				t.Errorf("step hold %s (%s), evidence %q; want held saying the reference was absent", st.Hold, st.HoldReason, st.LastError)
			}
		})
	}
}
