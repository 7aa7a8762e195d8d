// Package e2e holds toolguard's end-to-end tests: they build the real
// binary, run it against real upstream servers on 127.0.0.1, send real
// HTTP and HTTPS requests through it, kill it with SIGKILL, and assert what
// the upstream did. It has no non-test code.
package e2e
