package capi

import (
	"context"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// TestAddOnVolumeTypes: the volume types come from the cloud with the
// cluster's credential when the Cinder CSI plugin is delivered, and are
// not looked up when it is not (label or addons option).
func TestAddOnVolumeTypes(t *testing.T) {
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
	types, def, err := d.addOnVolumeTypes(ctx, cred, parse(nil))
	if err != nil || !slices.Equal(types, []string{"hdd", "ssd"}) || def != "ssd" {
		t.Fatalf("types %v default %q: %v", types, def, err)
	}
	before := len(cloud.Requests())
	if types, _, err := d.addOnVolumeTypes(ctx, cred, parse(map[string]string{"cinder_csi_enabled": "false"})); err != nil || types != nil {
		t.Errorf("cinder_csi_enabled=false: %v, %v", types, err)
	}
	d.opts.AddOns.Settings.Builtin = []string{"cni"}
	if types, _, err := d.addOnVolumeTypes(ctx, cred, parse(nil)); err != nil || types != nil {
		t.Errorf("cinder-csi not delivered: %v, %v", types, err)
	}
	if n := len(cloud.Requests()); n != before {
		t.Errorf("%d requests to the cloud for a cluster without the Cinder CSI plugin", n-before)
	}
	d.opts.AddOns.Settings.Builtin = nil
	cred.Secret = "wrong"
	if _, _, err := d.addOnVolumeTypes(ctx, cred, parse(nil)); err == nil {
		t.Error("a refused credential gave volume types")
	}
}
