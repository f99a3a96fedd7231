package store

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
)

// KeyPairDB is the part of db.Store the x509keypair backend uses
// (docs/CONTRACTS.md). GetX509KeyPairByUUID applies the tenant filter of
// request.From(ctx) and fails with X509KeyPairNotFound.
type KeyPairDB interface {
	CreateX509KeyPair(ctx context.Context, kp *objects.X509KeyPair) error
	GetX509KeyPairByUUID(ctx context.Context, uuid string) (*objects.X509KeyPair, error)
	DestroyX509KeyPair(ctx context.Context, uuid string) error
}

// X509KeyPair is the "x509keypair" backend: one row per certificate with the
// encrypted key and, as Magnum does (§K.9), its passphrase in plaintext.
// project_id and user_id come from the request context.
type X509KeyPair struct {
	db KeyPairDB
}

// NewX509KeyPair returns the x509keypair backend over db.
func NewX509KeyPair(db KeyPairDB) *X509KeyPair { return &X509KeyPair{db: db} }

// Type implements Backend.
func (b *X509KeyPair) Type() string { return TypeX509KeyPair }

// Store implements Backend. The row uuid is the reference.
func (b *X509KeyPair) Store(ctx context.Context, c Cert, _ string) (string, error) {
	rc := request.From(ctx)
	uuid := newUUID()
	kp := &objects.X509KeyPair{
		UUID:                 &uuid,
		Certificate:          &c.Certificate,
		PrivateKey:           &c.PrivateKey,
		PrivateKeyPassphrase: nullable(c.Passphrase),
		Intermediates:        nullable(c.Intermediates),
		ProjectID:            nullable(rc.ProjectID),
		UserID:               nullable(rc.UserID),
	}
	if err := b.db.CreateX509KeyPair(ctx, kp); err != nil {
		return "", storageError("x509keypair insert failed", err)
	}
	if kp.UUID != nil && *kp.UUID != "" {
		uuid = *kp.UUID
	}
	return uuid, nil
}

// Get implements Backend; errors from the database (X509KeyPairNotFound)
// are returned as they are.
func (b *X509KeyPair) Get(ctx context.Context, ref, _ string) (*Cert, error) {
	kp, err := b.db.GetX509KeyPairByUUID(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &Cert{
		Certificate:   objects.Deref(kp.Certificate),
		PrivateKey:    objects.Deref(kp.PrivateKey),
		Intermediates: objects.Deref(kp.Intermediates),
		Passphrase:    objects.Deref(kp.PrivateKeyPassphrase),
	}, nil
}

// Delete implements Backend: get (under the tenant filter) then destroy.
func (b *X509KeyPair) Delete(ctx context.Context, ref, _ string) error {
	kp, err := b.db.GetX509KeyPairByUUID(ctx, ref)
	if err != nil {
		return err
	}
	uuid := ref
	if kp.UUID != nil && *kp.UUID != "" {
		uuid = *kp.UUID
	}
	return b.db.DestroyX509KeyPair(ctx, uuid)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newUUID returns a random UUID4 string.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
