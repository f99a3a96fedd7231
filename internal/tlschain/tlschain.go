// Package tlschain verifies a TLS peer's certificate chain without its host
// name: what Python's ssl does with check_hostname off and verify_mode
// CERT_REQUIRED, which oslo.messaging (ssl_enforce_hostname_verification
// false) and PyMySQL (ssl_check_hostname=false) ask for; and it loads the
// CA files those chains are checked against (LoadCAFile).
package tlschain

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// WithoutHostname sets cfg to check the peer's chain against roots and not
// its name: Go's own verification is off (it always checks the name) and
// VerifyConnection does the chain.
func WithoutHostname(cfg *tls.Config, roots *x509.CertPool) {
	cfg.InsecureSkipVerify = true // the chain is verified by VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the peer sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}
