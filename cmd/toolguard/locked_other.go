//go:build !linux

package main

// lockHolder cannot tell who holds a lock outside Linux: 0.
func lockHolder(string) (pid int, name string) { return 0, "" }
