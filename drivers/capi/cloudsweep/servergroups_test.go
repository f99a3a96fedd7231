package cloudsweep_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// Server groups are created once (an existing one of the name is reused,
// whatever its policy), with the soft policies' microversion, and the
// cluster's go at its sweep; another cluster's stay.
func TestServerGroupsEnsuredThenSwept(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddServerGroup(cloudsweeptest.ServerGroup{ID: "sg-old", Name: "magnum-u1-workers", Policies: []string{"anti-affinity"}})
	fake.AddServerGroup(cloudsweeptest.ServerGroup{ID: "sg-other", Name: "magnum-u10-control-plane", Policies: []string{"affinity"}})
	s := cloudsweep.New(0)
	ctx := context.Background()
	groups := []cloudsweep.ServerGroup{{Name: "magnum-u1-control-plane", Policy: "soft-anti-affinity"}, {Name: "magnum-u1-workers", Policy: "soft-anti-affinity"}}
	ids, err := s.EnsureServerGroups(ctx, cloudOf(fake), groups)
	if err != nil {
		t.Fatal(err)
	}
	if ids["magnum-u1-workers"] != "sg-old" || ids["magnum-u1-control-plane"] == "" || len(ids) != 2 {
		t.Fatalf("ids %v", ids)
	}
	again, err := s.EnsureServerGroups(ctx, cloudOf(fake), groups)
	if err != nil || !reflect.DeepEqual(again, ids) {
		t.Fatalf("second ensure: %v, %v; want %v", again, err, ids)
	}
	if n := len(fake.ServerGroups()); n != 3 {
		t.Fatalf("%d server groups, want 3: %v", n, fake.ServerGroups())
	}
	res, err := s.Sweep(ctx, cloudOf(fake), "k8s-abc", cloudsweep.What{ServerGroupPrefix: "magnum-u1-"})
	if err != nil || res.DeletedServerGroups != 2 {
		t.Fatalf("sweep: %+v, %v", res, err)
	}
	if left := fake.ServerGroups(); len(left) != 1 || left[0].ID != "sg-other" {
		t.Errorf("left %v", left)
	}
}

func TestFlavorByIDOrNameWithItsGPUs(t *testing.T) {
	fake := cloudsweeptest.New(t)
	fake.AddFlavor(cloudsweeptest.Flavor{ID: "f1", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 40})
	fake.AddFlavor(cloudsweeptest.Flavor{ID: "f2", Name: "g1.xlarge", VCPUs: 16, RAM: 65536, Disk: 100, Ephemeral: 20,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:2, t4:1", "resources:VGPU": "1"}})
	s := cloudsweep.New(0)
	ctx := context.Background()
	f, err := s.Flavor(ctx, cloudOf(fake), "m1.large")
	if err != nil || f != (cloudsweep.Flavor{ID: "f1", Name: "m1.large", VCPUs: 4, RAMMiB: 8192, DiskGiB: 40}) {
		t.Fatalf("%+v, %v", f, err)
	}
	f, err = s.Flavor(ctx, cloudOf(fake), "f2")
	if err != nil || f.GPUs != 4 || f.Ephemeral != 20 || f.Name != "g1.xlarge" {
		t.Fatalf("%+v, %v", f, err)
	}
	if _, err := s.Flavor(ctx, cloudOf(fake), "nope"); err == nil {
		t.Fatal("an unknown flavor found")
	}
}
