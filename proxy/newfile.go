package proxy

import "os"

// WriteFileNew creates path with data and mode perm, failing with an error
// wrapping fs.ErrExist when it exists: a temporary file in the same
// directory is written and fsynced, then hard-linked to path (link never
// replaces a file), and the directory is fsynced. serve writes the
// generated operator token with it (admin.CreateFile).
func WriteFileNew(path string, data []byte, perm os.FileMode) error {
	return placeFile(path, data, perm, os.Link)
}
