//go:build linux

// Command idle measures toolguard's memory with many idle keep-alive client
// connections: it starts a local upstream and the real toolguard binary,
// opens -conns connections through the proxy, sends one passthrough GET on
// each and keeps them all open and idle, then reports toolguard's resident
// memory.
//
//	go run ./bench/idle -conns 10000
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	conns := flag.Int("conns", 10000, "idle keep-alive connections to open")
	flag.Parse()
	if err := run(*conns); err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	dir, err := os.MkdirTemp("", "toolguard-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer up.Close()
	bin := filepath.Join(dir, "toolguard")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/toolguard").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	rules := filepath.Join(dir, "rules")
	os.Mkdir(rules, 0o755)
	os.WriteFile(filepath.Join(rules, "x.yaml"), []byte("api: x\nhosts: [x.example]\nroutes:\n  - name: a\n    match: POST /a\n    effect: irreversible\n"), 0o644)
	cmd := exec.Command(bin, "serve", "--rules", rules, "--journal", filepath.Join(dir, "tg.db"), "--ca-dir", filepath.Join(dir, "ca"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-level", "error")
	cmd.Env = append(os.Environ(), "TOOLGUARD_IDLE_TIMEOUT=10m")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	proxyAddr, err := proxyAddress(stdout)
	if err != nil {
		return err
	}
	before := status(cmd.Process.Pid)
	start := time.Now()
	open := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	req := "GET " + up.URL + "/ping HTTP/1.1\r\nHost: " + strings.TrimPrefix(up.URL, "http://") + "\r\n\r\n"
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", proxyAddr)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		open = append(open, c)
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	after := status(cmd.Process.Pid)
	fmt.Printf("| idle keep-alive connections | opened in | VmRSS before | VmRSS with them open | VmHWM | per connection |\n")
	fmt.Printf("| --: | --: | --: | --: | --: | --: |\n")
	fmt.Printf("| %d | %.1f s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f KiB |\n", n, time.Since(start).Seconds(),
		mib(before["VmRSS"]), mib(after["VmRSS"]), mib(after["VmHWM"]), float64(after["VmRSS"]-before["VmRSS"])/float64(n))
	return nil
}

func proxyAddress(stdout io.Reader) (string, error) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "proxy: http://"); ok {
			go io.Copy(io.Discard, stdout)
			return v, nil
		}
	}
	return "", fmt.Errorf("toolguard did not start")
}

// status reads the kB fields of /proc/PID/status.
func status(pid int) map[string]int64 {
	out := map[string]int64{}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[strings.TrimSuffix(f[0], ":")] = v
			}
		}
	}
	return out
}

func mib(kb int64) float64 { return float64(kb) / 1024 }
