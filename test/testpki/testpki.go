// Package testpki writes a throw-away certificate authority and
// certificates signed by it, for tests of TLS connections (the database,
// the broker, the clusters' Kubernetes API).
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority whose certificate is in File.
type CA struct {
	File string
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	n    int64
}

// Pair is a certificate and its key, as PEM files.
type Pair struct {
	CertFile, KeyFile string
}

// New creates a CA in a temporary directory of t.
func New(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{dir: t.TempDir(), cert: cert, key: key, n: 1}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	write(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Server issues a server certificate for the names given: IP addresses
// as IP SANs, the others as DNS names. The first name is also the CN.
func (ca *CA) Server(t testing.TB, names ...string) Pair {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: names[0]},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	return ca.issue(t, tmpl)
}

// Client issues a client certificate for cn in the organizations given
// (Kubernetes reads them as groups: "system:masters").
func (ca *CA) Client(t testing.TB, cn string, orgs ...string) Pair {
	t.Helper()
	return ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: orgs},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// PEM is the CA's certificate, PEM-encoded.
func (ca *CA) PEM(t testing.TB) []byte {
	t.Helper()
	return read(t, ca.File)
}

// Pool is a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// PEM returns the certificate and the key, PEM-encoded.
func (p Pair) PEM(t testing.TB) (cert, key []byte) {
	t.Helper()
	return read(t, p.CertFile), read(t, p.KeyFile)
}

// TLS loads p as a tls.Certificate.
func (p Pair) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// issue signs tmpl (subject, names and extended usage) with the CA.
func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) Pair {
	t.Helper()
	ca.n++
	key := newKey(t)
	tmpl.SerialNumber = big.NewInt(ca.n)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(ca.dir, big.NewInt(ca.n).String())
	p := Pair{CertFile: base + ".pem", KeyFile: base + ".key"}
	write(t, p.CertFile, "CERTIFICATE", der)
	write(t, p.KeyFile, "PRIVATE KEY", keyDER)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func read(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
