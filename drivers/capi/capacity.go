package capi

import (
	"context"
	"strconv"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// FlavorLookup reads a Nova flavor with the cluster's credential.
// cloudsweep.Sweeper implements it.
type FlavorLookup interface {
	Flavor(ctx context.Context, cloud cloudsweep.Cloud, idOrName string) (cloudsweep.Flavor, error)
}

var _ FlavorLookup = (*cloudsweep.Sweeper)(nil)

// The cluster-autoscaler's capacity annotations (Cluster API provider): what
// a node of a MachineDeployment at zero replicas would offer, so that it can
// scale the MachineDeployment up from zero.
const (
	capacityCPU           = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	capacityMemory        = "capacity.cluster-autoscaler.kubernetes.io/memory"
	capacityEphemeralDisk = "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"
	capacityGPUType       = "capacity.cluster-autoscaler.kubernetes.io/gpu-type"
	capacityGPUCount      = "capacity.cluster-autoscaler.kubernetes.io/gpu-count"
	// gpuResource is the resource GPU device plugins advertise.
	gpuResource = "nvidia.com/gpu"
)

// flavorTTL is how long a flavor looked up stays cached: flavors are
// immutable in Nova (a changed one is a new id), a name may move.
const flavorTTL = time.Hour

// flavorKey names a flavor or image looked up in a cloud with a credential.
type flavorKey struct{ authURL, region, credential, flavor string }

// cacheEntries bounds each of the driver's cloud lookup caches.
const cacheEntries = 4096

// capacityAnnotations are the capacity annotations of a node of flavor f
// whose root disk is bootGiB (0: the flavor's).
func capacityAnnotations(f cloudsweep.Flavor, bootGiB int64) map[string]string {
	out := map[string]string{
		capacityCPU:    strconv.Itoa(f.VCPUs),
		capacityMemory: strconv.Itoa(f.RAMMiB) + "Mi",
	}
	if bootGiB == 0 {
		bootGiB = int64(f.DiskGiB)
	}
	if bootGiB > 0 {
		out[capacityEphemeralDisk] = strconv.FormatInt(bootGiB, 10) + "Gi"
	}
	if f.GPUs > 0 {
		out[capacityGPUType] = gpuResource
		out[capacityGPUCount] = strconv.Itoa(f.GPUs)
	}
	return out
}

// capacities returns the capacity annotations of the cluster's autoscaled
// nodegroups, by MachineDeployment name, from their flavors (cached). A
// flavor that cannot be read leaves its nodegroup without them (it then
// scales from one node up, not from zero) and is logged: capacity is
// never a reason to fail an apply.
func (d *Driver) capacities(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, ngs []*objects.NodeGroup, l Labels,
	r ref, identityRef string) map[string]map[string]string {
	if d.deps.Flavors == nil {
		return nil
	}
	if t == nil {
		t = &objects.ClusterTemplate{}
	}
	var cloud *cloudsweep.Cloud
	out := map[string]map[string]string{}
	for _, ng := range ngs {
		if ng.Role == objects.RoleMaster || !isAutoscaled(l, ng) {
			continue
		}
		flavor := firstNonEmpty(ng.FlavorID, c.FlavorID, t.FlavorID)
		if flavor == "" {
			continue
		}
		if cloud == nil {
			cl, err := d.clusterCloud(ctx, c, r, identityRef)
			if err != nil {
				d.log.WarnContext(ctx, "no capacity annotations: the cluster's cloud credential cannot be read",
					append(d.logAttrs(ctx, c), "error", err.Error())...)
				return nil
			}
			cloud = &cl
		}
		k := flavorKey{cloud.AuthURL, cloud.Region, cloud.ApplicationCredentialID, flavor}
		f, ok := d.flavors.get(k, d.now())
		if !ok {
			var err error
			if f, err = d.deps.Flavors.Flavor(ctx, *cloud, flavor); err != nil {
				d.log.WarnContext(ctx, "no capacity annotations for an autoscaled nodegroup: its flavor cannot be read "+
					"(it cannot scale up from zero nodes)", append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "flavor", flavor, "error", err.Error())...)
				continue
			}
			d.flavors.put(k, f, d.now())
		}
		boot, _ := l.Int("boot_volume_size")
		if v, err := strconv.ParseInt(ng.Labels["boot_volume_size"], 10, 64); err == nil && v >= 0 {
			boot = v
		}
		out[mdNameFor(ng)] = capacityAnnotations(f, boot)
	}
	return out
}
