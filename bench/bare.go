//go:build linux

package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/elazarl/goproxy"
)

// bareFlag re-executes this binary as the reference proxy.
const bareFlag = "-serve-bare-goproxy"

// bareIdleConnsPerHost is "high": more than the largest concurrency, so the
// reference never closes an upstream connection it could reuse.
const bareIdleConnsPerHost = 1024

// serveBare runs a bare, tuned goproxy on a free port of 127.0.0.1: the
// yardstick for toolguard's passthrough. It is what a careful user of
// goproxy would run: goproxy.NewProxyHttpServer with a transport that keeps
// many idle connections and ignores HTTP_PROXY, and no CONNECT dialer that
// reads HTTPS_PROXY. It prints "proxy: http://ADDR" and serves until its
// stdin closes.
func serveBare() {
	p := goproxy.NewProxyHttpServer()
	p.Tr = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: bareIdleConnsPerHost}
	p.ConnectDial = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("proxy: http://%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	log.Fatal(http.Serve(ln, p))
}
