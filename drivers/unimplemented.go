package drivers

import (
	"context"

	"github.com/openstack/magnum-conductor/api/exception"
)

// Unimplemented answers every operation with NotSupported and every
// Observe with PhasePending. Embed it in a driver (by value) and override
// what the driver does: a method added to Driver later comes with its
// default here, so the driver keeps compiling (see the compatibility policy
// in the package documentation). Name and Provides have no default.
//
// A cluster whose driver cannot observe stays in progress until its
// operation's deadline fails it.
type Unimplemented struct{}

func unsupported(op string) error { return exception.NotSupported(op) }

// CreateCluster answers NotSupported.
func (Unimplemented) CreateCluster(context.Context, CreateClusterRequest) (Result, error) {
	return Result{}, unsupported("create_cluster")
}

// UpdateCluster answers NotSupported.
func (Unimplemented) UpdateCluster(context.Context, ClusterRequest) (Result, error) {
	return Result{}, unsupported("update_cluster")
}

// ResizeCluster answers NotSupported.
func (Unimplemented) ResizeCluster(context.Context, ResizeRequest) (Result, error) {
	return Result{}, unsupported("resize_cluster")
}

// UpgradeCluster answers NotSupported.
func (Unimplemented) UpgradeCluster(context.Context, UpgradeRequest) (Result, error) {
	return Result{}, unsupported("upgrade_cluster")
}

// DeleteCluster answers NotSupported.
func (Unimplemented) DeleteCluster(context.Context, ClusterRequest) (Result, error) {
	return Result{}, unsupported("delete_cluster")
}

// CreateNodeGroup answers NotSupported.
func (Unimplemented) CreateNodeGroup(context.Context, NodeGroupRequest) (Result, error) {
	return Result{}, unsupported("create_nodegroup")
}

// UpdateNodeGroup answers NotSupported.
func (Unimplemented) UpdateNodeGroup(context.Context, NodeGroupRequest) (Result, error) {
	return Result{}, unsupported("update_nodegroup")
}

// DeleteNodeGroup answers NotSupported.
func (Unimplemented) DeleteNodeGroup(context.Context, NodeGroupRequest) (Result, error) {
	return Result{}, unsupported("delete_nodegroup")
}

// Observe reports PhasePending: nothing can be judged.
func (Unimplemented) Observe(context.Context, ObserveRequest) (Observation, error) {
	return Observation{Phase: PhasePending}, nil
}
