package certmanager

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager/store"
)

func TestCAKeyPairReturnsEachCAWithItsDecryptedKey(t *testing.T) {
	m, b, _ := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	all := b.all()
	for _, tc := range []struct {
		caType string
		ref    string
	}{
		{"", *c.CACertRef},
		{"etcd", *c.EtcdCACertRef},
		{"front_proxy", *c.FrontProxyCACertRef},
		{"front-proxy", *c.FrontProxyCACertRef},
	} {
		t.Run("type="+tc.caType, func(t *testing.T) {
			certPEM, keyPEM, err := m.CAKeyPair(context.Background(), c, tc.caType)
			if err != nil {
				t.Fatal(err)
			}
			if string(certPEM) != all[tc.ref].Certificate {
				t.Fatalf("certificate is not the one stored under %s", tc.ref)
			}
			blk, rest := pem.Decode(keyPEM)
			if blk == nil || blk.Type != "PRIVATE KEY" || len(strings.TrimSpace(string(rest))) != 0 {
				t.Fatalf("key is not one unencrypted PKCS#8 PEM block: %v", blk)
			}
			key, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCert(t, string(certPEM))
			if !cert.IsCA {
				t.Fatal("not a CA certificate")
			}
			pub := key.(crypto.Signer).Public().(interface{ Equal(crypto.PublicKey) bool })
			if !pub.Equal(cert.PublicKey) {
				t.Fatal("key does not match the certificate's public key")
			}
		})
	}
}

func TestCAKeyPairErrors(t *testing.T) {
	m, b, _ := newTestManager(t, Options{})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Run("missing ref", func(t *testing.T) {
		c2 := *c
		c2.EtcdCACertRef = nil
		_, _, err := m.CAKeyPair(context.Background(), &c2, "etcd")
		if !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), "has no etcd CA certificate") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("wrong passphrase", func(t *testing.T) {
		ref := *c.CACertRef
		b.mu.Lock()
		sc := b.certs[ref]
		sc.Passphrase = "wrong"
		b.certs[ref] = sc
		b.mu.Unlock()
		_, _, err := m.CAKeyPair(context.Background(), c, "")
		if !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), "cannot be decrypted") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("key of another certificate", func(t *testing.T) {
		all := b.all()
		etcd, proxy := all[*c.EtcdCACertRef], all[*c.FrontProxyCACertRef]
		b.mu.Lock()
		b.certs[*c.EtcdCACertRef] = store.Cert{Certificate: etcd.Certificate, PrivateKey: proxy.PrivateKey, Passphrase: proxy.Passphrase}
		b.mu.Unlock()
		_, _, err := m.CAKeyPair(context.Background(), c, "etcd")
		if !isClass(err, exception.ClassCertificateStorageException) || !strings.Contains(err.Error(), "does not match") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("backend failure", func(t *testing.T) {
		b.mu.Lock()
		b.failGets = true
		b.mu.Unlock()
		defer func() { b.mu.Lock(); b.failGets = false; b.mu.Unlock() }()
		if _, _, err := m.CAKeyPair(context.Background(), c, "front_proxy"); !isClass(err, exception.ClassCertificateStorageException) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCAKeyPairLogsNoKeyMaterial(t *testing.T) {
	m, b, logs := newTestManager(t, Options{})
	ctx := request.With(context.Background(), &request.Context{ProjectID: "p", UserID: "u", RequestID: "req-ca", AuthToken: "token-secret"})
	c := testCluster("k8s-1")
	if err := m.GenerateForCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, sc := range b.all() {
		secrets = append(secrets, sc.Passphrase, keyBody(sc.PrivateKey))
	}
	for _, typ := range []string{"", "etcd", "front_proxy"} {
		_, key, err := m.CAKeyPair(ctx, c, typ)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, keyBody(string(key)))
	}
	out := logs.String()
	if !strings.Contains(out, "read CA key pair") || !strings.Contains(out, "req-ca") {
		t.Fatalf("expected log lines missing:\n%s", out)
	}
	secrets = append(secrets, "token-secret", "PRIVATE KEY")
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Fatalf("secret %.20q… logged", s)
		}
	}
}
