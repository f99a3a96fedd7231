package certmanager

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/certmanager/pkcs8"
	"github.com/openstack/magnum-conductor/certmanager/store"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

type pyKeyPair struct {
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	Password string `json:"password"`
}

type pyAnswer struct {
	Decrypted    []string          `json:"decrypted"`
	Checks       map[string]string `json:"checks"`
	PythonSigned string            `json:"python_signed"`
	PyCA         pyKeyPair         `json:"py_ca"`
	PyClient     pyKeyPair         `json:"py_client"`
}

// TestPythonInterop exchanges keys and certificates with the real
// magnum.common.x509.operations (testdata/interop.py): Python decrypts our
// keys, verifies our CA, client and signed certificates and signs a CSR with
// our CA key; we decrypt Python's keys, verify its chain, and sign a CSR and
// serve client credentials with certificates Python generated. Once per
// Python release (pyrelease.Releases).
func TestPythonInterop(t *testing.T) {
	script, err := os.ReadFile("testdata/interop.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) { testPythonInterop(t, r, string(script)) })
	}
}

func testPythonInterop(t *testing.T, r pyrelease.Release, script string) {
	r.Require(t)
	m, b, _ := newTestManager(t, Options{RSAKeySize: 2048})
	ctx := context.Background()
	c := testCluster("interop-cluster")
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	all := b.all()
	ca, client := all[*c.CACertRef], all[*c.MagnumCertRef]
	signed, err := m.SignCSR(ctx, c, makeCSR(t, pkix.Name{CommonName: "system:node:n0"}), "")
	if err != nil {
		t.Fatal(err)
	}
	var goKeys []map[string]string
	var wantModuli []string
	for _, ref := range ClusterRefs(c).List() {
		sc := all[ref]
		goKeys = append(goKeys, map[string]string{"pem": sc.PrivateKey, "password": sc.Passphrase})
		wantModuli = append(wantModuli, fmt.Sprintf("%x", parseCert(t, sc.Certificate).PublicKey.(*rsa.PublicKey).N))
	}
	csrForPython := makeCSR(t, pkix.Name{CommonName: "signed-by-python", Organization: []string{"system:nodes"}})
	req, _ := json.Marshal(map[string]any{
		"go_keys":   goKeys,
		"go_chain":  map[string]string{"ca": ca.Certificate, "client": client.Certificate},
		"go_signed": map[string]string{"ca": ca.Certificate, "cert": signed},
		"go_ca":     map[string]string{"cert": ca.Certificate, "key": ca.PrivateKey, "password": ca.Passphrase, "issuer_name": "interop-cluster"},
		"csr":       csrForPython,
	})
	pyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := r.Python(pyCtx, "-c", script)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("interop.py: %v\n%s", err, stderr.String())
	}
	var ans pyAnswer
	if err := json.Unmarshal(out, &ans); err != nil {
		t.Fatalf("answer: %v\n%s", err, out)
	}

	t.Run("python decrypts our keys", func(t *testing.T) {
		if len(ans.Decrypted) != 4 {
			t.Fatalf("%d keys", len(ans.Decrypted))
		}
		for i := range wantModuli {
			if ans.Decrypted[i] != wantModuli[i] {
				t.Fatalf("key %d decrypted to another key", i)
			}
		}
	})
	t.Run("python verifies our certificates", func(t *testing.T) {
		for _, k := range []string{"go_ca", "go_client", "go_signed"} {
			if ans.Checks[k] != "ok" {
				t.Errorf("%s: %s", k, ans.Checks[k])
			}
		}
	})
	t.Run("python signs with our CA key", func(t *testing.T) {
		cert := parseCert(t, ans.PythonSigned)
		pool := x509.NewCertPool()
		pool.AddCert(parseCert(t, ca.Certificate))
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != "signed-by-python" {
			t.Fatal(cert.Subject)
		}
	})
	t.Run("we decrypt python keys and verify its chain", func(t *testing.T) {
		pyCA, pyClient := parseCert(t, ans.PyCA.Cert), parseCert(t, ans.PyClient.Cert)
		for _, kp := range []pyKeyPair{ans.PyCA, ans.PyClient} {
			key, err := pkcs8.Decrypt([]byte(kp.Key), []byte(kp.Password))
			if err != nil {
				t.Fatal(err)
			}
			if !key.Public().(*rsa.PublicKey).Equal(parseCert(t, kp.Cert).PublicKey) {
				t.Fatal("python key does not match its certificate")
			}
		}
		pool := x509.NewCertPool()
		pool.AddCert(pyCA)
		if _, err := pyClient.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("we sign and serve credentials with python certificates", func(t *testing.T) {
		pm, pb, _ := newTestManager(t, Options{TempCacheDir: t.TempDir()})
		caRef, _ := pb.Store(ctx, store.Cert{Certificate: ans.PyCA.Cert, PrivateKey: ans.PyCA.Key, Passphrase: ans.PyCA.Password}, "py-cluster")
		clRef, _ := pb.Store(ctx, store.Cert{Certificate: ans.PyClient.Cert, PrivateKey: ans.PyClient.Key, Passphrase: ans.PyClient.Password}, ClientCertName)
		pc := &objects.Cluster{UUID: objects.Str("1d0c1b7e-7a8e-4c55-9a43-6a8c5e2f7b10"), Name: objects.Str("py-cluster"),
			CACertRef: &caRef, MagnumCertRef: &clRef}
		out, err := pm.SignCSR(ctx, pc, makeCSR(t, pkix.Name{CommonName: "n"}), "")
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(parseCert(t, ans.PyCA.Cert))
		if _, err := parseCert(t, out).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Fatalf("Go-signed cert does not chain to the Python CA: %v", err)
		}
		_, certPEM, keyPEM, err := pm.ClientCredentials(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		key, err := pkcs8.Decrypt(keyPEM, nil)
		if err != nil || !key.Public().(*rsa.PublicKey).Equal(parseCert(t, string(certPEM)).PublicKey) {
			t.Fatalf("client key: %v", err)
		}
	})
}
