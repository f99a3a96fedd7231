package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
)

var (
	keysOnce sync.Once
	keys     []*rsa.PrivateKey
)

func testKey(t testing.TB, i int) *rsa.PrivateKey {
	keysOnce.Do(func() {
		for range 4 {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys = append(keys, k)
		}
	})
	return keys[i]
}

var fixedNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))

func testIssuer() Issuer {
	return Issuer{TermOfValidityDays: 30, Now: func() time.Time { return fixedNow }}
}

func newCA(t *testing.T, name string) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key := testKey(t, 0)
	der, err := testIssuer().NewCA(key, name)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func extByOID(c *x509.Certificate, oid asn1.ObjectIdentifier) *pkix.Extension {
	for i := range c.Extensions {
		if c.Extensions[i].Id.Equal(oid) {
			return &c.Extensions[i]
		}
	}
	return nil
}

func TestNewCAHasMagnumFields(t *testing.T) {
	ca, key := newCA(t, "k8s-cluster")
	wantName, _ := Name("k8s-cluster", "")
	if !bytes.Equal(ca.RawSubject, wantName) || !bytes.Equal(ca.RawIssuer, wantName) {
		t.Fatalf("subject %v issuer %v", ca.Subject, ca.Issuer)
	}
	// CN is a UTF8String, as cryptography writes it.
	if !bytes.Contains(ca.RawSubject, append([]byte{asn1.TagUTF8String, byte(len("k8s-cluster"))}, "k8s-cluster"...)) {
		t.Fatal("CN not encoded as UTF8String")
	}
	if ca.SignatureAlgorithm != x509.SHA256WithRSA || ca.PublicKeyAlgorithm != x509.RSA {
		t.Fatalf("alg %v %v", ca.SignatureAlgorithm, ca.PublicKeyAlgorithm)
	}
	if pub := ca.PublicKey.(*rsa.PublicKey); pub.E != 65537 || pub.N.BitLen() != 2048 || !pub.Equal(key.Public()) {
		t.Fatal("public key")
	}
	wantBefore := fixedNow.UTC().Add(-24 * time.Hour)
	if !ca.NotBefore.Equal(wantBefore) || !ca.NotAfter.Equal(fixedNow.UTC().AddDate(0, 0, 30)) {
		t.Fatalf("validity %v..%v", ca.NotBefore, ca.NotAfter)
	}
	if ca.SerialNumber.Sign() <= 0 || ca.SerialNumber.BitLen() > 128 || ca.SerialNumber.BitLen() < 64 {
		t.Fatalf("serial %v", ca.SerialNumber)
	}
	if !ca.BasicConstraintsValid || !ca.IsCA || ca.MaxPathLen != 0 || !ca.MaxPathLenZero {
		t.Fatalf("basic constraints %v %v %v", ca.IsCA, ca.MaxPathLen, ca.MaxPathLenZero)
	}
	if ca.KeyUsage != x509.KeyUsageCertSign || len(ca.ExtKeyUsage) != 0 {
		t.Fatalf("key usage %v %v", ca.KeyUsage, ca.ExtKeyUsage)
	}
	if e := extByOID(ca, oidExtBasicConstr); e == nil || !e.Critical {
		t.Fatal("basicConstraints must be critical")
	}
	if e := extByOID(ca, oidExtKeyUsage); e == nil || !e.Critical {
		t.Fatal("keyUsage must be critical")
	}
	ski, _ := SubjectKeyID(key.Public())
	if e := extByOID(ca, oidExtSKI); e == nil || e.Critical || !bytes.Equal(ca.SubjectKeyId, ski) {
		t.Fatal("SKI missing, critical or not RFC 5280 method 1")
	}
	if len(ca.AuthorityKeyId) != 0 || len(ca.Extensions) != 3 {
		t.Fatalf("unexpected extensions: %d, aki %x", len(ca.Extensions), ca.AuthorityKeyId)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientIsAdminSignedByCA(t *testing.T) {
	ca, caKey := newCA(t, "cluster-1")
	clientKey := testKey(t, 1)
	der, err := testIssuer().NewClient(clientKey.Public(), "admin", "system:masters", ca, caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject.CommonName != "admin" || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "system:masters" {
		t.Fatalf("subject %v", c.Subject)
	}
	wantSubject, _ := Name("admin", "system:masters")
	if !bytes.Equal(c.RawSubject, wantSubject) || !bytes.Equal(c.RawIssuer, ca.RawSubject) {
		t.Fatalf("subject %v issuer %v", c.Subject, c.Issuer)
	}
	if c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Fatalf("key usage %v", c.KeyUsage)
	}
	if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Fatalf("eku %v", c.ExtKeyUsage)
	}
	if !c.BasicConstraintsValid || c.IsCA {
		t.Fatal("must be CA:FALSE")
	}
	if e := extByOID(c, oidExtBasicConstr); !e.Critical {
		t.Fatal("basicConstraints must be critical")
	}
	if e := extByOID(c, oidExtKeyUsage); !e.Critical {
		t.Fatal("keyUsage must be critical")
	}
	if e := extByOID(c, oidExtExtKeyUsage); e.Critical {
		t.Fatal("extendedKeyUsage must not be critical")
	}
	if len(c.AuthorityKeyId) != 0 || len(c.SubjectKeyId) == 0 || len(c.Extensions) != 4 {
		t.Fatal("expected ku, eku, bc, ski and no aki")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	at := fixedNow.Add(time.Hour)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("chain: %v", err)
	}
	// A certificate from another CA with the same name does not verify.
	other, _ := testIssuer().NewCA(testKey(t, 2), "cluster-1")
	otherCA, _ := x509.ParseCertificate(other)
	roots2 := x509.NewCertPool()
	roots2.AddCert(otherCA)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots2, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Fatal("verified against the wrong CA")
	}
	// The CA key must match the CA certificate.
	if _, err := testIssuer().NewClient(clientKey.Public(), "admin", "", ca, testKey(t, 3)); err == nil {
		t.Fatal("signed with a key that is not the CA's")
	}
}

