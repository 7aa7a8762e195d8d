//go:build !linux

package bolt

import "os"

// fdatasync makes f's data durable; elsewhere than Linux, with fsync.
func fdatasync(f *os.File) error { return f.Sync() }
