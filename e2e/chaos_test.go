package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort().String()
}

// TestChaosExactlyOnce is the product's promise under fire: agents retry
// many intents while toolguard is SIGKILLed and restarted on the same
// journal again and again, at random moments, mid-call included. Against a
// provider with native idempotency every intent must end with exactly one
// effect and a successful answer.
func TestChaosExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("native", up.host()))})
	addr := freePort(t)
	s.args = append(s.args, "--listen", addr)
	p := s.start(t)
	proxyURL, _ := url.Parse("http://" + addr)
	client := &http.Client{Timeout: 10 * time.Second, Transport: credentialed{&http.Transport{Proxy: http.ProxyURL(proxyURL)}}}

	// The upstream takes 1-4 ms per effect, so that kills land mid-call.
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond) // upstream latency
		}
		return true
	})
	// Workers come in pairs that send the same intents (with their own
	// trace ids): duplicate deliveries racing each other through the kills.
	const workers, intents = 8, 120
	var wg sync.WaitGroup
	failures := make(chan string, workers*intents)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range intents {
				ref := fmt.Sprintf("p%d-i%d", w/2, i)
				if !retryUntilDone(client, up.URL+"/v1/invoices", fmt.Sprintf(`{"reference":%q,"amount":%d,"trace_id":"%d"}`, ref, i, rand.Int())) {
					failures <- ref
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// Kills for a bounded time, then the workers finish on a process left
	// running, so that a loaded machine cannot starve an intent (see
	// TestMCPChaosExactlyOnce).
	kills, chaosEnd := 0, time.After(10*time.Second)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-chaosEnd:
			<-done
			running = false
		case <-time.After(time.Duration(30+rand.IntN(90)) * time.Millisecond): // the chaos schedule
			p.kill()
			kills++
			p = s.start(t)
		}
	}
	close(failures)
	for ref := range failures {
		t.Errorf("intent %s never got a successful answer", ref)
	}
	for pair := range workers / 2 {
		for i := range intents {
			ref := fmt.Sprintf("p%d-i%d", pair, i)
			if n := up.effectsFor(ref); n != 1 {
				t.Errorf("intent %s: %d effects, want exactly 1", ref, n)
			}
		}
	}
	t.Logf("%d intents sent twice each, %d SIGKILLs, %d upstream effects", workers/2*intents, kills, up.effects.Load())
	if kills == 0 {
		t.Error("toolguard was never killed: the run proved nothing")
	}
}

// retryUntilDone is an agent: it retries one intent (new trace id and all)
// until it gets a 2xx, the way a queue redelivers.
func retryUntilDone(c *http.Client, u, body string) bool {
	for attempt := 0; attempt < 500; attempt++ {
		req, _ := http.NewRequest("POST", u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond) // the agent's retry backoff
	}
	return false
}