type csrSpec struct {
	subject pkix.Name
	exts    []pkix.Extension
	dns     []string
	ips     []net.IP
}

func makeCSR(t *testing.T, s csrSpec) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: s.subject, ExtraExtensions: s.exts, DNSNames: s.dns, IPAddresses: s.ips,
	}, testKey(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func ku(t *testing.T, critical bool, bits ...int) pkix.Extension {
	var u [9]bool
	for _, b := range bits {
		u[b] = true
	}
	v, err := keyUsage(u)
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: oidExtKeyUsage, Critical: critical, Value: v}
}

func bc(t *testing.T, critical, isCA bool) pkix.Extension {
	v, err := basicConstraints(isCA, -1)
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: oidExtBasicConstr, Critical: critical, Value: v}
}

func sign(t *testing.T, csrPEM string, p Policy) (*x509.Certificate, error) {
	t.Helper()
	ca, caKey := newCA(t, "cluster-1")
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	der, err := testIssuer().SignCSR(csr, ca, caKey, p)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckSignatureFrom(ca); err != nil {
		t.Fatalf("signature: %v", err)
	}
	return c, nil
}

func isClass(err error, class exception.Class) bool { return errors.Is(err, class.New(nil)) }

func TestSignCSRFiltersExtensionsAsMagnum(t *testing.T) {
	ekuServer, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 1}})
	ski := pkix.Extension{Id: oidExtSKI, Value: []byte{0x04, 0x03, 1, 2, 3}}
	policyConstraints := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 36}, Value: []byte{0x30, 0x03, 0x80, 0x01, 0x00}}
	unknown := pkix.Extension{Id: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: []byte{0x05, 0x00}}

	tests := []struct {
		name    string
		spec    csrSpec
		policy  Policy
		wantErr bool // CertificateValidationError
		check   func(t *testing.T, c *x509.Certificate)
	}{
		{
			name: "subject copied verbatim and SANs pass through",
			spec: csrSpec{subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}, Country: []string{"DE"}},
				dns: []string{"n1.example"}, ips: []net.IP{net.ParseIP("10.0.0.1")}},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "system:node:n1" || c.Subject.Organization[0] != "system:nodes" || c.Subject.Country[0] != "DE" {
					t.Fatalf("subject %v", c.Subject)
				}
				if len(c.DNSNames) != 1 || c.DNSNames[0] != "n1.example" || !c.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
					t.Fatalf("SAN %v %v", c.DNSNames, c.IPAddresses)
				}
				if c.Issuer.CommonName != "cluster-1" || len(c.SubjectKeyId) == 0 || len(c.AuthorityKeyId) != 0 {
					t.Fatal("issuer/SKI/AKI")
				}
			},
		},
		{
			name: "empty subject is signed as Magnum does",
			spec: csrSpec{dns: []string{"only-san"}},
			check: func(t *testing.T, c *x509.Certificate) {
				if len(c.Subject.Names) != 0 || c.DNSNames[0] != "only-san" {
					t.Fatalf("subject %v", c.Subject)
				}
			},
		},
		{
			name: "CSR carrying SKI is signed and keeps it (§K.8)",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ski}},
			check: func(t *testing.T, c *x509.Certificate) {
				if !bytes.Equal(c.SubjectKeyId, []byte{1, 2, 3}) {
					t.Fatalf("SKI %x", c.SubjectKeyId)
				}
				n := 0
				for _, e := range c.Extensions {
					if e.Id.Equal(oidExtSKI) {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("%d SKI extensions", n)
				}
			},
		},
		{
			name: "disallowed non-critical extension dropped",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{policyConstraints, unknown}},
			check: func(t *testing.T, c *x509.Certificate) {
				if extByOID(c, policyConstraints.Id) != nil || extByOID(c, unknown.Id) != nil {
					t.Fatal("disallowed extension kept")
				}
			},
		},
		{
			name:    "disallowed critical extension refused",
			spec:    csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{{Id: policyConstraints.Id, Critical: true, Value: policyConstraints.Value}}},
			wantErr: true,
		},
		{
			name: "non-critical key usages outside the allowed set are cleared",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, false, kuDigitalSignature, kuKeyEncipherment, 3, kuKeyCertSign, kuCRLSign)}},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
					t.Fatalf("key usage %b", c.KeyUsage)
				}
				if extByOID(c, oidExtKeyUsage).Critical {
					t.Fatal("criticality changed")
				}
			},
		},
		{
			name: "allowed critical key usages are kept critical",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, true, kuDigitalSignature, 1), {Id: oidExtExtKeyUsage, Value: ekuServer}}},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageContentCommitment || !extByOID(c, oidExtKeyUsage).Critical {
					t.Fatalf("key usage %b", c.KeyUsage)
				}
				if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
					t.Fatalf("eku %v", c.ExtKeyUsage)
				}
			},
		},
		{
			name: "non-critical key usage with nothing allowed becomes empty",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, false, 3)}},
			check: func(t *testing.T, c *x509.Certificate) {
				e := extByOID(c, oidExtKeyUsage)
				if e == nil || c.KeyUsage != 0 || !bytes.Equal(e.Value, []byte{0x03, 0x01, 0x00}) {
					t.Fatalf("key usage %b %v", c.KeyUsage, e)
				}
			},
		},
		{
			name:    "critical key usage outside the allowed set refused",
			spec:    csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, true, kuDigitalSignature, kuKeyCertSign)}},
			wantErr: true,
		},
		{
			name:    "Certificate Sign refused even when configured, unless allow_ca",
			spec:    csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, true, kuKeyCertSign)}},
			policy:  Policy{AllowedKeyUsage: []string{"Certificate Sign"}},
			wantErr: true,
		},
		{
			name:   "Certificate Sign allowed with allow_ca",
			spec:   csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, true, kuKeyCertSign), bc(t, true, true)}},
			policy: Policy{AllowCA: true, AllowedKeyUsage: []string{"Certificate Sign"}},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.KeyUsage != x509.KeyUsageCertSign || !c.IsCA {
					t.Fatal("CA usage not kept")
				}
			},
		},
		{
			name: "non-critical CA:TRUE becomes non-critical CA:FALSE",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{bc(t, false, true)}},
			check: func(t *testing.T, c *x509.Certificate) {
				if !c.BasicConstraintsValid || c.IsCA || extByOID(c, oidExtBasicConstr).Critical {
					t.Fatal("CA:TRUE not replaced")
				}
			},
		},
		{
			name:    "critical CA:TRUE refused",
			spec:    csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{bc(t, true, true)}},
			wantErr: true,
		},
		{
			name: "critical CA:FALSE kept",
			spec: csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{bc(t, true, false)}},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.IsCA || !extByOID(c, oidExtBasicConstr).Critical {
					t.Fatal("basic constraints changed")
				}
			},
		},
		{
			name:    "empty allowed_extensions refuses any critical extension",
			spec:    csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{ku(t, true, kuDigitalSignature)}},
			policy:  Policy{AllowedExtensions: []string{}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := sign(t, makeCSR(t, tt.spec), tt.policy)
			if tt.wantErr {
				if !isClass(err, exception.ClassCertificateValidationError) {
					t.Fatalf("err = %v, want CertificateValidationError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.NotBefore.Equal(fixedNow.UTC().Add(-24*time.Hour)) || !c.NotAfter.Equal(fixedNow.UTC().AddDate(0, 0, 30)) {
				t.Fatalf("validity %v %v", c.NotBefore, c.NotAfter)
			}
			tt.check(t, c)
		})
	}
}

