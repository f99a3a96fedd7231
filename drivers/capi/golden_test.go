package capi

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden files")

// TestDesiredClusterGolden pins the topology Cluster built for a typical
// Magnum cluster (run with -update after an intended change and review the
// diff).
func TestDesiredClusterGolden(t *testing.T) {
	labels, err := DefaultLabelSchema().Parse(map[string]string{
		"kube_tag": "v1.33.4", "boot_volume_size": "40", "boot_volume_type": "ssd", "availability_zone": "nova",
		"control_plane_availability_zones": "az1,az2,az3", "api_master_lb_allowed_cidrs": "192.0.2.0/24",
		"auto_healing_enabled": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &objects.Cluster{UUID: ptr("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), Name: ptr("prod"), ProjectID: ptr("5a3c1f4e8b9d4c2a9e7f6b5a4c3d2e1f"),
		ClusterTemplateID: ptr("tmpl-1"), Keypair: ptr("ops"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"),
		MasterLBEnabled: true, FloatingIPEnabled: true, FixedNetwork: ptr("private"), FixedSubnet: ptr("private-subnet")}
	tmpl := &objects.ClusterTemplate{ImageID: ptr("0d6c3b7e-8a4f-4a9c-b1f2-5e6d7c8b9a01"), ExternalNetworkID: ptr("public"), DNSNameserver: ptr("8.8.8.8")}
	ngs := []*objects.NodeGroup{
		{UUID: "ng-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 3},
		{UUID: "ng-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 4},
		{UUID: "ng-g", Name: "GPU pool", Role: objects.RoleWorker, NodeCount: 1, FlavorID: ptr("g1.xlarge"), Labels: map[string]string{"availability_zone": "gpu-az", "boot_volume_type": "fast"},
			DockerVolumeSize: ptr(int64(50))},
		{UUID: "ng-a", Name: "burst", Role: objects.RoleWorker, NodeCount: 2, MinNodeCount: 1, MaxNodeCount: ptr(int64(10)), Labels: map[string]string{"auto_scaling_enabled": "true"}},
		{UUID: "ng-d", Name: "going", Role: objects.RoleWorker, NodeCount: 1, Status: objects.DeleteInProgress},
	}
	cl, err := desiredCluster(spec{Cluster: c, Template: tmpl, NodeGroups: ngs, Labels: labels, Namespace: "magnum-5a3c1f4e8b9d4c2a9e7f6b5a4c3d2e1f",
		Name: "prod-3f2504", ClassVersion: LatestClassVersion, IdentityRef: "prod-3f2504-cloud-credentials", MaxBatchSize: 2,
		Annotations: map[string]string{annotationTemplateID: "tmpl-1"}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := toUnstructured(cl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "cluster.yaml")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("desired Cluster differs from %s (run with -update and review the diff):\n%s", path, got)
	}
}
