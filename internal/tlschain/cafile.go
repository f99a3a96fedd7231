package tlschain

import (
	"crypto/x509"
	"fmt"
	"os"
)

// LoadCAFile reads the PEM file at path into a new certificate pool: the
// roots a client trusts for a service's chain ([keystone_auth] cafile,
// Barbican's CA file, oslo.messaging's ssl_ca_file, PyMySQL's ssl_ca).
// The error names the path when the file is unreadable or holds no PEM
// certificate; callers add which option the path came from.
func LoadCAFile(path string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if err := AppendCAFile(pool, path); err != nil {
		return nil, err
	}
	return pool, nil
}

// AppendCAFile adds the certificates of the PEM file at path to pool, with
// the errors of LoadCAFile; pool is unchanged on error.
func AppendCAFile(pool *x509.CertPool, path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		// os errors already name the path ("open /x: no such file…").
		return fmt.Errorf("reading CA file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("CA file %s holds no certificate in PEM form", path)
	}
	return nil
}
