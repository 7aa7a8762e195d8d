package tlsca

import "errors"

// Errors of this package, grouped by operation. They are wrapped with the
// path they concern; classify them with errors.Is.

// LoadOrCreate, Create, Load.
var (
	// ErrExists: Create found a CA in the directory; it never replaces
	// one.
	ErrExists = errors.New("already exists")
	// ErrIncomplete: the directory holds only one of ca.pem and
	// ca-key.pem. Neither is replaced: the operator restores the other or
	// removes both.
	ErrIncomplete = errors.New("found only one of " + CertName + " and " + KeyName)
	// ErrNotCA: ca.pem holds a certificate that is not a CA's.
	ErrNotCA = errors.New("not a CA certificate")
	// ErrKeyCannotSign: ca-key.pem holds a key that cannot sign.
	ErrKeyCannotSign = errors.New("private key cannot sign")
)

// LoadOrCreateSecret.
var (
	// ErrShortSecret: the secret file holds fewer than 32 bytes.
	ErrShortSecret = errors.New("secret too short")
)
