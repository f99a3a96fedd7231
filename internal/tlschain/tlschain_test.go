package tlschain

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/test/testpki"
)

// handshake runs a TLS handshake over a pipe: a server with cert, and a
// client set up by WithoutHostname with the roots of ca, asking for a name
// the certificate does not hold.
func handshake(t *testing.T, cert tls.Certificate, ca *testpki.CA) error {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	cfg := &tls.Config{ServerName: "not-the-name.example"}
	WithoutHostname(cfg, ca.Pool())
	c, err := tls.Dial("tcp", l.Addr().String(), cfg)
	if err == nil {
		_ = c.Close()
	}
	return err
}

func TestWithoutHostname(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	cert := ca.Server(t, "db.internal").TLS(t)
	if err := handshake(t, cert, ca); err != nil {
		t.Fatalf("a chain from the CA, under another name: %v", err)
	}
	if err := handshake(t, cert, other); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a chain from another CA: %v", err)
	}
	self := other.Server(t, "db.internal").TLS(t)
	if err := handshake(t, self, ca); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
}
