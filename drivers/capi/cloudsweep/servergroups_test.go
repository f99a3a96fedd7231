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
