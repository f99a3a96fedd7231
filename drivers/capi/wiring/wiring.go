// Package wiring adapts the conductor's certificate manager to the Cluster
// API driver's small interface (capi.CertSource), so that drivers/capi
// does not depend on it.
package wiring

import (
	"context"
	"fmt"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/drivers/capi"
)

// CAKeyPairs is the part of *certmanager.Manager the CertSource uses.
type CAKeyPairs interface {
	CAKeyPair(ctx context.Context, c *objects.Cluster, caCertType string) (certPEM, keyPEM []byte, err error)
}

var _ CAKeyPairs = (*certmanager.Manager)(nil)

// CertSource is capi.CertSource over the certificate manager.
type CertSource struct{ Certs CAKeyPairs }

var _ capi.CertSource = CertSource{}

// caCertType maps the driver's CA kinds to Magnum's ca_cert_type values.
func caCertType(kind capi.CAKind) (string, error) {
	switch kind {
	case capi.CAKubernetes:
		return certmanager.CATypeKubernetes, nil
	case capi.CAEtcd:
		return certmanager.CATypeEtcd, nil
	case capi.CAFrontProxy:
		return certmanager.CATypeFrontProxy, nil
	}
	return "", fmt.Errorf("capi wiring: unknown CA kind %q", kind)
}

// CAKeyPair implements capi.CertSource.
func (s CertSource) CAKeyPair(ctx context.Context, c *objects.Cluster, kind capi.CAKind) (certPEM, keyPEM []byte, err error) {
	t, err := caCertType(kind)
	if err != nil {
		return nil, nil, err
	}
	return s.Certs.CAKeyPair(ctx, c, t)
}
