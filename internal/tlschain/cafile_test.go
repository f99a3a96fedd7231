package tlschain

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/test/testpki"
)

// verifies reports whether pool accepts the chain of a server certificate
// issued by ca.
func verifies(t *testing.T, pool *x509.CertPool, ca *testpki.CA) bool {
	t.Helper()
	leaf, err := x509.ParseCertificate(ca.Server(t, "svc.example").TLS(t).Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool})
	return err == nil
}

func TestLoadCAFile(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	pool, err := LoadCAFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(t, pool, ca) {
		t.Error("the pool does not trust its CA")
	}
	if verifies(t, pool, other) {
		t.Error("the pool trusts another CA")
	}

	keyPEM, err := os.ReadFile(ca.Server(t, "x").KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	if _, err := LoadCAFile(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	for name, content := range map[string]string{
		"empty.pem":   "",
		"garbage.pem": "not a certificate\x00\xff",
		"key.pem":     string(keyPEM),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if pool, err := LoadCAFile(p); err == nil || pool != nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "holds no certificate") {
			t.Errorf("%s: %v, %v", name, pool, err)
		}
	}
	if _, err := LoadCAFile(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory: %v", err)
	}
}

func TestAppendCAFile(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	pool, err := LoadCAFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendCAFile(pool, other.File); err != nil {
		t.Fatal(err)
	}
	if !verifies(t, pool, ca) || !verifies(t, pool, other) {
		t.Error("the pool does not trust both CAs")
	}
	if err := AppendCAFile(pool, filepath.Join(t.TempDir(), "none.pem")); err == nil {
		t.Error("a missing file was accepted")
	}
}
