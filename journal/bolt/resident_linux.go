package bolt

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// dropMapped unmaps the pages of a shared file mapping from the process
// with MADV_DONTNEED; the file's pages stay in the page cache.
func dropMapped(addr, length uintptr) error {
	if length == 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, length, syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}

// fileResident returns the bytes of file-backed memory resident in the
// process (RssFile and RssShmem: statm's third field), or -1.
func fileResident() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return -1
	}
	n, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return -1
	}
	return n * int64(os.Getpagesize())
}
