package certmanager_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/certmanager/pkcs8"
	"github.com/openstack/magnum-conductor/certmanager/pki"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// The real db.Store satisfies the backend's interface.
var _ interface {
	CreateX509KeyPair(context.Context, *objects.X509KeyPair) error
	GetX509KeyPairByUUID(context.Context, string) (*objects.X509KeyPair, error)
	DestroyX509KeyPair(context.Context, string) error
} = (*db.Store)(nil)

func openStore(t *testing.T, dialect string) *db.Store {
	t.Helper()
	var url string
	if dialect == "mysql" {
		_, url = dbtest.MySQL(t)
	} else {
		url = dbtest.SQLite(t)
	}
	return dbtest.Migrated(t, url, db.Options{}, nil)
}

// TestX509KeyPairBackendOnRealDatabase runs the x509keypair backend against
// db.Store on MariaDB and SQLite: rows as Magnum writes them, the tenant
// filter on reads, and all four rows gone after DeleteForCluster.
func TestX509KeyPairBackendOnRealDatabase(t *testing.T) {
	for _, dialect := range []string{"mysql", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			store := openStore(t, dialect)
			m, err := certmanager.New(certmanager.Options{CertManagerType: "x509keypair", KeyPoolSize: -1, RSAKeySize: 1024},
				store, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			user := request.With(context.Background(), &request.Context{ProjectID: "proj-a", UserID: "user-a"})
			c := &objects.Cluster{UUID: objects.Str("4e0b7a9c-2f7d-4c8e-b7a1-0d3c9e6f5a12"), Name: objects.Str("db-cluster")}
			if err := m.GenerateForCluster(user, c); err != nil {
				t.Fatal(err)
			}
			for _, ref := range certmanager.ClusterRefs(c).List() {
				kp, err := store.GetX509KeyPairByUUID(user, ref)
				if err != nil {
					t.Fatal(err)
				}
				if objects.Deref(kp.ProjectID) != "proj-a" || objects.Deref(kp.UserID) != "user-a" || kp.Intermediates != nil {
					t.Fatalf("row %s: project %v user %v", ref, objects.Deref(kp.ProjectID), objects.Deref(kp.UserID))
				}
				if _, err := pkcs8.Decrypt([]byte(objects.Deref(kp.PrivateKey)), []byte(objects.Deref(kp.PrivateKeyPassphrase))); err != nil {
					t.Fatalf("row %s key: %v", ref, err)
				}
				if _, err := pki.ParseCertificate(objects.Deref(kp.Certificate)); err != nil {
					t.Fatal(err)
				}
			}
			key, _ := rsa.GenerateKey(rand.Reader, 1024)
			der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "n"}}, key)
			csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
			if _, err := m.SignCSR(user, c, csr, "front_proxy"); err != nil {
				t.Fatal(err)
			}
			other := request.With(context.Background(), &request.Context{ProjectID: "proj-b", UserID: "user-b"})
			if _, err := m.GetCACertificate(other, c, ""); !errorsIs(err, exception.ClassX509KeyPairNotFound) {
				t.Fatalf("other project read the CA: %v", err)
			}
			if _, err := m.GetCACertificate(context.Background(), c, "etcd"); err != nil {
				t.Fatalf("admin context: %v", err)
			}
			if err := m.DeleteForCluster(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			rows, err := store.ListX509KeyPairs(context.Background(), db.ListOpts{}, db.X509KeyPairFilters{})
			if err != nil || len(rows) != 0 {
				t.Fatalf("%d rows left: %v", len(rows), err)
			}
		})
	}
}

func errorsIs(err error, class exception.Class) bool { return errors.Is(err, class.New(nil)) }
