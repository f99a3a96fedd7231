package capi

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

// A create makes one server group for the control plane and one per
// worker nodegroup (soft-anti-affinity, or the nodegroup's policy), with
// the cluster's own credential, and hands their ids to the class; another
// apply reuses them; the clean-up after the Cluster went deletes them.
func TestServerGroupsCreatedWithTheClusterAndSwept(t *testing.T) {
	cloud := cloudsweeptest.New(t)
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour}, nil, func(e *env, d *Deps) {
		e.creds.cloud = cloud
		sw := cloudsweep.New(0)
		d.Sweeper, d.ServerGroups = sw, sw
	})
	c := e.newCluster("grouped", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1},
		&objects.NodeGroup{Name: "gpu", NodeCount: 1, Labels: map[string]string{"server_group_policies": "affinity"}})
	ctx := context.Background()
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	groups := cloud.ServerGroups()
	got := map[string]string{}
	for _, g := range groups {
		got[g.Name] = g.Policies[0]
	}
	prefix := "magnum-" + *c.UUID + "-"
	want := map[string]string{prefix + "control-plane": "soft-anti-affinity", prefix + "default-worker": "soft-anti-affinity", prefix + "gpu": "affinity"}
	if len(got) != 3 || got[prefix+"control-plane"] != want[prefix+"control-plane"] || got[prefix+"default-worker"] != want[prefix+"default-worker"] ||
		got[prefix+"gpu"] != "affinity" {
		t.Fatalf("server groups %v, want %v", got, want)
	}
	r, _ := refOf(c)
	cl, err := e.d.liveCluster(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	id := func(name string) string {
		i := slices.IndexFunc(groups, func(g cloudsweeptest.ServerGroup) bool { return g.Name == name })
		return groups[i].ID
	}
	if v := variableString(cl, "controlPlaneServerGroup"); v != id(prefix+"control-plane") {
		t.Errorf("controlPlaneServerGroup = %q", v)
	}
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		found := false
		for _, o := range md.Variables.Overrides {
			if o.Name == "workerServerGroup" {
				found = string(o.Value.Raw) == `"`+id(prefix+md.Name)+`"`
			}
		}
		if !found {
			t.Errorf("MachineDeployment %s: overrides %v, want workerServerGroup %s", md.Name, md.Variables.Overrides, id(prefix+md.Name))
		}
	}
	// An update applies again: the same groups.
	if _, err := e.d.UpdateCluster(ctx, e.request(c)); err != nil {
		t.Fatal(err)
	}
	if n := len(cloud.ServerGroups()); n != 3 {
		t.Errorf("%d server groups after an update", n)
	}
	cloud.AddServerGroup(cloudsweeptest.ServerGroup{ID: "5e4f0000-0000-4000-8000-0000000000ff", Name: "magnum-other-control-plane",
		Policies: []string{"affinity"}})
	if err := e.d.cleanup(ctx, c, r.Namespace); err != nil {
		t.Fatal(err)
	}
	if left := cloud.ServerGroups(); len(left) != 1 || left[0].Name != "magnum-other-control-plane" {
		t.Errorf("left after the clean-up: %v", left)
	}
}
