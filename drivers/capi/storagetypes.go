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

// addOnStorageTypes looks up, with the cluster's application credential,
// the Cinder volume types (when the Cinder CSI plugin is delivered to the
// cluster) and the Manila share types (when the Manila CSI plugin is);
// nothing is looked up when neither is. A failure fails the apply: a
// rendering without the types would make the chart's class the default
// again.
func (d *Driver) addOnStorageTypes(ctx context.Context, cred addons.Credential, l Labels) (cloudsweep.StorageTypes, error) {
	lister, ok := d.deps.Sweeper.(StorageTypeLister)
	if !ok {
		return cloudsweep.StorageTypes{}, nil
	}
	delivered := func(kind, label string, def bool) bool {
		if b := d.opts.AddOns.Settings.Builtin; b != nil && !slices.Contains(b, kind) {
			return false
		}
		if on, set := l.Bool(label); set {
			return on
		}
		return def
	}
	cinder, manila := delivered("cinder-csi", "cinder_csi_enabled", true), delivered("manila-csi", "manila_csi_enabled", false)
	if !cinder && !manila {
		return cloudsweep.StorageTypes{}, nil
	}
	st, err := lister.StorageTypes(ctx, cloudsweep.Cloud{AuthURL: cred.AuthURL, ApplicationCredentialID: cred.ID,
		ApplicationCredentialSecret: cred.Secret, Region: cred.Region, Interface: cred.Interface, CACert: []byte(cred.CACert)}, manila)
	if err != nil {
		return cloudsweep.StorageTypes{}, fmt.Errorf("capi: the cloud's volume and share types (for the StorageClasses): %w", err)
	}
	if !cinder {
		st.Volume, st.DefaultVolume = nil, ""
	}
	return st, nil
}
