package certmanager

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/certmanager/pki"
	"github.com/openstack/magnum-conductor/certmanager/store"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// memBackend is an in-memory store.Backend that records calls and can fail.
type memBackend struct {
	mu       sync.Mutex
	seq      int
	certs    map[string]store.Cert
	names    map[string]string
	gets     int
	failPut  func(n int) error // n counts Store calls from 1
	puts     int
	failDel  map[string]bool
	failGets bool
}

func newMemBackend() *memBackend {
	return &memBackend{certs: map[string]store.Cert{}, names: map[string]string{}, failDel: map[string]bool{}}
}

func (b *memBackend) Type() string { return "memory" }

func (b *memBackend) Store(_ context.Context, c store.Cert, name string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.puts++
	if b.failPut != nil {
		if err := b.failPut(b.puts); err != nil {
			return "", err
		}
	}
	b.seq++
	ref := fmt.Sprintf("ref-%d", b.seq)
	b.certs[ref], b.names[ref] = c, name
	return ref, nil
}

func (b *memBackend) Get(_ context.Context, ref, _ string) (*store.Cert, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gets++
	c, ok := b.certs[ref]
	if !ok || b.failGets {
		return nil, exception.ClassCertificateStorageException.New(map[string]any{"msg": "no " + ref})
	}
	return &c, nil
}

func (b *memBackend) Delete(_ context.Context, ref, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failDel[ref] {
		return exception.ClassCertificateStorageException.New(map[string]any{"msg": "delete failed"})
	}
	if _, ok := b.certs[ref]; !ok {
		return exception.ClassCertificateStorageException.New(map[string]any{"msg": "no " + ref})
	}
	delete(b.certs, ref)
	return nil
}

func (b *memBackend) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.certs)
}

func (b *memBackend) all() map[string]store.Cert {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]store.Cert{}
	for k, v := range b.certs {
		out[k] = v
	}
	return out
}

func newLogger(buf *testkit.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newTestManager(t testing.TB, opts Options) (*Manager, *memBackend, *testkit.SyncBuffer) {
	t.Helper()
	b := newMemBackend()
	logs := &testkit.SyncBuffer{}
	if opts.KeyPoolSize == 0 {
		opts.KeyPoolSize = -1
	}
	if opts.RSAKeySize == 0 {
		opts.RSAKeySize = 1024 // fast; TestGenerateForCluster… checks the 2048 default
	}
	return NewWithBackend(opts, b, newLogger(logs)), b, logs
}

func testCluster(name string) *objects.Cluster {
	c := &objects.Cluster{UUID: objects.Str("0f3e0c51-6b0e-4a4e-8a7c-4a3f5f0b9d21")}
	if name != "" {
		c.Name = objects.Str(name)
	}
	return c
}

func parseCert(t testing.TB, s string) *x509.Certificate {
	t.Helper()
	c, err := pki.ParseCertificate(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func isClass(err error, class exception.Class) bool { return errors.Is(err, class.New(nil)) }

var (
	csrKeyOnce sync.Once
	csrKey     *rsa.PrivateKey
)

func makeCSR(t testing.TB, subject pkix.Name) string {
	t.Helper()
	csrKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		csrKey = k
	})
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: []string{"node-0"}}, csrKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
