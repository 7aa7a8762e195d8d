package tlsca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is the certificate authority that signs the leaf certificates toolguard
// presents to agents for intercepted hosts. Agents trust CertFile.
type CA struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	// certDER is Cert.Raw, appended to every leaf chain.
	certDER []byte
}

// CA file names inside the CA directory (contract).
const (
	CertName = "ca.pem"
	KeyName  = "ca-key.pem"
)

// LoadOrCreate loads ca.pem and ca-key.pem from dir, creating an ECDSA
// P-256 CA there on first use (the key with mode 0600). created reports
// whether a new CA was made. A directory with only one of the two files is
// an error (ErrIncomplete), and neither is replaced.
func LoadOrCreate(dir string) (ca *CA, created bool, err error) {
	certPath := filepath.Join(dir, CertName)
	keyPath := filepath.Join(dir, KeyName)
	_, errCert := os.Stat(certPath)
	_, errKey := os.Stat(keyPath)
	switch {
	case errCert == nil && errKey == nil:
		ca, err := Load(dir)
		return ca, false, err
	case os.IsNotExist(errCert) && os.IsNotExist(errKey):
		ca, err := Create(dir)
		return ca, err == nil, err
	case errCert != nil && !os.IsNotExist(errCert):
		return nil, false, fmt.Errorf("stat %s: %w", certPath, errCert)
	case errKey != nil && !os.IsNotExist(errKey):
		return nil, false, fmt.Errorf("stat %s: %w", keyPath, errKey)
	default:
		return nil, false, fmt.Errorf("load CA from %s: %w; restore the other or remove both to create a new CA", dir, ErrIncomplete)
	}
}

// Create writes a new CA to dir: ca-key.pem with mode 0600, then ca.pem.
// It refuses to replace an existing one (ErrExists).
func Create(dir string) (*CA, error) {
	certPath := filepath.Join(dir, CertName)
	if _, err := os.Stat(certPath); err == nil {
		return nil, fmt.Errorf("create CA: %s %w", certPath, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create CA dir %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "toolguard local CA", Organization: []string{"toolguard"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode CA key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := WriteFile(filepath.Join(dir, KeyName), keyPEM, 0o600); err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return Load(dir)
}

// Load reads an existing CA from dir.
func Load(dir string) (*CA, error) {
	certPath := filepath.Join(dir, CertName)
	pair, err := tls.LoadX509KeyPair(certPath, filepath.Join(dir, KeyName))
	if err != nil {
		return nil, fmt.Errorf("load CA from %s: %w", dir, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate %s: %w", certPath, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("load CA %s: %w", certPath, ErrNotCA)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("load CA %s: %w", dir, ErrKeyCannotSign)
	}
	return &CA{Cert: cert, Key: signer, CertFile: certPath, certDER: cert.Raw}, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(fmt.Sprintf("read random serial: %v", err)) // crypto/rand never fails on Linux
	}
	return n
}

// Leaf issues an ECDSA P-256 certificate for host (a DNS name or an IP),
// valid for 7 days and never beyond the CA's own expiry.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate leaf key for %s: %w", host, err)
	}
	now := time.Now()
	notAfter := now.Add(7 * 24 * time.Hour)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	sum := sha256.Sum256([]byte(host))
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(append(sum[:8], randomSerial().Bytes()[:8]...)),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign leaf for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse leaf for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.certDER}, PrivateKey: key, Leaf: leaf}, nil
}
