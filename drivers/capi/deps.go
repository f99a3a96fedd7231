package capi

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/openstack/magnum-conductor/api/objects"
)

// CAKind names one of the cluster CAs Magnum generates.
type CAKind string

// The CAs pushed to the management cluster as <cluster>-<kind> Secrets,
// which CAPI uses instead of generating its own.
const (
	CAKubernetes CAKind = "ca"    // Magnum's ca_cert_ref
	CAEtcd       CAKind = "etcd"  // etcd_ca_cert_ref
	CAFrontProxy CAKind = "proxy" // front_proxy_ca_cert_ref
)

// CertSource gives the driver a cluster CA's certificate and private key
// (PEM). The certmanager package implements it.
type CertSource interface {
	CAKeyPair(ctx context.Context, cluster *objects.Cluster, kind CAKind) (certPEM, keyPEM []byte, err error)
}

// Credential is an OpenStack application credential for one cluster.
type Credential struct {
	ID      string
	Secret  string
	AuthURL string
	// UserID is the Keystone user the credential belongs to: the user whose
	// request issued it, not always the cluster's owner (a rotation by
	// another project member issues it under that member).
	UserID string
}

// Ref names the credential for Revoke.
func (c Credential) Ref() CredentialRef { return CredentialRef{ID: c.ID, UserID: c.UserID} }

// CredentialRef names an application credential to revoke: its id and the
// user it belongs to ("" for the cluster's owner, as for Secrets written
// before the user was recorded).
type CredentialRef struct {
	ID, UserID string
}

// CredentialIssuer creates, checks and revokes the cloud credential CAPO
// uses for a cluster (an application credential named magnum-<uuid>-<hex>).
type CredentialIssuer interface {
	Issue(ctx context.Context, cluster *objects.Cluster) (Credential, error)
	// Verify proves the credential authenticates.
	Verify(ctx context.Context, cred Credential) error
	// Revoke deletes the credential; an unknown id is not an error.
	Revoke(ctx context.Context, cluster *objects.Cluster, cred CredentialRef) error
}

// Core is the part of the management cluster's core API the driver uses:
// namespaces and Secrets. NewCore implements it over client-go.
type Core interface {
	EnsureNamespace(ctx context.Context, name string, labels map[string]string) error
	// ApplySecret writes s with server-side apply (field manager
	// magnum-conductor).
	ApplySecret(ctx context.Context, s *corev1.Secret) error
	// ListSecrets lists the Secrets of ns matching the label selector.
	ListSecrets(ctx context.Context, ns, selector string) ([]corev1.Secret, error)
	// DeleteSecret deletes a Secret; a missing one is not an error.
	DeleteSecret(ctx context.Context, ns, name string) error
}
