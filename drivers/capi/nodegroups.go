package capi

import (
	"context"
	"slices"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// CreateNodeGroup implements drivers.Driver: a new MachineDeployment in the
// topology.
func (d *Driver) CreateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	if req.NodeGroup.Role == objects.RoleMaster {
		return drivers.Result{}, exception.ClassCreateMasterNodeGroup.New(nil)
	}
	return drivers.Result{}, d.reapply(ctx, req.ClusterRequest, nodeGroups(req.ClusterRequest, req.NodeGroup), applyOptions{check: cloudCheck{ng: req.NodeGroup}})
}

// UpdateNodeGroup implements drivers.Driver. A Magnum nodegroup update
// changes only node_count, min_node_count and max_node_count: like a
// resize it checks nothing in the cloud, so that an image since rotated
// out of Glance or a minimum flavor size raised since does not block
// scaling an existing nodegroup (as magnum-capi-helm).
func (d *Driver) UpdateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{}, d.reapply(ctx, req.ClusterRequest, nodeGroups(req.ClusterRequest, req.NodeGroup), applyOptions{})
}

// DeleteNodeGroup implements drivers.Driver: the MachineDeployment leaves
// the topology; Observe reports the nodegroup gone once its Machines are.
func (d *Driver) DeleteNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	if err := d.usable(); err != nil {
		return drivers.Result{}, err
	}
	ng := req.NodeGroup
	if ng.Role == objects.RoleMaster {
		return drivers.Result{}, exception.ClassDeletingDefaultNGNotSupported.New(nil)
	}
	ngs := slices.DeleteFunc(nodeGroups(req.ClusterRequest), func(n *objects.NodeGroup) bool { return n.UUID == ng.UUID })
	if err := d.reapply(ctx, req.ClusterRequest, ngs, applyOptions{}); err != nil {
		return drivers.Result{}, err
	}
	d.deleteNodeGroupServerGroup(ctx, req.Cluster, ng)
	return drivers.Result{}, nil
}
