//go:build !linux

package bolt

// dropMapped does nothing where MADV_DONTNEED's semantics on shared file
// mappings are not the ones resident.go relies on.
func dropMapped(addr, length uintptr) error { return nil }

// fileResident is unknown here.
func fileResident() int64 { return -1 }
