package certmanager_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/certmanager/store/barbicantest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// TestBarbicanBackendThroughManager runs a cluster's whole certificate life
// against the fake Keystone + Barbican: create (4 containers, 12 secrets),
// sign, client credentials, rotate, delete old, delete all.
func TestBarbicanBackendThroughManager(t *testing.T) {
	f := barbicantest.New(t)
	logs := &testkit.SyncBuffer{}
	m, err := certmanager.New(certmanager.Options{CertManagerType: "barbican", Barbican: f.Options(), KeyPoolSize: -1, RSAKeySize: 1024},
		nil, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := &objects.Cluster{UUID: objects.Str("7c9e6679-7425-40de-944b-e07fc1f90ae7"), Name: objects.Str("bb")}
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if s, n := f.Counts(); s != 12 || n != 4 {
		t.Fatalf("%d secrets, %d containers", s, n)
	}
	var secrets []string
	f.Mu.Lock()
	for _, s := range f.Secrets {
		if s.Name != "Certificate" {
			secrets = append(secrets, s.Payload)
		}
	}
	f.Mu.Unlock()
	key, _ := rsa.GenerateKey(rand.Reader, 1024)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "n"}}, key)
	if _, err := m.SignCSR(ctx, c, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), "etcd"); err != nil {
		t.Fatal(err)
	}
	_, _, clientKey, err := m.ClientCredentials(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	old, err := m.RotateForCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	m.DeleteRefs(ctx, *c.UUID, old)
	if s, n := f.Counts(); s != 12 || n != 4 {
		t.Fatalf("after rotation: %d secrets, %d containers", s, n)
	}
	if err := m.DeleteForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if s, n := f.Counts(); s != 0 || n != 0 {
		t.Fatalf("after delete: %d secrets, %d containers", s, n)
	}

	// A Barbican failure in the middle of a create leaves nothing behind.
	f.Mu.Lock()
	var posts atomic.Int32 // the fake calls Fail from its handlers, which run at once
	f.Fail = func(method, path string) int {
		if method == "POST" && strings.HasSuffix(path, "/containers") && posts.Add(1) == 3 {
			return 503
		}
		return 0
	}
	f.Mu.Unlock()
	c2 := &objects.Cluster{UUID: objects.Str("9b2c6f1e-3d4a-4b5c-8d6e-7f8091a2b3c4")}
	if err := m.GenerateForCluster(ctx, c2); !errorsIs(err, exception.ClassCertificatesToClusterFailed) || c2.CACertRef != nil {
		t.Fatalf("err = %v", err)
	}
	if s, n := f.Counts(); s != 0 || n != 0 {
		t.Fatalf("half-written: %d secrets, %d containers", s, n)
	}

	out := logs.String()
	secrets = append(secrets, string(clientKey), barbicantest.Password, barbicantest.Token)
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Fatalf("secret %.16q… logged", s)
		}
	}
}
