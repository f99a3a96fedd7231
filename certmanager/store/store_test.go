package store_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager/store"
	"github.com/openstack/magnum-conductor/certmanager/store/barbicantest"
)

func isClass(err error, class exception.Class) bool { return errors.Is(err, class.New(nil)) }

func testLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var sample = store.Cert{
	Certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
	PrivateKey:  "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n",
	Passphrase:  "abcdefghijkl",
}

func TestCertNeverPrintsSecrets(t *testing.T) {
	var buf bytes.Buffer
	testLogger(&buf).Info("x", "cert", sample)
	for _, s := range []string{buf.String(), sample.String(), sample.GoString()} {
		if strings.Contains(s, "abcdefghijkl") || strings.Contains(s, "MIIF") {
			t.Fatalf("secret printed: %s", s)
		}
	}
}

func TestLocalStoresFilesWithMode0600AndDeletesThem(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	b := store.NewLocal(dir, testLogger(&logs))
	ctx := context.Background()
	withInt := sample
	withInt.Intermediates = "INTERMEDIATES"
	ref, err := b.Store(ctx, withInt, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for ext, want := range map[string]string{".crt": sample.Certificate, ".key": sample.PrivateKey, ".pass": "abcdefghijkl", ".int": "INTERMEDIATES"} {
		p := filepath.Join(dir, ref+ext)
		data, err := os.ReadFile(p)
		if err != nil || string(data) != want {
			t.Fatalf("%s: %q %v", ext, data, err)
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", ext, fi.Mode())
		}
	}
	got, err := b.Get(ctx, ref, "")
	if err != nil || *got != withInt {
		t.Fatalf("get: %v", err)
	}
	if err := b.Delete(ctx, ref, ""); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	if _, err := b.Get(ctx, ref, ""); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("get after delete: %v", err)
	}
	if strings.Contains(logs.String(), "abcdefghijkl") {
		t.Fatal("passphrase logged")
	}
}

func TestLocalReadsPythonLayoutAndReportsMissingKey(t *testing.T) {
	dir := t.TempDir()
	b := store.NewLocal(dir, testLogger(&bytes.Buffer{}))
	ref := "5b0a3c2e-8d1f-4f4a-9a51-0c1c6a4f2b11"
	_ = os.WriteFile(filepath.Join(dir, ref+".crt"), []byte("CRT"), 0o644)
	if _, err := b.Get(context.Background(), ref, ""); !isClass(err, exception.ClassCertificateStorageException) ||
		!strings.Contains(err.Error(), "Private Key could not be read.") {
		t.Fatalf("err = %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, ref+".key"), []byte("KEY"), 0o644)
	got, err := b.Get(context.Background(), ref, "")
	if err != nil || got.Certificate != "CRT" || got.PrivateKey != "KEY" || got.Passphrase != "" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"../etc/passwd", "a/b", ""} {
		if _, err := b.Get(context.Background(), bad, ""); !isClass(err, exception.ClassCertificateStorageException) {
			t.Fatalf("ref %q accepted", bad)
		}
	}
}

func TestLocalStoreFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	b := store.NewLocal(filepath.Join(dir, "missing"), testLogger(&bytes.Buffer{}))
	if _, err := b.Store(context.Background(), sample, "c"); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// fakeKeyPairDB mimics db.Store's x509keypair methods, tenant filter
// included.
type fakeKeyPairDB struct {
	mu   sync.Mutex
	rows map[string]objects.X509KeyPair
}

func (f *fakeKeyPairDB) CreateX509KeyPair(_ context.Context, kp *objects.X509KeyPair) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rows == nil {
		f.rows = map[string]objects.X509KeyPair{}
	}
	now := time.Now().UTC()
	kp.ID = int64(len(f.rows) + 1)
	kp.CreatedAt = &now
	f.rows[*kp.UUID] = *kp
	return nil
}

func (f *fakeKeyPairDB) GetX509KeyPairByUUID(ctx context.Context, uuid string) (*objects.X509KeyPair, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kp, ok := f.rows[uuid]
	rc := request.From(ctx)
	if !ok || !(rc.IsAdmin && rc.AllTenants) && objects.Deref(kp.ProjectID) != rc.ProjectID {
		return nil, exception.ClassX509KeyPairNotFound.New(map[string]any{"x509keypair": uuid})
	}
	return &kp, nil
}

