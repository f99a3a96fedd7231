package capi

import (
	"context"
	"fmt"
	"slices"

	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// StorageTypeLister lists the volume types a cluster's project sees, for a
// StorageClass per type. cloudsweep.Sweeper implements it; a Sweeper that
// does not (a test's) leaves the Cinder chart's two classes alone.
type StorageTypeLister interface {
	StorageTypes(ctx context.Context, cloud cloudsweep.Cloud, shares bool) (cloudsweep.StorageTypes, error)
}

var _ StorageTypeLister = (*cloudsweep.Sweeper)(nil)

// addOnVolumeTypes looks up, with the cluster's application credential,
// the Cinder volume types and the default one, when the Cinder CSI plugin
// is delivered to the cluster (nil when it is not, or the cloud has no
// Cinder). A failure fails the apply: a rendering without the types would
// make the chart's class the default again.
func (d *Driver) addOnVolumeTypes(ctx context.Context, cred addons.Credential, l Labels) ([]string, string, error) {
	lister, ok := d.deps.Sweeper.(StorageTypeLister)
	if !ok {
		return nil, "", nil
	}
	if b := d.opts.AddOns.Settings.Builtin; b != nil && !slices.Contains(b, "cinder-csi") {
		return nil, "", nil
	}
	if on, set := l.Bool("cinder_csi_enabled"); set && !on {
		return nil, "", nil
	}
	st, err := lister.StorageTypes(ctx, cloudsweep.Cloud{AuthURL: cred.AuthURL, ApplicationCredentialID: cred.ID,
		ApplicationCredentialSecret: cred.Secret, Region: cred.Region, Interface: cred.Interface, CACert: []byte(cred.CACert)}, false)
	if err != nil {
		return nil, "", fmt.Errorf("capi: the cloud's volume types (for the StorageClasses): %w", err)
	}
	if !st.HasCinder {
		return nil, "", nil
	}
	return st.Volume, st.DefaultVolume, nil
}
