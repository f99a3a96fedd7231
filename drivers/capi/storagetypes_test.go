package capi

import (
	"context"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// TestAddOnStorageTypes: the volume types come from the cloud with the
// cluster's credential when the Cinder CSI plugin is delivered, the share
// types when the Manila one is, and nothing is looked up when neither is
// (labels or addons option).
func TestAddOnStorageTypes(t *testing.T) {
	cloud := cloudsweeptest.New(t)
	cloud.SetVolumeTypes([]string{"ssd", "hdd"}, "ssd")
	cred := addons.Credential{AuthURL: cloud.URL + "/identity", ID: cloudsweeptest.CredentialID, Secret: cloudsweeptest.CredentialSecret,
		Region: "RegionOne", Interface: "public"}
	ctx := context.Background()
	parse := func(m map[string]string) Labels {
		l, err := DefaultLabelSchema().Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	d := &Driver{deps: Deps{Sweeper: cloudsweep.New(0)}, opts: Options{AddOns: AddOnOptions{Enabled: true}}}
	cloud.SetShareTypes([]string{"nfs-gold"}, "")
	st, err := d.addOnStorageTypes(ctx, cred, parse(nil))
	if err != nil || !slices.Equal(st.Volume, []string{"hdd", "ssd"}) || st.DefaultVolume != "ssd" || st.Share != nil {
		t.Fatalf("types %+v: %v", st, err)
	}
	st, err = d.addOnStorageTypes(ctx, cred, parse(map[string]string{"manila_csi_enabled": "true", "cinder_csi_enabled": "false"}))
	if err != nil || st.Volume != nil || !slices.Equal(st.Share, []string{"nfs-gold"}) {
		t.Errorf("manila only: %+v, %v", st, err)
	}
	before := len(cloud.Requests())
	if st, err := d.addOnStorageTypes(ctx, cred, parse(map[string]string{"cinder_csi_enabled": "false"})); err != nil || st.Volume != nil {
		t.Errorf("cinder_csi_enabled=false: %+v, %v", st, err)
	}
	d.opts.AddOns.Settings.Builtin = []string{"cni", "manila-csi"}
	if st, err := d.addOnStorageTypes(ctx, cred, parse(nil)); err != nil || st.Volume != nil {
		t.Errorf("cinder-csi not delivered: %+v, %v", st, err)
	}
	if n := len(cloud.Requests()); n != before {
		t.Errorf("%d requests to the cloud for a cluster without the Cinder CSI plugin", n-before)
	}
	d.opts.AddOns.Settings.Builtin = nil
	cred.Secret = "wrong"
	if _, err := d.addOnStorageTypes(ctx, cred, parse(nil)); err == nil {
		t.Error("a refused credential gave volume types")
	}
}
