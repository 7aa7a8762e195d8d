package bolt

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, and its size, without its other
// metadata.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
