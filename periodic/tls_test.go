package periodic_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/test/testpki"
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
	ca := testpki.New(t)
	p := &testPKI{caPEM: ca.PEM(t), caPool: ca.Pool(), server: ca.Server(t, "127.0.0.1").TLS(t)}
	p.certPEM, p.keyPEM = ca.Client(t, "admin", "system:masters").PEM(t)
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
// slowHandler never answers. When the client gives up it aborts the response
// rather than returning: a handler that returns sends an empty 200, and the
// client's transport may still read that answer in the instant it closes the
// connection, which made the "slow" case pass as a healthy-but-empty server.
func slowHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	})
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
