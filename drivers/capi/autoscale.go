package capi

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// annotationSizedNodeCount records on an autoscaled MachineDeployment the
// node_count the driver last sized it to.
//
// An autoscaled nodegroup's MachineDeployment has no replicas in the
// Cluster's topology (the Cluster webhook forbids them beside the
// autoscaler's size annotations): Cluster API creates it at its minimum
// size, and the cluster-autoscaler owns replicas from then on. Magnum's
// node_count still says where the nodegroup starts, and a resize where it
// goes: the driver writes those replicas on the MachineDeployment itself,
// once per node_count (this annotation), and leaves it to the autoscaler
// afterwards.
const annotationSizedNodeCount = "magnum.openstack.org/sized-node-count"

// sizingTarget is the size an autoscaled nodegroup is asked for: its
// node_count within the MachineDeployment's autoscaler range.
func sizingTarget(ng *objects.NodeGroup, md *clusterv1.MachineDeployment) int32 {
	minN, maxN := autoscalerBounds(md)
	t := int32(ng.NodeCount)
	if t < minN {
		t = minN
	}
	if maxN >= 0 && t > maxN {
		t = maxN
	}
	return t
}

// sized reports whether the driver has sized md for ng's node_count.
func sized(ng *objects.NodeGroup, md *clusterv1.MachineDeployment) bool {
	return md.Annotations[annotationSizedNodeCount] == strconv.Itoa(int(sizingTarget(ng, md)))
}

// sizeAutoscaled writes an autoscaled nodegroup's node_count (within its
// range) on its MachineDeployment, once per node_count: concurrent
// observations of the cluster write it once (d.guard), also before the
// informer cache shows the write.
func (d *Driver) sizeAutoscaled(ctx context.Context, r ref, ng *objects.NodeGroup, md *clusterv1.MachineDeployment) error {
	key := "size/" + r.Namespace + "/" + md.Name + "/" + string(md.UID)
	if sized(ng, md) {
		d.guard.forget(key)
		return nil
	}
	t := sizingTarget(ng, md)
	unlock, err := d.guard.lock(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	if d.guard.written(key, strconv.Itoa(int(t))) {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"replicas":%d}}`, annotationSizedNodeCount, strconv.Itoa(int(t)), t)
	if _, err := d.deps.Dynamic.Resource(gvrMD).Namespace(r.Namespace).Patch(ctx, md.Name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("capi: size MachineDeployment %s/%s to %d: %w", r.Namespace, md.Name, t, err)
	}
	d.guard.note(key, strconv.Itoa(int(t)))
	d.log.Info("autoscaled nodegroup sized", "capi_cluster", r.String(), "nodegroup", ng.Name, "machinedeployment", md.Name, "replicas", t)
	return nil
}
