// Package pki issues the X.509 certificates of a Magnum cluster with the
// standard library: self-signed CAs, the conductor's client certificate and
// certificates signed from a node's CSR, with the key types, extensions,
// subjects and validity of magnum.common.x509.operations.
//
// Differences from Magnum, all compatible on the wire:
//   - dates are real UTC (Magnum uses local naive time as UTC, §K.6);
//   - every certificate carries a SubjectKeyIdentifier as Magnum master does,
//     but a CSR that already asks for one keeps it instead of failing (§K.8);
//   - a CSR's signature is checked (Magnum only parses it).
package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // SubjectKeyID: RFC 5280 method 1, an identifier, not a signature
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
)

// Defaults of the [x509] group.
const (
	DefaultTermOfValidityDays = 1825
	DefaultRSAKeySize         = 2048
)

// DefaultAllowedExtensions is the default of [x509]allowed_extensions.
func DefaultAllowedExtensions() []string {
	return []string{"keyUsage", "extendedKeyUsage", "subjectAltName", "basicConstraints", "subjectKeyIdentifier"}
}

// DefaultAllowedKeyUsage is the default of [x509]allowed_key_usage.
func DefaultAllowedKeyUsage() []string {
	return []string{"Digital Signature", "Key Encipherment", "Non Repudiation"}
}

// keyUsageNames are the names of the KeyUsage bits 0..8
// (magnum.common.x509.extensions.KeyUsages).
var keyUsageNames = [9]string{
	"Digital Signature", "Non Repudiation", "Key Encipherment", "Data Encipherment", "Key Agreement",
	"Certificate Sign", "CRL Sign", "Encipher Only", "Decipher Only",
}

const (
	kuDigitalSignature = 0
	kuKeyEncipherment  = 2
	kuKeyAgreement     = 4
	kuKeyCertSign      = 5
	kuCRLSign          = 6
	kuEncipherOnly     = 7
	kuDecipherOnly     = 8
)

var (
	oidCommonName            = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization          = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidExtSKI                = asn1.ObjectIdentifier{2, 5, 29, 14}
	oidExtKeyUsage           = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidExtBasicConstr        = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidExtExtKeyUsage        = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidExtKeyUsageClientAuth = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 2}
)

// oidNames maps an extension OID to the short name cryptography's _OID_NAMES
// gives it, which is what allowed_extensions is matched against.
func oidName(oid asn1.ObjectIdentifier) string {
	switch oid.String() {
	case "2.5.29.9":
		return "subjectDirectoryAttributes"
	case "2.5.29.14":
		return "subjectKeyIdentifier"
	case "2.5.29.15":
		return "keyUsage"
	case "2.5.29.17":
		return "subjectAltName"
	case "2.5.29.18":
		return "issuerAltName"
	case "2.5.29.19":
		return "basicConstraints"
	case "1.3.6.1.4.1.11129.2.4.2", "1.3.6.1.4.1.11129.2.4.5":
		return "signedCertificateTimestampList"
	case "1.3.6.1.4.1.11129.2.4.3":
		return "ctPoison"
	case "2.5.29.30":
		return "nameConstraints"
	case "2.5.29.31":
		return "cRLDistributionPoints"
	case "2.5.29.32":
		return "certificatePolicies"
	case "2.5.29.33":
		return "policyMappings"
	case "2.5.29.35":
		return "authorityKeyIdentifier"
	case "2.5.29.36":
		return "policyConstraints"
	case "2.5.29.37":
		return "extendedKeyUsage"
	case "2.5.29.46":
		return "freshestCRL"
	case "2.5.29.54":
		return "inhibitAnyPolicy"
	case "1.3.6.1.5.5.7.1.1":
		return "authorityInfoAccess"
	case "1.3.6.1.5.5.7.1.11":
		return "subjectInfoAccess"
	case "1.3.6.1.5.5.7.48.1.5":
		return "OCSPNoCheck"
	case "1.3.6.1.5.5.7.1.24":
		return "TLSFeature"
	}
	return ""
}

// Policy is the CSR extension filter of magnum.common.x509.validator
// ([x509]allow_ca, allowed_extensions, allowed_key_usage).
type Policy struct {
	AllowCA           bool
	AllowedExtensions []string
	AllowedKeyUsage   []string
}

// Issuer issues certificates valid for TermOfValidityDays days from
// one day before Now.
type Issuer struct {
	TermOfValidityDays int
	// Now returns the current time; nil means time.Now. Always used in UTC.
	Now func() time.Time
}

func (is Issuer) validity() (notBefore, notAfter time.Time) {
	now := time.Now
	if is.Now != nil {
		now = is.Now
	}
	t := now().UTC().Truncate(time.Second)
	days := is.TermOfValidityDays
	if days <= 0 {
		days = DefaultTermOfValidityDays
	}
	return t.Add(-24 * time.Hour), t.AddDate(0, 0, days)
}

