package tlsca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// LoadOrCreate makes a CA once (the key private to its owner) and loads
// it afterwards; half a CA is an error and neither file is replaced.
func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	ca, created, err := LoadOrCreate(dir)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created %v, %v; want a new CA", created, err)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 || ca.CertFile != filepath.Join(dir, CertName) {
		t.Errorf("CA: IsCA %v, key usage %b, file %s", ca.Cert.IsCA, ca.Cert.KeyUsage, ca.CertFile)
	}
	if k, ok := ca.Cert.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("CA key %T, want ECDSA P-256", ca.Cert.PublicKey)
	}
	for name, want := range map[string]os.FileMode{KeyName: 0o600, CertName: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", name, fi.Mode(), err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the CA directory holds %d files, want 2 (temporary files removed)", len(entries))
	}

	again, created, err := LoadOrCreate(dir)
	if err != nil || created || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("second LoadOrCreate: created %v, %v; want the same CA", created, err)
	}
	if _, err := Create(dir); !errors.Is(err, ErrExists) {
		t.Errorf("Create over a CA = %v, want ErrExists", err)
	}

	certPEM, _ := os.ReadFile(filepath.Join(dir, CertName))
	os.Remove(filepath.Join(dir, KeyName))
	if _, _, err := LoadOrCreate(dir); !errors.Is(err, ErrIncomplete) {
		t.Errorf("LoadOrCreate without the key = %v, want ErrIncomplete", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, CertName)); string(b) != string(certPEM) {
		t.Error("LoadOrCreate without the key replaced ca.pem")
	}
	os.Remove(filepath.Join(dir, CertName))
	os.WriteFile(filepath.Join(dir, KeyName), []byte("key"), 0o600)
	if _, _, err := LoadOrCreate(dir); !errors.Is(err, ErrIncomplete) {
		t.Errorf("LoadOrCreate without the certificate = %v, want ErrIncomplete", err)
	}
}

// Load refuses what is not a usable CA.
func TestLoadRefuses(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	notCA := t.TempDir()
	os.WriteFile(filepath.Join(notCA, CertName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(notCA, KeyName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	if _, err := Load(notCA); !errors.Is(err, ErrNotCA) {
		t.Errorf("Load of a leaf = %v, want ErrNotCA", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty directory succeeded")
	}
	if _, _, err := LoadOrCreate(filepath.Join(notCA, CertName, "sub")); err == nil {
		t.Error("LoadOrCreate under a file succeeded")
	}
}

// Leaves are ECDSA P-256 server certificates for a name or an address,
// chained to the CA, valid for 7 days and never beyond the CA.
func TestLeaf(t *testing.T) {
	ca, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, host := range []string{"api.example.com", "127.0.0.1", "::1"} {
		leaf, err := ca.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if len(leaf.Certificate) != 2 || leaf.Leaf.Subject.CommonName != host {
			t.Errorf("%s: chain of %d, subject %s", host, len(leaf.Certificate), leaf.Leaf.Subject.CommonName)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		if k, ok := leaf.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s: key %T, want ECDSA P-256", host, leaf.PrivateKey)
		}
		if life := time.Until(leaf.Leaf.NotAfter); life > 7*24*time.Hour || life < 7*24*time.Hour-time.Minute {
			t.Errorf("%s: valid for %v, want 7 days", host, life)
		}
	}
	short := shortLivedCA(t, 30*time.Minute)
	leaf, err := short.Leaf("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Leaf.NotAfter.Equal(short.Cert.NotAfter) {
		t.Errorf("leaf of a CA expiring at %v expires at %v", short.Cert.NotAfter, leaf.Leaf.NotAfter)
	}
}

// shortLivedCA is a CA whose certificate expires after life.
func shortLivedCA(t *testing.T, life time.Duration) *CA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "short-lived CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(life), KeyUsage: x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, certDER: der}
}
