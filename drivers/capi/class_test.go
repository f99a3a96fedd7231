package capi

import (
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// TestClassDeclaresEveryVariableTheDriverSets: a topology variable the
// ClusterClass does not declare is rejected by CAPI's webhook, which the
// test API server does not run, so the bundle and the builder are checked
// against each other here.
func TestClassDeclaresEveryVariableTheDriverSets(t *testing.T) {
	objs, err := classBundle(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	cc := &clusterv1.ClusterClass{}
	if err := fromUnstructured(objs[len(objs)-1].Object, cc); err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	required := map[string]bool{}
	for _, v := range cc.Spec.Variables {
		declared[v.Name] = true
		if v.Required != nil && *v.Required {
			required[v.Name] = true
		}
	}
	labels, err := DefaultLabelSchema().Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &objects.Cluster{UUID: ptr("u"), ProjectID: ptr("p"), FlavorID: ptr("f"), MasterFlavorID: ptr("mf")}
	cl, err := desiredCluster(spec{Cluster: c, Template: &objects.ClusterTemplate{ImageID: ptr("i")}, Labels: labels,
		Namespace: "ns", Name: "n", ClassVersion: LatestClassVersion, IdentityRef: "secret",
		NodeGroups: []*objects.NodeGroup{{Name: "m", Role: objects.RoleMaster, NodeCount: 1}, {Name: "w", NodeCount: 1, FlavorID: ptr("g")}}})
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, v := range cl.Spec.Topology.Variables {
		set[v.Name] = true
		if !declared[v.Name] {
			t.Errorf("the driver sets %q, which %s does not declare", v.Name, cc.Name)
		}
	}
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		if md.Class != cc.Spec.Workers.MachineDeployments[0].Class {
			t.Errorf("MachineDeployment class %q not in the ClusterClass", md.Class)
		}
		for _, o := range md.Variables.Overrides {
			if !declared[o.Name] {
				t.Errorf("override %q is not declared", o.Name)
			}
		}
	}
	for name := range required {
		if !set[name] {
			t.Errorf("required variable %q is never set", name)
		}
	}
	if cl.Spec.Topology.ClassRef.Name != cc.Name {
		t.Errorf("classRef %s, want %s", cl.Spec.Topology.ClassRef.Name, cc.Name)
	}
}
