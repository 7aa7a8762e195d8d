//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// load is one closed-loop load: conc workers, each with keep-alive,
// sending the next request as soon as the previous answer was read.
type load struct {
	conc int
	// client is shared by the workers; its transport keeps conc idle
	// connections.
	client *http.Client
	// next builds worker w's i-th request.
	next func(w, i int) *http.Request
	// check returns an error when an answer is not the one expected (a
	// wrong status or Toolguard-Outcome): it counts as an error.
	check func(*http.Response) error
	// dials counts the connections the client opened: about conc when
	// keep-alive works.
	dials *atomic.Int64
	// do, when set, replaces sending next(w, i) through client: one call
	// of a scenario that sends through more than one proxy.
	do func(ctx context.Context, w, i int) error
	// done, when set, runs after the load (closing do's other clients).
	done func()
}

func newLoad(conc int, proxy *url.URL, roots *x509.CertPool, next func(w, i int) *http.Request, check func(*http.Response) error) load {
	dials := new(atomic.Int64)
	return load{conc: conc, client: newClient(conc, proxy, roots, dials), next: next, check: check, dials: dials}
}

// loadResult is what a load measured: the requests that completed within
// the measured window (after the warm-up), so that throughput is
// completions per second in steady state.
type loadResult struct {
	measured  int // requests in the window, errors included
	errors    int
	firstErr  string
	total     int // requests completed, warm-up included
	dials     int // connections the client opened, warm-up included
	window    time.Duration
	latencies []time.Duration // sorted
}

func (r loadResult) rps() float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(r.measured-r.errors) / r.window.Seconds()
}

// percentile is the nearest-rank percentile of the sorted latencies.
func (r loadResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(p*float64(len(r.latencies))+0.5) - 1
	return r.latencies[min(max(i, 0), len(r.latencies)-1)]
}

// newClient returns a keep-alive client for conc workers, through proxy
// when it is not nil, trusting roots for TLS when they are not nil; dials,
// when not nil, counts the connections it opens.
func newClient(conc int, proxy *url.URL, roots *x509.CertPool, dials *atomic.Int64) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials != nil {
				dials.Add(1)
			}
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        0, // no overall limit
		MaxIdleConnsPerHost: conc,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	if proxy != nil {
		t.Proxy = http.ProxyURL(proxy)
	}
	if roots != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	return &http.Client{Transport: t, Timeout: 60 * time.Second}
}

// run drives the load for warmup+d. The workers carry the pprof label
// role=client.
func (l load) run(ctx context.Context, warmup, d time.Duration) loadResult {
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+d)
	per := make([]workerResult, l.conc)
	// Preallocate what a worker is likely to record; append grows beyond.
	capacity := max(1024, min(1<<20, int(d.Seconds()*40000)/l.conc))
	var wg sync.WaitGroup
	for w := range l.conc {
		per[w].lat = make([]time.Duration, 0, capacity)
		wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("role", "client"), func(ctx context.Context) {
				l.worker(ctx, w, from, until, &per[w])
			})
		})
	}
	wg.Wait()
	l.client.CloseIdleConnections()
	if l.done != nil {
		l.done()
	}
	r := merge(per, until.Sub(from))
	if l.dials != nil {
		r.dials = int(l.dials.Load())
	}
	return r
}

type workerResult struct {
	lat      []time.Duration
	measured int
	errors   int
	total    int
	firstErr string
}

func (l load) worker(ctx context.Context, w int, from, until time.Time, r *workerResult) {
	for i := 0; ctx.Err() == nil; i++ {
		t0 := time.Now()
		if !t0.Before(until) {
			return
		}
		err := l.once(ctx, w, i)
		t1 := time.Now()
		r.total++
		if t1.Before(from) || t1.After(until) {
			continue // completed outside the measured window
		}
		r.measured++
		if err != nil {
			r.errors++
			if r.firstErr == "" {
				r.firstErr = err.Error()
			}
			continue
		}
		r.lat = append(r.lat, t1.Sub(t0))
	}
}

// once sends one request and reads its answer whole, so that the
// connection is reused.
func (l load) once(ctx context.Context, w, i int) error {
	if l.do != nil {
		return l.do(ctx, w, i)
	}
	return send(l.client, l.next(w, i).WithContext(ctx), l.check)
}

func send(c *http.Client, req *http.Request, check func(*http.Response) error) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return check(resp)
}

func merge(per []workerResult, window time.Duration) loadResult {
	r := loadResult{window: window}
	n := 0
	for _, p := range per {
		n += len(p.lat)
	}
	r.latencies = make([]time.Duration, 0, n)
	for _, p := range per {
		r.latencies = append(r.latencies, p.lat...)
		r.measured += p.measured
		r.errors += p.errors
		r.total += p.total
		if r.firstErr == "" {
			r.firstErr = p.firstErr
		}
	}
	slices.Sort(r.latencies)
	return r
}