func TestCertificateValidationErrorNamesTheExtension(t *testing.T) {
	_, err := sign(t, makeCSR(t, csrSpec{subject: pkix.Name{CommonName: "x"}, exts: []pkix.Extension{bc(t, true, true)}}), Policy{})
	if err == nil || err.Error() != "Extension 'basicConstraints' not allowed" {
		t.Fatalf("err = %v", err)
	}
}

func TestParseCSRRejectsGarbageAndBadSignatures(t *testing.T) {
	good := makeCSR(t, csrSpec{subject: pkix.Name{CommonName: "x"}})
	block, _ := pem.Decode([]byte(good))
	tampered := bytes.Clone(block.Bytes)
	// The subject CN "x" is inside the signed part; change it to "y".
	i := bytes.LastIndex(tampered, []byte{0x0c, 0x01, 'x'})
	if i < 0 {
		i = bytes.LastIndex(tampered, []byte{0x13, 0x01, 'x'})
	}
	tampered[i+2] = 'y'
	cases := map[string]string{
		"empty":         "",
		"not PEM":       "hello",
		"wrong type":    strings.ReplaceAll(good, "CERTIFICATE REQUEST", "CERTIFICATE"),
		"not DER":       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("junk")})),
		"bad signature": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCSR(in)
			if !isClass(err, exception.ClassInvalidCsr) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := ParseCSR(good); err != nil {
		t.Fatal(err)
	}
}

