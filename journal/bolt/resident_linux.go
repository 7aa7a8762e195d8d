package bolt

import "syscall"

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