// Name returns the DER subject Magnum writes: CN (then O when not empty),
// each in its own RDN, as UTF8String, so that issuer and subject compare
// byte for byte with certificates written by Python.
func Name(commonName, organization string) ([]byte, error) {
	rdn := pkix.RDNSequence{{{Type: oidCommonName, Value: utf8(commonName)}}}
	if organization != "" {
		rdn = append(rdn, pkix.RelativeDistinguishedNameSET{{Type: oidOrganization, Value: utf8(organization)}})
	}
	return asn1.Marshal(rdn)
}

func utf8(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte(s)}
}

// NewCA returns the DER of a self-signed CA certificate for key with
// subject and issuer CN=commonName: basicConstraints critical CA:TRUE
// pathlen:0, keyUsage critical keyCertSign, SKI.
func (is Issuer) NewCA(key crypto.Signer, commonName string) ([]byte, error) {
	subject, err := Name(commonName, "")
	if err != nil {
		return nil, err
	}
	bc, err := basicConstraints(true, 0)
	if err != nil {
		return nil, err
	}
	ku, err := keyUsage([9]bool{kuKeyCertSign: true})
	if err != nil {
		return nil, err
	}
	exts := []pkix.Extension{
		{Id: oidExtBasicConstr, Critical: true, Value: bc},
		{Id: oidExtKeyUsage, Critical: true, Value: ku},
	}
	tmpl, err := is.template(subject, key.Public(), exts)
	if err != nil {
		return nil, err
	}
	return x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
}

// NewClient returns the DER of a client certificate for pub with subject
// CN=commonName, O=organization, signed by the CA: keyUsage critical
// digitalSignature+keyEncipherment, extendedKeyUsage clientAuth,
// basicConstraints critical CA:FALSE, SKI.
func (is Issuer) NewClient(pub crypto.PublicKey, commonName, organization string, ca *x509.Certificate, caKey crypto.Signer) ([]byte, error) {
	subject, err := Name(commonName, organization)
	if err != nil {
		return nil, err
	}
	ku, err := keyUsage([9]bool{kuDigitalSignature: true, kuKeyEncipherment: true})
	if err != nil {
		return nil, err
	}
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{oidExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	bc, err := basicConstraints(false, -1)
	if err != nil {
		return nil, err
	}
	exts := []pkix.Extension{
		{Id: oidExtKeyUsage, Critical: true, Value: ku},
		{Id: oidExtExtKeyUsage, Critical: false, Value: eku},
		{Id: oidExtBasicConstr, Critical: true, Value: bc},
	}
	tmpl, err := is.template(subject, pub, exts)
	if err != nil {
		return nil, err
	}
	return x509.CreateCertificate(rand.Reader, tmpl, issuerOf(ca), pub, caKey)
}

// ParseCSR parses a PEM CSR and checks its signature. Anything else raises
// InvalidCsr(csr).
func ParseCSR(csrPEM string) (*x509.CertificateRequest, error) {
	invalid := func(cause error) error {
		e := exception.ClassInvalidCsr.New(map[string]any{"csr": csrPEM})
		e.Cause = cause
		return e
	}
	block, _ := pem.Decode([]byte(csrPEM))
	if block == nil || block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, invalid(errors.New("no CERTIFICATE REQUEST PEM block"))
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, invalid(err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, invalid(fmt.Errorf("CSR signature: %w", err))
	}
	return csr, nil
}

// HasOrganization reports whether the CSR's subject carries O=org.
func HasOrganization(csr *x509.CertificateRequest, org string) bool {
	return slices.Contains(csr.Subject.Organization, org)
}

// SignCSR returns the DER of a certificate for csr signed by the CA: the
// subject copied verbatim, the CA's subject as issuer, the CSR's extensions
// filtered by policy, and an SKI unless the CSR carries an allowed one.
func (is Issuer) SignCSR(csr *x509.CertificateRequest, ca *x509.Certificate, caKey crypto.Signer, policy Policy) ([]byte, error) {
	exts, err := policy.Filter(csr.Extensions)
	if err != nil {
		return nil, err
	}
	tmpl, err := is.template(csr.RawSubject, csr.PublicKey, exts)
	if err != nil {
		return nil, err
	}
	return x509.CreateCertificate(rand.Reader, tmpl, issuerOf(ca), csr.PublicKey, caKey)
}

// Filter applies validator.filter_extensions: an extension whose short name
// is not allowed is dropped, or refused when critical; key usages that are
// not allowed are cleared, or refused when critical; CA:TRUE is replaced by
// a non-critical CA:FALSE, or refused when critical, unless AllowCA.
// Refusals are CertificateValidationError(extension=<name or OID>).
func (p Policy) Filter(in []pkix.Extension) ([]pkix.Extension, error) {
	allowedExt := p.AllowedExtensions
	if allowedExt == nil {
		allowedExt = DefaultAllowedExtensions()
	}
	allowedKU := p.AllowedKeyUsage
	if allowedKU == nil {
		allowedKU = DefaultAllowedKeyUsage()
	}
	if !p.AllowCA {
		allowedKU = slices.DeleteFunc(slices.Clone(allowedKU), func(s string) bool {
			return s == keyUsageNames[kuKeyCertSign] || s == keyUsageNames[kuCRLSign]
		})
	}
	refuse := func(ext pkix.Extension) error {
		name := oidName(ext.Id)
		if name == "" {
			name = ext.Id.String()
		}
		return exception.ClassCertificateValidationError.New(map[string]any{"extension": name})
	}
	var out []pkix.Extension
	for _, ext := range in {
		if !slices.Contains(allowedExt, oidName(ext.Id)) {
			if ext.Critical {
				return nil, refuse(ext)
			}
			continue
		}
		switch {
		case ext.Id.Equal(oidExtKeyUsage):
			var bits asn1.BitString
			if rest, err := asn1.Unmarshal(ext.Value, &bits); err != nil || len(rest) != 0 {
				return nil, refuse(ext)
			}
			var usage [9]bool
			for i := range usage {
				usage[i] = bits.At(i) == 1
			}
			// encipher_only and decipher_only read as False without
			// key_agreement in cryptography.
			if !usage[kuKeyAgreement] {
				usage[kuEncipherOnly], usage[kuDecipherOnly] = false, false
			}
			for i, set := range usage {
				if set && !slices.Contains(allowedKU, keyUsageNames[i]) {
					if ext.Critical {
						return nil, refuse(ext)
					}
					usage[i] = false
				}
			}
			v, err := keyUsage(usage)
			if err != nil {
				return nil, err
			}
			ext.Value = v
		case ext.Id.Equal(oidExtBasicConstr) && !p.AllowCA:
			var bc basicConstraintsASN1
			if rest, err := asn1.Unmarshal(ext.Value, &bc); err != nil || len(rest) != 0 {
				return nil, refuse(ext)
			}
			if bc.IsCA {
				if ext.Critical {
					return nil, refuse(ext)
				}
				v, err := basicConstraints(false, -1)
				if err != nil {
					return nil, err
				}
				ext = pkix.Extension{Id: oidExtBasicConstr, Value: v}
			}
		}
		out = append(out, ext)
	}
	return out, nil
}

// template builds a certificate template whose extensions are exactly exts
// plus an SKI of pub when exts has none. The serial is a random UUID4 as an
// integer, as Magnum's int(uuid4()).
func (is Issuer) template(rawSubject []byte, pub crypto.PublicKey, exts []pkix.Extension) (*x509.Certificate, error) {
	serial, err := uuid4Serial()
	if err != nil {
		return nil, err
	}
	hasSKI := slices.ContainsFunc(exts, func(e pkix.Extension) bool { return e.Id.Equal(oidExtSKI) })
	if !hasSKI {
		ski, err := SubjectKeyID(pub)
		if err != nil {
			return nil, err
		}
		v, err := asn1.Marshal(ski)
		if err != nil {
			return nil, err
		}
		exts = append(slices.Clip(exts), pkix.Extension{Id: oidExtSKI, Value: v})
	}
	notBefore, notAfter := is.validity()
	return &x509.Certificate{
		SerialNumber:    serial,
		RawSubject:      rawSubject,
		NotBefore:       notBefore,
		NotAfter:        notAfter,
		ExtraExtensions: exts,
	}, nil
}

// issuerOf returns the CA as the parent for CreateCertificate: its subject
// becomes the issuer; its SKI is hidden so that no AuthorityKeyIdentifier is
// written, as Magnum writes none.
func issuerOf(ca *x509.Certificate) *x509.Certificate {
	parent := *ca
	parent.SubjectKeyId = nil
	return &parent
}

// SubjectKeyID is RFC 5280 method 1 (SHA-1 of the subjectPublicKey bits),
// as cryptography's SubjectKeyIdentifier.from_public_key computes it.
func SubjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, err
	}
	sum := sha1.Sum(spki.PublicKey.Bytes) //nolint:gosec // RFC 5280 method 1 key identifier, as cryptography computes it
	return sum[:], nil
}

