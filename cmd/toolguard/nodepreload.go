package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nodePreload is the file exec preloads into the command's Node processes:
// before Node 24 (and 22.21) it routes built-in fetch through the proxy
// with undici's EnvHttpProxyAgent, or warns that it cannot.
//
//go:embed nodepreload.cjs
var nodePreload []byte

const (
	// nodePreloadName is the preload's file name in exec's directory;
	// doctor finds it in NODE_OPTIONS to tell that it runs under exec.
	nodePreloadName = "toolguard-fetch-proxy.cjs"
	// nodeBypassMark is the file the preload leaves beside itself when
	// Node's fetch is left going around the proxy.
	nodeBypassMark = "node-fetch-bypass"
)

// writeNodePreload writes the preload into dir and returns its path.
func writeNodePreload(dir string) (string, error) {
	path := filepath.Join(dir, nodePreloadName)
	if err := os.WriteFile(path, nodePreload, 0o644); err != nil {
		return "", fmt.Errorf("write Node preload: %w", err)
	}
	return path, nil
}

// nodeOptions is NODE_OPTIONS with a --require of the preload after the
// caller's own options. The path is quoted, as Node parses NODE_OPTIONS:
// inside double quotes a backslash escapes the next character.
//
// It is --require of a CommonJS file rather than --import of an ES module:
// Node before 18.18 does not know --import and would not start at all.
func nodeOptions(existing, preload string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	opt := `--require="` + r.Replace(preload) + `"`
	if existing = strings.TrimSpace(existing); existing != "" {
		return existing + " " + opt
	}
	return opt
}

// nodeFetchBypassed reports whether a Node process of the command found no
// undici to route fetch through the proxy with.
func nodeFetchBypassed(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, nodeBypassMark))
	return err == nil
}

// nodeBypassNote ends exec's summary when the preload found no undici.
const nodeBypassNote = "; Node's fetch went around toolguard (no undici to route it through the proxy: npm install undici, or use Node 24+)"