func TestHasOrganization(t *testing.T) {
	csr, _ := ParseCSR(makeCSR(t, csrSpec{subject: pkix.Name{CommonName: "x", Organization: []string{"a", "system:masters"}}}))
	if !HasOrganization(csr, "system:masters") {
		t.Fatal("not found")
	}
	csr, _ = ParseCSR(makeCSR(t, csrSpec{subject: pkix.Name{CommonName: "system:masters"}}))
	if HasOrganization(csr, "system:masters") {
		t.Fatal("CN mistaken for O")
	}
}

func TestKeyUsageEncodingMatchesDER(t *testing.T) {
	// keyCertSign only: 03 02 02 04 (bit 5, 2 unused bits), as OpenSSL writes.
	v, _ := keyUsage([9]bool{kuKeyCertSign: true})
	if !bytes.Equal(v, []byte{0x03, 0x02, 0x02, 0x04}) {
		t.Fatalf("%x", v)
	}
	// digitalSignature + keyEncipherment: 03 02 05 a0.
	v, _ = keyUsage([9]bool{kuDigitalSignature: true, kuKeyEncipherment: true})
	if !bytes.Equal(v, []byte{0x03, 0x02, 0x05, 0xa0}) {
		t.Fatalf("%x", v)
	}
	// decipherOnly (bit 8) needs a second byte.
	v, _ = keyUsage([9]bool{kuKeyAgreement: true, kuDecipherOnly: true})
	if !bytes.Equal(v, []byte{0x03, 0x03, 0x07, 0x08, 0x80}) {
		t.Fatalf("%x", v)
	}
}
