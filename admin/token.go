package admin

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolguard/toolguard/tlsca"
)

// operatorTokenPrefix starts every generated operator token, so that one
// found in a log or a paste is recognised (and secret scanners can match it).
const operatorTokenPrefix = "tgop_"

// LoadOrCreateToken returns the operator token kept at path, creating it on
// first use: 32 random bytes, base64url, with mode 0600, created with
// tlsca.CreateFile (no partial file after a crash).
// A file that exists is never overwritten, so two processes starting at
// once agree on one token. created reports that this call wrote it. An
// existing file that is empty, or readable by others than its owner, is an
// error.
func LoadOrCreateToken(path string) (token string, created bool, err error) {
	token, err = ReadToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("generate operator token: %w", err)
	}
	token = operatorTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("create operator token dir: %w", err)
	}
	switch err := tlsca.CreateFile(path, []byte(token+"\n"), 0o600); {
	case errors.Is(err, fs.ErrExist): // another process was first: use its token
		token, err = ReadToken(path)
		return token, false, err
	case err != nil:
		return "", false, err
	}
	return token, true, nil
}

// ReadToken reads an operator token file, trailing newline dropped; a file
// that others may read, or an empty one, is an error.
func ReadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read operator token %s: %w", path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("read operator token %s: mode %v lets others read it; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read operator token %s: %w", path, err)
	}
	token := strings.TrimRight(string(b), "\r\n")
	if strings.TrimSpace(token) == "" {
		return "", fmt.Errorf("read operator token %s: the file is empty; remove it to generate a new token", path)
	}
	return token, nil
}
