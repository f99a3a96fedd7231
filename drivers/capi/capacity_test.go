package capi

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep/cloudsweeptest"
)

func TestCapacityAnnotations(t *testing.T) {
	got := capacityAnnotations(cloudsweep.Flavor{VCPUs: 8, RAMMiB: 32768, DiskGiB: 80, GPUs: 2}, 0)
	want := map[string]string{capacityCPU: "8", capacityMemory: "32768Mi", capacityEphemeralDisk: "80Gi",
		capacityGPUType: "nvidia.com/gpu", capacityGPUCount: "2"}
	if !maps.Equal(got, want) {
		t.Errorf("%v", got)
	}
	// Booted from a volume: its size; a flavor without disk and no volume: none.
	if got := capacityAnnotations(cloudsweep.Flavor{VCPUs: 2, RAMMiB: 4096}, 50); got[capacityEphemeralDisk] != "50Gi" || got[capacityGPUCount] != "" {
		t.Errorf("%v", got)
	}
	if _, ok := capacityAnnotations(cloudsweep.Flavor{VCPUs: 2, RAMMiB: 4096}, 0)[capacityEphemeralDisk]; ok {
		t.Error("ephemeral disk without a size")
	}
}

// An autoscaled nodegroup's MachineDeployment carries its flavor's
// capacity (so that the autoscaler can scale it up from zero), looked up
// once with the cluster's credential; a fixed-size one carries none.
func TestAutoscaledNodeGroupCarriesItsFlavorsCapacity(t *testing.T) {
	cloud := cloudsweeptest.New(t)
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 40})
	cloud.AddFlavor(cloudsweeptest.Flavor{ID: "f-gpu", Name: "g1.xlarge", VCPUs: 16, RAM: 65536, Disk: 100,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:1"}})
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour}, nil, func(e *env, d *Deps) {
		e.creds.cloud = cloud
		d.Flavors = cloudsweep.New(0)
	})
	c := e.newCluster("scaled", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 1},
		&objects.NodeGroup{Name: "gpu", NodeCount: 0, FlavorID: ptr("g1.xlarge"), MaxNodeCount: ptr(int64(3)),
			Labels: map[string]string{"auto_scaling_enabled": "true"}},
		&objects.NodeGroup{Name: "burst", NodeCount: 1, MaxNodeCount: ptr(int64(5)),
			Labels: map[string]string{"auto_scaling_enabled": "true", "boot_volume_size": "60"}})
	ctx := context.Background()
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.UpdateCluster(ctx, e.request(c)); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	cl, err := e.d.liveCluster(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"gpu":   {capacityCPU: "16", capacityMemory: "65536Mi", capacityEphemeralDisk: "100Gi", capacityGPUType: "nvidia.com/gpu", capacityGPUCount: "1"},
		"burst": {capacityCPU: "4", capacityMemory: "8192Mi", capacityEphemeralDisk: "60Gi"},
	}
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		got := map[string]string{}
		for k, v := range md.Metadata.Annotations {
			if strings.HasPrefix(k, "capacity.cluster-autoscaler.kubernetes.io/") {
				got[k] = v
			}
		}
		if w := want[md.Name]; !maps.Equal(got, w) && !(w == nil && len(got) == 0) {
			t.Errorf("MachineDeployment %s: capacity %v, want %v", md.Name, got, w)
		}
	}
	lists := 0
	for _, req := range cloud.Requests() {
		if strings.HasPrefix(req, "GET /compute/v2.1/flavors/detail") {
			lists++
		}
	}
	if lists != 2 { // one per flavor, over two applies
		t.Errorf("%d flavor lists, want 2 (cached)", lists)
	}
}
