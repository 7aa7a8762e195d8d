// Package tlsca keeps toolguard's TLS certificate authority and its other
// secret files: it loads or creates the CA (ca.pem, and ca-key.pem with
// mode 0600) and signs, and caches, the leaf certificates presented to
// agents for intercepted hosts. Every secret file is written atomically (a
// fsynced temporary file renamed or linked into place), so a crash leaves
// the old file or the new one, never part of one.
//
// # Files
//
// LoadOrCreate keeps the CA in a directory; LoadOrCreateSecret the
// per-install HMAC secret of idempotency keys. WriteFile replaces a file
// atomically; CreateFile creates one that must not exist yet, so that two
// processes starting at once agree on one (the operator token uses it).
//
// # Leaves
//
// Leaves are ECDSA P-256, valid for 7 days and never beyond the CA. A
// Cache keeps a bounded number by host name, signs a host once however
// many handshakes ask for it at the same time, and renews a leaf within an
// hour of its expiry.
package tlsca
