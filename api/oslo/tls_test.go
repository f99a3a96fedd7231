package oslo

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/testpki"
)

// tlsProxy is a TLS front for the test broker, as a broker with a TLS
// listener would be: it takes TLS on 127.0.0.1 with cert (asking for a
// client certificate signed by clientCAs when that is set) and forwards the
// plain stream to 127.0.0.1:5672. handshakes counts the completed ones,
// noClientCert the ones it refused for want of a client certificate.
type tlsProxy struct {
	addr         string
	handshakes   atomic.Int32
	noClientCert atomic.Int32
}

func startTLSProxy(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool) *tlsProxy {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					if strings.Contains(err.Error(), "didn't provide a certificate") {
						p.noClientCert.Add(1)
					}
					return
				}
				p.handshakes.Add(1)
				b, err := net.Dial("tcp", "127.0.0.1:5672")
				if err != nil {
					return
				}
				defer b.Close()
				go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return p
}

// TestLiveBrokerOverTLS: a client reaching the broker through TLS, with
// [oslo_messaging_rabbit] ssl options as oslo applies them. The broker's
// certificate names broker.internal and it is reached at 127.0.0.1: with
// its CA the chain is checked and the name is not (oslo's default), unless
// ssl_enforce_hostname_verification; without a CA nothing is checked; a CA
// that did not sign it is refused; a broker that wants a client
// certificate gets ssl_cert_file/ssl_key_file.
func TestLiveBrokerOverTLS(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	server := ca.Server(t, "broker.internal").TLS(t)
	client := ca.Client(t, "magnum")
	plain := startTLSProxy(t, server, nil)
	mutual := startTLSProxy(t, server, ca.Pool())

	e := newEnv(t)
	e.startServer(liveDispatcher(t, newRecorder(), nil))
	call := func(t *testing.T, p *tlsProxy, query string, set func(r *RabbitOptions)) error {
		t.Helper()
		opts := e.opts
		opts.TransportURL = "rabbit://guest:guest@" + p.addr + "/" + query
		opts.Rabbit.SSL = query == ""
		set(&opts.Rabbit)
		c, err := NewClient(opts, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Call(userCtx(), Target{Topic: e.topic}, "ping_conductor", nil, CallOptions{Timeout: 3 * time.Second})
		return err
	}
	ok := []struct {
		name  string
		proxy *tlsProxy
		query string
		set   func(r *RabbitOptions)
	}{
		{"CA, chain only", plain, "", func(r *RabbitOptions) { r.SSLCAFile = ca.File }},
		{"no CA, nothing checked", plain, "", func(r *RabbitOptions) {}},
		{"ssl=1 in the URL", plain, "?ssl=1", func(r *RabbitOptions) { r.SSLCAFile = ca.File }},
		{"client certificate", mutual, "", func(r *RabbitOptions) {
			r.SSLCAFile, r.SSLCertFile, r.SSLKeyFile = ca.File, client.CertFile, client.KeyFile
		}},
		{"TLS 1.3 only", plain, "", func(r *RabbitOptions) { r.SSLCAFile, r.SSLVersion = ca.File, "TLSv1_3" }},
	}
	for _, tc := range ok {
		before := tc.proxy.handshakes.Load()
		if err := call(t, tc.proxy, tc.query, tc.set); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if tc.proxy.handshakes.Load() == before {
			t.Errorf("%s: the call did not go through TLS", tc.name)
		}
	}
	refused := []struct {
		name, want string
		proxy      *tlsProxy
		set        func(r *RabbitOptions)
	}{
		{"host name enforced", "doesn't contain any IP SANs", plain, func(r *RabbitOptions) {
			r.SSLCAFile, r.SSLEnforceHostnameVerification = ca.File, true
		}},
		{"another CA", "unknown authority", plain, func(r *RabbitOptions) { r.SSLCAFile = other.File }},
	}
	for _, tc := range refused {
		err := call(t, tc.proxy, "", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want an error saying %q)", tc.name, err, tc.want)
		}
	}
	// Without a client certificate, TLS 1.3 completes the client's side of
	// the handshake before the broker refuses: the client sees the alert,
	// or a connection closed under it, depending on timing. The broker's
	// side says why.
	before := mutual.handshakes.Load()
	if err := call(t, mutual, "", func(r *RabbitOptions) { r.SSLCAFile = ca.File }); err == nil {
		t.Error("no client certificate: the call went through")
	}
	if mutual.noClientCert.Load() == 0 || mutual.handshakes.Load() != before {
		t.Errorf("no client certificate: %d handshakes refused for it, %d completed; want refusals only",
			mutual.noClientCert.Load(), mutual.handshakes.Load()-before)
	}
}
