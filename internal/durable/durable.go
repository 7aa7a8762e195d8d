// Package durable makes file system changes survive a crash. It holds the
// small steps that fsync alone does not cover, such as a directory's
// entries, shared by the packages that write files.
package durable

import (
	"fmt"
	"os"
)

// SyncDir fsyncs a directory, so that a file created or renamed in it
// survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
