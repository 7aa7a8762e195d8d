//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a proxy running as a child process: toolguard serve, or this
// binary re-executed as a bare goproxy. It prints "proxy: http://ADDR"
// (toolguard also "admin: ..." and "ca: PATH") on stdout once it listens.
type proc struct {
	name     string
	cmd      *exec.Cmd
	proxyURL *url.URL
	adminURL string
	caFile   string
	stderr   *tailBuffer
	// stdin stays open while the child should run: the bare goproxy exits
	// when it closes (and a dropped pipe would be closed by its finalizer).
	stdin   io.WriteCloser
	exited  chan struct{}
	exitErr error
}

// buildToolguard builds ./cmd/toolguard of the module at root into dir.
func buildToolguard(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "toolguard")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolguard")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build toolguard: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run from the toolguard repository")
	}
	return filepath.Dir(gomod), nil
}

// benchAdminToken is the operator token of the toolguard processes the
// harness starts.
const benchAdminToken = "bench-operator-token-0123456789"

// startToolguard runs toolguard serve on free ports with its journal and CA
// in dir; env holds extra TOOLGUARD_* settings (K=V).
func startToolguard(bin, dir, rulesDir, configFile string, env []string) (*proc, error) {
	args := []string{"serve",
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--rules", rulesDir, "--journal", filepath.Join(dir, "tg.db"),
		"--ca-dir", filepath.Join(dir, "ca"), "--log-level", "error"}
	if configFile != "" {
		args = append(args, "--config", configFile)
	}
	cmd := exec.Command(bin, args...)
	// A clean environment: the harness's own HTTP(S)_PROXY or TOOLGUARD_*
	// variables must not change what is measured.
	// The admin API asks every caller but the probes for a token (a
	// generated one when none is set): the harness sets its own, with which
	// it reads /metrics.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TOOLGUARD_ADMIN_TOKEN=" + benchAdminToken}, env...)
	return startProc("toolguard", cmd)
}

// startBare re-executes this binary as a bare goproxy.
func startBare() (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(self, bareFlag)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	return startProc("bare goproxy", cmd)
}

func startProc(name string, cmd *exec.Cmd) (*proc, error) {
	p := &proc{name: name, cmd: cmd, stderr: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// The child dies with the harness, even when the harness is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.exitErr = cmd.Wait(); close(p.exited) }()
	if err := p.readAddresses(stdout); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// readAddresses parses the lines the child prints once it listens.
func (p *proc) readAddresses(stdout io.Reader) error {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for p.proxyURL == nil || (p.name == "toolguard" && (p.adminURL == "" || p.caFile == "")) {
		select {
		case l, ok := <-lines:
			if !ok {
				<-p.exited
				return fmt.Errorf("%s exited before listening: %v\n%s", p.name, p.exitErr, p.stderr)
			}
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "proxy":
				u, err := url.Parse(v)
				if err != nil {
					return fmt.Errorf("%s printed a bad proxy address %q: %w", p.name, v, err)
				}
				p.proxyURL = u
			case "admin":
				p.adminURL = v
			case "ca":
				p.caFile = v
			}
		case <-deadline:
			return fmt.Errorf("%s did not start within 30s:\n%s", p.name, p.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	return nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the child: SIGTERM, then SIGKILL after a grace period.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.stdin.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// alive reports an error when the child has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v\n%s", p.name, p.exitErr, p.stderr)
	default:
		return nil
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
