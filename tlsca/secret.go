package tlsca

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
)

// LoadOrCreateSecret returns the per-install HMAC secret kept at path,
// creating 32 random bytes with mode 0600 on first use. The secret keys the
// credential part of every idempotency key, so it must survive restarts and
// never leave the machine.
func LoadOrCreateSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("read secret %s: %w (%d bytes, want at least 32)", path, ErrShortSecret, len(b))
		}
		return b, nil
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("read secret %s: %w", path, err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create secret dir: %w", err)
	}
	if err := WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return b, nil
}
