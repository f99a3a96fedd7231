package capi

import (
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

// TestPodCIDRFollowsTheNetworkDriver: cilium_ipv4pool is the pod network of
// a cilium cluster; calico's pool (or its default) otherwise.
func TestPodCIDRFollowsTheNetworkDriver(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, "10.100.0.0/16"},
		{map[string]string{"calico_ipv4pool": "10.200.0.0/16", "cilium_ipv4pool": "10.101.0.0/16"}, "10.200.0.0/16"},
		{map[string]string{"network_driver": "cilium", "cilium_ipv4pool": "10.101.0.0/16", "calico_ipv4pool": "10.200.0.0/16"}, "10.101.0.0/16"},
		{map[string]string{"network_driver": "cilium"}, "10.100.0.0/16"},
	} {
		labels, err := DefaultLabelSchema().Parse(tc.labels)
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
		if got := cl.Spec.ClusterNetwork.Pods.CIDRBlocks; len(got) != 1 || got[0] != tc.want {
			t.Errorf("%v: pods %v, want %s", tc.labels, got, tc.want)
		}
	}
}
