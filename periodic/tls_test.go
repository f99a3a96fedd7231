package periodic_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
)

// testPKI is a cluster CA with a server certificate for 127.0.0.1 and the
// Magnum client certificate (CN=admin, O=system:masters).
type testPKI struct {
	caPEM, certPEM, keyPEM []byte
	caPool                 *x509.CertPool
	server                 tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(cn string, org []string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:   pkix.Name{CommonName: cn, Organization: org},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	p.certPEM, p.keyPEM = leaf("admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, nil)
	sc, sk := leaf("kube-apiserver", nil, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.server, err = tls.X509KeyPair(sc, sk)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// credentials serves one PKI's client credentials and counts the reads.
type credentials struct {
	pki   *testPKI
	reads atomic.Int64
}

func (c *credentials) ClientCredentials(context.Context, *objects.Cluster) ([]byte, []byte, []byte, error) {
	c.reads.Add(1)
	return c.pki.caPEM, c.pki.certPEM, c.pki.keyPEM, nil
}

// fakeAPIServer is a TLS Kubernetes API that requires the client
// certificate of pki.
func fakeAPIServer(t testing.TB, pki *testPKI, h http.Handler) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.caPool,
		ClientAuth: tls.RequireAndVerifyClientCert}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func nodesJSON(ready map[string]string) string {
	out := `{"kind":"NodeList","items":[`
	first := true
	for name, st := range ready {
		if !first {
			out += ","
		}
		first = false
		cond := `{"type":"MemoryPressure","status":"False"}`
		if st != "" {
			cond += `,{"type":"Ready","status":"` + st + `"}`
		}
		out += `{"metadata":{"name":"` + name + `"},"status":{"conditions":[` + cond + `]}}`
	}
	return out + `]}`
}

func k8sHandler(healthzCode int, healthz string, nodesCode int, nodes string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(healthzCode)
		_, _ = w.Write([]byte(healthz))
	})
	mux.HandleFunc("/api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(nodesCode)
		_, _ = w.Write([]byte(nodes))
	})
	return mux
}

// slowHandler answers only when the client gives up.
func slowHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
}

// blackHole accepts TCP connections and never answers or closes them.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole(t testing.TB) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			_ = c.Close()
		}
	})
	return b
}

func (b *blackHole) URL() string { return "https://" + b.ln.Addr().String() }
