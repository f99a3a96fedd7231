package certmanager

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager/pkcs8"
	"github.com/openstack/magnum-conductor/certmanager/store"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

var shortIDPattern = regexp.MustCompile(`^[a-z2-7]{12}$`)

func TestGenerateForClusterCreatesThreeCAsAndAdminClientCert(t *testing.T) {
	m, b, _ := newTestManager(t, Options{RSAKeySize: 2048})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	refs := ClusterRefs(c)
	if len(refs.List()) != 4 || b.len() != 4 {
		t.Fatalf("refs %v, stored %d", refs, b.len())
	}
	certs := b.all()
	wantNames := map[string]string{refs.CA: "k8s-1", refs.Etcd: "k8s-1", refs.FrontProxy: "k8s-1", refs.Client: ClientCertName}
	parsed := map[string]*x509.Certificate{}
	for ref, name := range wantNames {
		if b.names[ref] != name {
			t.Errorf("%s stored as %q, want %q", ref, b.names[ref], name)
		}
		sc := certs[ref]
		if !shortIDPattern.MatchString(sc.Passphrase) {
			t.Errorf("passphrase %q is not a short id", sc.Passphrase)
		}
		if !strings.HasPrefix(sc.PrivateKey, "-----BEGIN ENCRYPTED PRIVATE KEY-----") || strings.HasSuffix(sc.Certificate, "\n") {
			t.Errorf("key/cert framing for %s", ref)
		}
		cert := parseCert(t, sc.Certificate)
		key, err := pkcs8.Decrypt([]byte(sc.PrivateKey), []byte(sc.Passphrase))
		if err != nil {
			t.Fatal(err)
		}
		if !key.Public().(*rsa.PublicKey).Equal(cert.PublicKey) || key.Public().(*rsa.PublicKey).N.BitLen() != 2048 {
			t.Fatalf("key of %s does not match its certificate", ref)
		}
		parsed[ref] = cert
	}
	for _, ref := range []string{refs.CA, refs.Etcd, refs.FrontProxy} {
		ca := parsed[ref]
		if !ca.IsCA || ca.Subject.CommonName != "k8s-1" || ca.Issuer.CommonName != "k8s-1" || ca.KeyUsage != x509.KeyUsageCertSign {
			t.Fatalf("CA %s: %v", ref, ca.Subject)
		}
	}
	if parsed[refs.CA].PublicKey.(*rsa.PublicKey).Equal(parsed[refs.Etcd].PublicKey) ||
		parsed[refs.Etcd].PublicKey.(*rsa.PublicKey).Equal(parsed[refs.FrontProxy].PublicKey) {
		t.Fatal("CAs share a key")
	}
	client := parsed[refs.Client]
	if client.Subject.CommonName != "admin" || client.Subject.Organization[0] != "system:masters" || client.IsCA {
		t.Fatalf("client %v", client.Subject)
	}
	verify := func(root *x509.Certificate) error {
		pool := x509.NewCertPool()
		pool.AddCert(root)
		_, err := client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(parsed[refs.CA]); err != nil {
		t.Fatalf("client does not chain to the Kubernetes CA: %v", err)
	}
	if verify(parsed[refs.Etcd]) == nil || verify(parsed[refs.FrontProxy]) == nil {
		t.Fatal("client chains to the wrong CA")
	}
	now := time.Now().UTC()
	if client.NotBefore.After(now.Add(-23*time.Hour)) || client.NotAfter.Before(now.AddDate(0, 0, 1824)) || client.NotAfter.After(now.AddDate(0, 0, 1826)) {
		t.Fatalf("validity %v..%v", client.NotBefore, client.NotAfter)
	}
}

func TestGenerateForClusterUsesUUIDWhenNameIsNull(t *testing.T) {
	m, b, _ := newTestManager(t, Options{TermOfValidity: 10})
	c := testCluster("")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	ca := parseCert(t, b.all()[*c.CACertRef].Certificate)
	if ca.Subject.CommonName != *c.UUID || b.names[*c.CACertRef] != *c.UUID {
		t.Fatalf("CN %q", ca.Subject.CommonName)
	}
	if d := ca.NotAfter.Sub(ca.NotBefore); d != 11*24*time.Hour {
		t.Fatalf("validity %v", d)
	}
}

func TestGenerateForClusterFailureLeavesNothingStored(t *testing.T) {
	m, b, logs := newTestManager(t, Options{})
	b.failPut = func(n int) error {
		if n == 3 {
			return errors.New("barbican exploded")
		}
		return nil
	}
	c := testCluster("k8s-1")
	err := m.GenerateForCluster(context.Background(), c)
	if !isClass(err, exception.ClassCertificatesToClusterFailed) || err.Error() != "Failed to create certificates for Cluster: "+*c.UUID {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(errors.Unwrap(err).Error(), "barbican exploded") {
		t.Fatal("cause lost")
	}
	if c.CACertRef != nil || c.MagnumCertRef != nil || c.EtcdCACertRef != nil || c.FrontProxyCACertRef != nil {
		t.Fatal("refs set on failure")
	}
	if b.len() != 0 {
		t.Fatalf("%d certificates left behind", b.len())
	}
	if !strings.Contains(logs.String(), "barbican exploded") {
		t.Fatal("failure not logged")
	}
}

func TestGetCACertificateByType(t *testing.T) {
	m, b, _ := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	all := b.all()
	for caType, ref := range map[string]string{
		"": *c.CACertRef, "kubernetes": *c.CACertRef, "etcd": *c.EtcdCACertRef,
		"front_proxy": *c.FrontProxyCACertRef, "front-proxy": *c.FrontProxyCACertRef,
	} {
		got, err := m.GetCACertificate(context.Background(), c, caType)
		if err != nil || got != all[ref].Certificate {
			t.Fatalf("type %q: %v", caType, err)
		}
	}
	c.EtcdCACertRef = nil
	if _, err := m.GetCACertificate(context.Background(), c, "etcd"); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("missing ref: %v", err)
	}
}

func TestSignCSRUsesTheSelectedCA(t *testing.T) {
	m, b, _ := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	ctx := request.With(context.Background(), &request.Context{ProjectID: "p", UserID: "u"})
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	all := b.all()
	csr := makeCSR(t, pkix.Name{CommonName: "system:node:n0", Organization: []string{"system:nodes"}})
	for caType, ref := range map[string]string{"": *c.CACertRef, "etcd": *c.EtcdCACertRef, "front-proxy": *c.FrontProxyCACertRef} {
		out, err := m.SignCSR(ctx, c, csr, caType)
		if err != nil {
			t.Fatalf("%q: %v", caType, err)
		}
		cert := parseCert(t, out)
		ca := parseCert(t, all[ref].Certificate)
		if err := cert.CheckSignatureFrom(ca); err != nil {
			t.Fatalf("%q: not signed by its CA: %v", caType, err)
		}
		if cert.Subject.CommonName != "system:node:n0" || cert.DNSNames[0] != "node-0" || strings.HasSuffix(out, "\n") {
			t.Fatalf("%q: %v", caType, cert.Subject)
		}
	}
	// Signing stores nothing: the backend holds the cluster's four
	// certificates, as before.
	if after := b.all(); len(after) != len(all) {
		t.Fatalf("the backend holds %d certificates after signing, %d before", len(after), len(all))
	}
}

func TestSignCSRSystemMastersNeedsAdmin(t *testing.T) {
	csr := makeCSR(t, pkix.Name{CommonName: "evil", Organization: []string{"system:masters"}})
	user := request.With(context.Background(), &request.Context{ProjectID: "p", UserID: "u"})
	admin := request.With(context.Background(), &request.Context{ProjectID: "p", UserID: "u", IsAdmin: true})
	tests := []struct {
		name    string
		opts    Options
		ctx     context.Context
		allowed bool
	}{
		{"refused for a user by default", Options{}, user, false},
		{"signed for an admin", Options{}, admin, true},
		{"signed for a user when turned off", Options{AllowSystemMastersCSR: true}, user, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, _ := newTestManager(t, tt.opts)
			c := testCluster("k8s-1")
			if err := m.GenerateForCluster(user, c); err != nil {
				t.Fatal(err)
			}
			_, err := m.SignCSR(tt.ctx, c, csr, "")
			if tt.allowed && err != nil {
				t.Fatal(err)
			}
			if !tt.allowed && (!isClass(err, exception.ClassNotAuthorized) || !strings.Contains(err.Error(), "system:masters")) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestSignCSRBadInput(t *testing.T) {
	m, b, _ := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	ctx := context.Background()
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	good := makeCSR(t, pkix.Name{CommonName: "n"})
	if _, err := m.SignCSR(ctx, c, "garbage", ""); !isClass(err, exception.ClassInvalidCsr) {
		t.Fatalf("garbage: %v", err)
	}
	// Corrupt stored key / wrong passphrase / broken certificate.
	orig := b.all()[*c.CACertRef]
	for name, mutate := range map[string]func(store.Cert) store.Cert{
		"wrong passphrase": func(s store.Cert) store.Cert { s.Passphrase = "aaaaaaaaaaaa"; return s },
		"missing key":      func(s store.Cert) store.Cert { s.PrivateKey = ""; return s },
		"corrupt key":      func(s store.Cert) store.Cert { s.PrivateKey = strings.Replace(s.PrivateKey, "A", "B", 20); return s },
		"corrupt cert": func(s store.Cert) store.Cert {
			s.Certificate = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			b.mu.Lock()
			b.certs[*c.CACertRef] = mutate(orig)
			b.mu.Unlock()
			_, err := m.SignCSR(ctx, c, good, "")
			if !isClass(err, exception.ClassCertificateStorageException) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	b.mu.Lock()
	b.certs[*c.CACertRef] = orig
	b.mu.Unlock()
	c2 := testCluster("x")
	if _, err := m.SignCSR(ctx, c2, good, ""); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("cluster without CA: %v", err)
	}
	b.failGets = true
	if _, err := m.SignCSR(ctx, c, good, ""); !isClass(err, exception.ClassCertificateStorageException) {
		t.Fatalf("backend down: %v", err)
	}
}

func TestDeleteForClusterDeletesAllFourAndLogsFailures(t *testing.T) {
	m, b, logs := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	b.failDel[*c.EtcdCACertRef] = true
	if err := m.DeleteForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	left := b.all()
	if len(left) != 1 || left[*c.EtcdCACertRef].Certificate == "" {
		t.Fatalf("left %v", len(left))
	}
	if !strings.Contains(logs.String(), *c.EtcdCACertRef) || !strings.Contains(logs.String(), "deleting certificate failed") {
		t.Fatal("failure not logged")
	}
	delete(b.failDel, *c.EtcdCACertRef)
	if err := m.DeleteForCluster(context.Background(), c); err != nil || b.len() != 0 {
		t.Fatalf("second delete: %v, %d left", err, b.len())
	}
}

func TestRotateReturnsOldRefsAndInvalidatesClientFiles(t *testing.T) {
	cache := t.TempDir()
	m, b, _ := newTestManager(t, Options{TempCacheDir: cache})
	ctx := context.Background()
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	ca1, cert1, key1, err := m.ClientCredentials(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	oldRefs := ClusterRefs(c)
	old, err := m.RotateForCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(old, ",") != strings.Join(oldRefs.List(), ",") {
		t.Fatalf("old %v want %v", old, oldRefs.List())
	}
	newRefs := ClusterRefs(c)
	for _, r := range newRefs.List() {
		for _, o := range old {
			if r == o {
				t.Fatal("ref reused")
			}
		}
	}
	if b.len() != 8 {
		t.Fatalf("old certificates must stay until the driver accepted the new ones: %d", b.len())
	}
	if _, err := os.Stat(filepath.Join(cache, *c.UUID)); !os.IsNotExist(err) {
		t.Fatal("client files not invalidated")
	}
	ca2, cert2, key2, err := m.ClientCredentials(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ca1, ca2) || bytes.Equal(cert1, cert2) || bytes.Equal(key1, key2) {
		t.Fatal("old credentials served after rotation")
	}
	m.DeleteRefs(ctx, *c.UUID, old)
	if b.len() != 4 {
		t.Fatalf("%d left after deleting the old refs", b.len())
	}
	for _, r := range newRefs.List() {
		if _, ok := b.all()[r]; !ok {
			t.Fatal("new certificate deleted")
		}
	}
}

func TestClientCredentialsCachesAtomicallyWithMode0600(t *testing.T) {
	cache := t.TempDir()
	m, b, _ := newTestManager(t, Options{TempCacheDir: cache})
	ctx := context.Background()
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	caPEM, certPEM, keyPEM, err := m.ClientCredentials(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(keyPEM, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Fatal("key not decrypted PKCS#8")
	}
	key, err := pkcs8.Decrypt(keyPEM, nil)
	if err != nil || !key.Public().(*rsa.PublicKey).Equal(parseCert(t, string(certPEM)).PublicKey) {
		t.Fatal("key does not match the client certificate")
	}
	if string(caPEM) != b.all()[*c.CACertRef].Certificate {
		t.Fatal("CA differs")
	}
	dir := filepath.Join(cache, *c.UUID)
	entries, _ := os.ReadDir(dir)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", e.Name(), fi.Mode())
		}
	}
	if strings.Join(names, ",") != "ca.crt,client.crt,client.key,refs" {
		t.Fatalf("cache files %v (temporary files left?)", names)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode())
	}
	gets := b.gets
	ca2, cert2, key2, err := m.ClientCredentials(ctx, c)
	if err != nil || b.gets != gets {
		t.Fatalf("cache not used: %v, %d gets", err, b.gets-gets)
	}
	if !bytes.Equal(caPEM, ca2) || !bytes.Equal(certPEM, cert2) || !bytes.Equal(keyPEM, key2) {
		t.Fatal("cached content differs")
	}
	// A cache written for other refs (e.g. by a conductor before a rotation
	// elsewhere) is not trusted.
	if err := os.WriteFile(filepath.Join(dir, "refs"), []byte("x\ny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := m.ClientCredentials(ctx, c); err != nil || b.gets == gets {
		t.Fatalf("stale cache used: %v", err)
	}
	if err := m.DeleteForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("client files not deleted with the cluster")
	}
}

func TestClientCredentialsWithoutCacheDir(t *testing.T) {
	m, b, _ := newTestManager(t, Options{TempCacheDir: filepath.Join(t.TempDir(), "absent")})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, _, err := m.ClientCredentials(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if b.gets != 4 {
		t.Fatalf("%d gets, want 4 (no cache)", b.gets)
	}
	if _, err := os.Stat(m.opts.TempCacheDir); !os.IsNotExist(err) {
		t.Fatal("cache dir created")
	}
}

func TestNewSelectsBackendByType(t *testing.T) {
	logs := &testkit.SyncBuffer{}
	for typ, want := range map[string]string{"": "barbican", "barbican": "barbican", "local": "local"} {
		m, err := New(Options{CertManagerType: typ, StoragePath: t.TempDir()}, nil, newLogger(logs))
		if err != nil || m.Backend().Type() != want {
			t.Fatalf("%q: %v", typ, err)
		}
	}
	if _, err := New(Options{CertManagerType: "x509keypair"}, nil, newLogger(logs)); err == nil {
		t.Fatal("x509keypair without a database accepted")
	}
	if _, err := New(Options{CertManagerType: "vault"}, nil, newLogger(logs)); err == nil {
		t.Fatal("unknown type accepted")
	}
}

func TestLocalBackendEndToEnd(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Options{CertManagerType: "local", StoragePath: dir, KeyPoolSize: -1}, nil, newLogger(&testkit.SyncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SignCSR(ctx, c, makeCSR(t, pkix.Name{CommonName: "n"}), "etcd"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 12 { // 4 x crt, key, pass
		t.Fatalf("%d files", len(entries))
	}
	if err := m.DeleteForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d files left", len(entries))
	}
}

func TestShortID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ShortID()
		if !shortIDPattern.MatchString(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

// TestNoSecretInLogs runs generate, sign, client credentials, rotate and
// delete with debug logging and looks for every passphrase, every private
// key (encrypted and decrypted) and a slice of each key body in the output.
func TestNoSecretInLogs(t *testing.T) {
	cache := t.TempDir()
	m, b, logs := newTestManager(t, Options{TempCacheDir: cache})
	ctx := request.With(context.Background(), &request.Context{ProjectID: "p", UserID: "u", RequestID: "req-1", AuthToken: "token-secret"})
	c := testCluster("k8s-1")
	var secrets []string
	collect := func() {
		for _, sc := range b.all() {
			secrets = append(secrets, sc.Passphrase, sc.PrivateKey, keyBody(sc.PrivateKey))
		}
	}
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	collect()
	if _, err := m.SignCSR(ctx, c, makeCSR(t, pkix.Name{CommonName: "n"}), ""); err != nil {
		t.Fatal(err)
	}
	_, _ = m.SignCSR(ctx, c, "not a csr", "")
	_, _ = m.SignCSR(ctx, c, makeCSR(t, pkix.Name{CommonName: "n", Organization: []string{"system:masters"}}), "")
	_, _, key, err := m.ClientCredentials(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, string(key), keyBody(string(key)))
	old, err := m.RotateForCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	collect()
	m.DeleteRefs(ctx, *c.UUID, old)
	b.failPut = func(int) error { return errors.New("down") }
	_ = m.GenerateForCluster(ctx, testCluster("other"))
	if err := m.DeleteForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "req-1") || !strings.Contains(out, "rotated cluster certificates") {
		t.Fatalf("expected log lines missing:\n%s", out)
	}
	secrets = append(secrets, "token-secret", "PRIVATE KEY")
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Fatalf("secret %.20q… logged", s)
		}
	}
}

// keyBody returns 32 base64 characters from the middle of a PEM key.
func keyBody(p string) string {
	lines := strings.Split(p, "\n")
	if len(lines) < 4 {
		return ""
	}
	l := lines[len(lines)/2]
	if _, err := base64.StdEncoding.DecodeString(l); err != nil || len(l) < 32 {
		return ""
	}
	return l[:32]
}

func TestClusterRefsOrder(t *testing.T) {
	c := &objects.Cluster{CACertRef: objects.Str("a"), EtcdCACertRef: objects.Str("b"), MagnumCertRef: objects.Str("d")}
	if got := strings.Join(ClusterRefs(c).List(), ","); got != "a,b,d" {
		t.Fatal(got)
	}
}