func (f *fakeKeyPairDB) DestroyX509KeyPair(_ context.Context, uuid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rows[uuid]; !ok {
		return exception.ClassX509KeyPairNotFound.New(map[string]any{"x509keypair": uuid})
	}
	delete(f.rows, uuid)
	return nil
}

func TestX509KeyPairStoresRowForTheRequestProject(t *testing.T) {
	db := &fakeKeyPairDB{}
	b := store.NewX509KeyPair(db)
	user := request.With(context.Background(), &request.Context{ProjectID: "p1", UserID: "u1"})
	ref, err := b.Store(user, sample, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	row := db.rows[ref]
	if objects.Deref(row.ProjectID) != "p1" || objects.Deref(row.UserID) != "u1" ||
		objects.Deref(row.Certificate) != sample.Certificate || objects.Deref(row.PrivateKey) != sample.PrivateKey ||
		objects.Deref(row.PrivateKeyPassphrase) != sample.Passphrase || row.Intermediates != nil {
		t.Fatalf("row %+v", row)
	}
	got, err := b.Get(user, ref, "")
	if err != nil || *got != sample {
		t.Fatalf("get %v", err)
	}
	other := request.With(context.Background(), &request.Context{ProjectID: "p2"})
	if _, err := b.Get(other, ref, ""); !isClass(err, exception.ClassX509KeyPairNotFound) {
		t.Fatalf("other project: %v", err)
	}
	if err := b.Delete(other, ref, ""); !isClass(err, exception.ClassX509KeyPairNotFound) || len(db.rows) != 1 {
		t.Fatalf("other project deleted: %v", err)
	}
	// Periodic tasks use an admin all-tenants context.
	if err := b.Delete(context.Background(), ref, ""); err != nil || len(db.rows) != 0 {
		t.Fatalf("admin delete: %v", err)
	}
}

func TestBarbicanStoreGetDeleteAsMagnumLaysItOut(t *testing.T) {
	f := barbicantest.New(t)
	var logs bytes.Buffer
	b := store.NewBarbican(f.Options(), testLogger(&logs))
	ctx := context.Background()
	ref, err := b.Store(ctx, sample, "my-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, f.URL()+"/key-manager/v1/containers/") {
		t.Fatalf("ref %s", ref)
	}
	f.Mu.Lock()
	ctr := f.Containers[path.Base(ref)]
	names := map[string]string{}
	for _, s := range f.Secrets {
		names[s.Name] = s.Payload
		if s.ContentType != "text/plain" {
			t.Errorf("secret %s content type %q", s.Name, s.ContentType)
		}
	}
	f.Mu.Unlock()
	if ctr["name"] != "my-cluster" || ctr["type"] != "certificate" {
		t.Fatalf("container %v", ctr)
	}
	var refNames []string
	for _, sr := range ctr["secret_refs"].([]any) {
		refNames = append(refNames, sr.(map[string]any)["name"].(string))
	}
	if strings.Join(refNames, ",") != "certificate,private_key,private_key_passphrase" {
		t.Fatalf("secret refs %v", refNames)
	}
	if len(names) != 3 || names["Certificate"] != sample.Certificate || names["Private Key"] != sample.PrivateKey ||
		names["Private Key Passphrase"] != sample.Passphrase {
		t.Fatalf("secrets %v", names)
	}
	got, err := b.Get(ctx, ref, "cluster-uuid")
	if err != nil || *got != sample {
		t.Fatalf("get: %v", err)
	}
	if err := b.Delete(ctx, ref, "cluster-uuid"); err != nil {
		t.Fatal(err)
	}
	if s, c := f.Counts(); s != 0 || c != 0 {
		t.Fatalf("left %d secrets %d containers", s, c)
	}
	// Deleting again is not an error; reading is.
	if err := b.Delete(ctx, ref, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, ref, ""); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("get deleted: %v", err)
	}
	if f.AuthCalls != 1 {
		t.Fatalf("%d token requests", f.AuthCalls)
	}
	for _, secret := range []string{"abcdefghijkl", barbicantest.Password, barbicantest.Token, "MIIF"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("%q logged:\n%s", secret, logs.String())
		}
	}
}

