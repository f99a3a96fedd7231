package capi

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
	"github.com/openstack/magnum-conductor/internal/testkit"
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

// A deleted nodegroup's server group is deleted with it and that is
// logged; a delete that found no group logs nothing as deleted; a Cluster
// that cannot be read, or whose class the driver does not know, is logged
// as a failure.
func TestNodeGroupServerGroupDeletionLogged(t *testing.T) {
	cloud := cloudsweeptest.New(t)
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour}, nil, func(e *env, d *Deps) {
		e.creds.cloud = cloud
		sw := cloudsweep.New(0)
		d.Sweeper, d.ServerGroups = sw, sw
	})
	c := e.newCluster("ng-groups", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1}, &objects.NodeGroup{Name: "gpu", NodeCount: 1})
	ctx := context.Background()
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	ngs := e.nodeGroups(c)
	gpu := ngs[slices.IndexFunc(ngs, func(ng *objects.NodeGroup) bool { return ng.Name == "gpu" })]
	if err := e.deleteNG(ctx, c, gpu); err != nil {
		t.Fatal(err)
	}
	group := "magnum-" + *c.UUID + "-gpu"
	if slices.ContainsFunc(cloud.ServerGroups(), func(g cloudsweeptest.ServerGroup) bool { return g.Name == group }) {
		t.Fatalf("server group %s left after its nodegroup's delete", group)
	}
	deleted := func() []string { return e.logs.lines("level=INFO", "nodegroup server group deleted", "nodegroup=gpu") }
	if got := deleted(); len(got) != 1 {
		t.Fatalf("logged %q, want one line of the group deleted", got)
	}
	// Its group is gone: nothing deleted, nothing logged as deleted.
	e.d.deleteNodeGroupServerGroup(ctx, c, gpu)
	if got := deleted(); len(got) != 1 {
		t.Errorf("a delete that found no group: logged %q, want still the one line", got)
	}

	r, _ := refOf(c)
	if _, err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Patch(ctx, r.Name, "application/merge-patch+json",
		[]byte(`{"spec":{"topology":{"classRef":{"name":"magnum-v99"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.d.deleteNodeGroupServerGroup(ctx, c, gpu)
	if got := e.logs.lines("level=WARN", "its ClusterClass is not known", "nodegroup=gpu", "class=magnum-v99"); len(got) != 1 {
		t.Errorf("an unknown class: logged %q, want one warning", e.logs.lines("nodegroup=gpu"))
	}
	if err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, err := e.d.liveCluster(ctx, r)
		return apierrors.IsNotFound(err)
	}, "the Cluster is not gone")
	e.d.deleteNodeGroupServerGroup(ctx, c, gpu)
	if got := e.logs.lines("level=WARN", "the Cluster cannot be read", "nodegroup=gpu", "not found"); len(got) != 1 {
		t.Errorf("the Cluster gone: logged %q, want one warning", e.logs.lines("nodegroup=gpu"))
	}
}