func uuid4Serial() (*big.Int, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return new(big.Int).SetBytes(b[:]), nil
}

type basicConstraintsASN1 struct {
	IsCA       bool `asn1:"optional"`
	MaxPathLen int  `asn1:"optional,default:-1"`
}

func basicConstraints(isCA bool, maxPathLen int) ([]byte, error) {
	return asn1.Marshal(basicConstraintsASN1{IsCA: isCA, MaxPathLen: maxPathLen})
}

// keyUsage encodes the KeyUsage named bit list in DER (trailing zero bits
// dropped).
func keyUsage(usage [9]bool) ([]byte, error) {
	n := 0
	for i, set := range usage {
		if set {
			n = i + 1
		}
	}
	bytes := make([]byte, (n+7)/8)
	for i := 0; i < n; i++ {
		if usage[i] {
			bytes[i/8] |= 0x80 >> (i % 8)
		}
	}
	return asn1.Marshal(asn1.BitString{Bytes: bytes, BitLength: n})
}

// EncodeCertificate returns DER as PEM without the trailing newline, as
// Magnum's public_bytes(PEM).strip().
func EncodeCertificate(der []byte) string {
	return strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
}

// ParseCertificate parses the first CERTIFICATE block of a PEM string.
func ParseCertificate(certPEM string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("pki: no CERTIFICATE PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}
