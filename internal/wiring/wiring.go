// Package wiring adapts the conductor's parts to the small interfaces of
// the bundled drivers: the certificate manager (which reads the database)
// to the Cluster API driver's capi.CertSource, so that drivers/capi depends
// on neither. cmd/magnum-conductor uses it, and so does the Cluster API
// driver's end-to-end test, which runs the driver with the real manager.
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
