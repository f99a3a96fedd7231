package capi

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// ValidateMasterResize implements drivers.MasterResizeValidator: the
// control plane keeps an odd member count for etcd quorum.
func (d *Driver) ValidateMasterResize(nodeCount int) error {
	if nodeCount < 1 || nodeCount%2 == 0 {
		return invalid("Master node count must be odd and at least 1, got %d.", nodeCount)
	}
	return nil
}

// ResizeCluster implements drivers.Driver. Machines named in nodesToRemove
// (server UUID, Machine name or node name) get the delete-machine
// annotation, then the replicas are lowered in the same call, so CAPI
// removes exactly those machines.
func (d *Driver) ResizeCluster(ctx context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return drivers.Result{}, d.resize(ctx, req.ClusterRequest, req.NodeCount, req.NodesToRemove, req.NodeGroup)
}

func (d *Driver) resize(ctx context.Context, req drivers.ClusterRequest, nodeCount int, nodesToRemove []string, ng *objects.NodeGroup) error {
	if err := d.usable(); err != nil {
		return err
	}
	c := req.Cluster
	if ng == nil {
		return invalid("A nodegroup is required to resize.")
	}
	if ng.Role == objects.RoleMaster {
		if err := d.ValidateMasterResize(nodeCount); err != nil {
			return err
		}
	}
	r, err := mustRef(c)
	if err != nil {
		return err
	}
	// The re-apply needs the template: a missing one fails before the
	// first write.
	if _, err := requestTemplate(req); err != nil {
		return err
	}
	// Resolve every node before the first write.
	var victims []string
	if len(nodesToRemove) > 0 {
		obs := d.cache.Load().observe(r.Namespace, r.Name)
		mdName := mdNameFor(ng)
		inNG := func(m *clusterv1.Machine) bool {
			if ng.Role == objects.RoleMaster {
				_, cp := m.Labels[clusterv1.MachineControlPlaneLabel]
				return cp
			}
			return m.Labels[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == mdName
		}
		// The nodegroup's size now, from its Machines: the conductor has
		// already set ng.NodeCount to the new size.
		current := 0
		for _, m := range obs.Machines {
			if inNG(m) {
				current++
			}
		}
		var missing []string
		for _, want := range nodesToRemove {
			found := ""
			for _, m := range obs.Machines {
				if !inNG(m) {
					continue
				}
				if m.Name == want || m.Status.NodeRef.Name == want ||
					(m.Spec.ProviderID != "" && strings.HasSuffix(m.Spec.ProviderID, "/"+want)) {
					found = m.Name
					break
				}
			}
			if found == "" {
				missing = append(missing, want)
			} else {
				victims = append(victims, found)
			}
		}
		if len(missing) > 0 {
			return invalid("Nodes %s are not in nodegroup %s.", strings.Join(missing, ", "), ng.Name)
		}
		if current > nodeCount && len(victims) > current-nodeCount {
			return invalid("%d nodes to remove but the nodegroup only shrinks by %d.", len(victims), current-nodeCount)
		}
	}
	for _, name := range victims {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"yes"}}}`, clusterv1.DeleteMachineAnnotation)
		if _, err := d.deps.Dynamic.Resource(gvrMachine).Namespace(r.Namespace).Patch(ctx, name, types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
			// (Gone already: removed as asked, by an earlier call.)
			return fmt.Errorf("capi: mark Machine %s/%s for deletion: %w", r.Namespace, name, err)
		}
	}
	ng.NodeCount = int64(nodeCount)
	// An autoscaled nodegroup's new node_count is written on its
	// MachineDeployment by Observe (sizeAutoscaled), once.
	if err := d.reapply(ctx, req, nodeGroups(req, ng), applyOptions{}); err != nil {
		return err
	}
	d.log.Info("cluster resized", append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "node_count", nodeCount, "nodes_removed", len(victims))...)
	return nil
}