func TestBarbicanReadsSecretsStoredAsBytesByPython(t *testing.T) {
	f := barbicantest.New(t)
	b := store.NewBarbican(f.Options(), testLogger(&bytes.Buffer{}))
	ref, err := b.Store(context.Background(), sample, "c")
	if err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	for _, s := range f.Secrets {
		s.ContentType = "application/octet-stream"
	}
	f.Mu.Unlock()
	got, err := b.Get(context.Background(), ref, "")
	if err != nil || *got != sample {
		t.Fatalf("get: %v", err)
	}
}

func TestBarbicanFailuresAreStorageExceptionsAndRollBack(t *testing.T) {
	tests := []struct {
		name     string
		fail     func(method, path string) int
		block    func(method, path string) bool
		wantText string
	}{
		{
			name: "container create 503",
			fail: func(m, p string) int {
				return map[bool]int{true: 503}[m == "POST" && strings.HasSuffix(p, "/containers")]
			},
			wantText: "HTTP 503",
		},
		{
			name: "third secret 500",
			fail: func() func(m, p string) int {
				n := 0
				return func(m, p string) int {
					if m == "POST" && strings.HasSuffix(p, "/secrets") {
						n++
						if n == 3 {
							return 500
						}
					}
					return 0
				}
			}(),
			wantText: "HTTP 500",
		},
		{
			name:     "container create times out",
			block:    func(m, p string) bool { return m == "POST" && strings.HasSuffix(p, "/containers") },
			wantText: "timed out",
		},
		{
			name:     "keystone down",
			fail:     func(m, p string) int { return map[bool]int{true: 502}[strings.HasPrefix(p, "/identity")] },
			wantText: "Keystone",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := barbicantest.New(t)
			f.Fail, f.Block = tt.fail, tt.block
			opts := f.Options()
			opts.Timeout = 300 * time.Millisecond
			b := store.NewBarbican(opts, testLogger(&bytes.Buffer{}))
			_, err := b.Store(context.Background(), sample, "c")
			if !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "abcdefghijkl") || strings.Contains(err.Error(), "MIIF") {
				t.Fatal("secret in error")
			}
			if s, c := f.Counts(); s != 0 || c != 0 {
				t.Fatalf("half-written: %d secrets, %d containers", s, c)
			}
		})
	}
}

func TestBarbicanGetAndDelete5xx(t *testing.T) {
	f := barbicantest.New(t)
	b := store.NewBarbican(f.Options(), testLogger(&bytes.Buffer{}))
	ref, err := b.Store(context.Background(), sample, "c")
	if err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	f.Fail = func(m, p string) int { return map[bool]int{true: 500}[strings.Contains(p, "/payload")] }
	f.Mu.Unlock()
	if _, err := b.Get(context.Background(), ref, ""); !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("get: %v", err)
	}
	f.Mu.Lock()
	f.Fail = func(m, p string) int { return map[bool]int{true: 503}[m == "DELETE"] }
	f.Mu.Unlock()
	if err := b.Delete(context.Background(), ref, ""); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("delete: %v", err)
	}
}

// TestBarbicanCAFileErrorsNameThePath: a missing or empty CA file is a
// CertificateStorageException naming the file, and nothing is stored.
func TestBarbicanCAFileErrorsNameThePath(t *testing.T) {
	f := barbicantest.New(t)
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		opts := f.Options()
		opts.CAFile = ca
		_, err := store.NewBarbican(opts, testLogger(&bytes.Buffer{})).Store(context.Background(), sample, "c")
		if !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), "Barbican: ") || !strings.Contains(err.Error(), ca) {
			t.Errorf("CA file %s: %v", ca, err)
		}
	}
	if s, c := f.Counts(); s != 0 || c != 0 {
		t.Fatalf("stored %d secrets, %d containers", s, c)
	}
}
