// Package store holds certificates and their encrypted keys in one of
// Magnum's cert-manager backends, chosen by [certificates]cert_manager_type:
// "x509keypair" (the x509keypair table), "barbican" (a certificate container
// per certificate) or "local" (files, for testing). Data written by the
// Python conductor is read here and the other way round.
package store

import (
	"context"
	"log/slog"

	"github.com/openstack/magnum-conductor/api/exception"
)

// Backend types ([certificates]cert_manager_type).
const (
	TypeX509KeyPair = "x509keypair"
	TypeBarbican    = "barbican"
	TypeLocal       = "local"
)

// Cert is what a backend stores under one reference: Magnum's Cert
// (get_certificate, get_private_key, get_intermediates,
// get_private_key_passphrase). PrivateKey is the encrypted PEM and
// Passphrase its password: never log either.
type Cert struct {
	Certificate   string
	PrivateKey    string
	Intermediates string
	Passphrase    string
}

// LogValue keeps the key and passphrase out of any log line that prints a
// Cert by mistake.
func (c Cert) LogValue() slog.Value { return slog.StringValue("certificate") }

// String keeps the key and passphrase out of %v.
func (c Cert) String() string { return "store.Cert{…}" }

// GoString keeps the key and passphrase out of %#v.
func (c Cert) GoString() string { return c.String() }

// Backend stores, reads and deletes certificates. resourceRef is the
// cluster uuid the certificate belongs to (Barbican consumer URL in Magnum).
type Backend interface {
	// Store saves c under a new reference. name is the certificate's friendly
	// name (the issuer name for CAs, "Magnum-Conductor" for the client cert).
	// On error nothing stays stored.
	Store(ctx context.Context, c Cert, name string) (ref string, err error)
	// Get reads the certificate stored under ref.
	Get(ctx context.Context, ref, resourceRef string) (*Cert, error)
	// Delete removes everything stored under ref.
	Delete(ctx context.Context, ref, resourceRef string) error
	// Type is the backend's cert_manager_type name.
	Type() string
}

// storageError is CertificateStorageException(msg) with cause kept for
// the logs.
func storageError(msg string, cause error) *exception.Error {
	e := exception.ClassCertificateStorageException.New(map[string]any{"msg": msg})
	e.Cause = cause
	return e
}
