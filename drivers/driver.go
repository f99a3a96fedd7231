// Package drivers defines the cluster driver interface (the Go twin of
// magnum/drivers/common/driver.py), the registry that selects a driver for a
// cluster template, and the monitor interface used by health polling.
//
// Implementations live in sub-packages (drivers/capi, drivers/simulated) and
// are registered explicitly in main.
package drivers

import (
	"context"
	"errors"

	"github.com/openstack/magnum-conductor/api/objects"
)

// ErrNotReady is wrapped by the errors of a driver whose backend has not
// answered yet (the Cluster API driver before its management cluster is
// reachable). The driver logs its own retries; callers that poll, such as
// sync_cluster_status, need not log each refused cluster.
var ErrNotReady = errors.New("driver not ready")

// Key is what a driver provides: (server_type, os, coe), as in
// Driver.provides.
type Key struct {
	ServerType string // "vm" or "bm"
	OS         string // the template's cluster_distro
	COE        string // "kubernetes"
}

// ScaleManager picks the nodes to remove when a cluster shrinks
// (magnum.conductor.scale_manager). Drivers that let the backend choose
// return nil from ScaleManagerProvider.
type ScaleManager interface {
	// NodesToRemove returns the names or ids of the nodes to delete to reach
	// nodeCount in the nodegroup.
	NodesToRemove(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup, nodeCount int) ([]string, error)
}

// Driver is the required part of a cluster driver. Every method receives the
// request context in ctx (request.From(ctx)); the cluster and nodegroup
// objects are modified in place and saved by the caller.
//
// Methods return errors from api/exception where Magnum raises a Magnum
// exception (NotSupported, InvalidParameterValue, ...); any other error
// becomes MagnumException at the RPC edge.
type Driver interface {
	// Name is the entry-point name the driver is registered under (the
	// value of a cluster template's `driver` field).
	Name() string
	// Provides lists the (server_type, os, coe) keys the driver serves.
	Provides() []Key

	CreateCluster(ctx context.Context, cluster *objects.Cluster, createTimeout int) error
	UpdateCluster(ctx context.Context, cluster *objects.Cluster, sm ScaleManager, rollback bool) error
	DeleteCluster(ctx context.Context, cluster *objects.Cluster) error
	ResizeCluster(ctx context.Context, cluster *objects.Cluster, sm ScaleManager, nodeCount int, nodesToRemove []string, ng *objects.NodeGroup) error
	UpgradeCluster(ctx context.Context, cluster *objects.Cluster, template *objects.ClusterTemplate, maxBatchSize int, ng *objects.NodeGroup, sm ScaleManager, rollback bool) error

	CreateNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error
	UpdateNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error
	DeleteNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error

	// UpdateClusterStatus reads the backend and updates cluster.Status,
	// StatusReason, addresses, coe_version and the nodegroups it is given
	// (in place). The caller saves what changed.
	UpdateClusterStatus(ctx context.Context, cluster *objects.Cluster, nodegroups []*objects.NodeGroup) error
}

// PreDeleter is implemented by drivers that clean up before deletion
// (Driver.pre_delete_cluster). The conductor calls it before DeleteCluster,
// which Magnum forgets to do.
type PreDeleter interface {
	PreDeleteCluster(ctx context.Context, cluster *objects.Cluster) error
}

// CARotator is implemented by drivers that can roll out new cluster CAs.
// Drivers without it answer NotSupported("'rotate_ca_certificate' is not
// supported by this driver.").
type CARotator interface {
	RotateCACertificate(ctx context.Context, cluster *objects.Cluster) error
}

// CredentialRotator is implemented by drivers that can rotate the cloud
// credential a cluster uses. Without it the conductor answers
// NotSupported("Credential rotation is not supported by driver.").
type CredentialRotator interface {
	RotateCredential(ctx context.Context, cluster *objects.Cluster) error
}

// MasterResizeValidator is implemented by drivers that can resize masters.
// Without it every master resize is refused (MasterNGResizeNotSupported).
type MasterResizeValidator interface {
	ValidateMasterResize(nodeCount int) error
}

// ScaleManagerProvider is implemented by drivers that choose nodes to
// remove themselves (get_scale_manager).
type ScaleManagerProvider interface {
	ScaleManager(ctx context.Context, cluster *objects.Cluster) (ScaleManager, error)
}

// MonitorProvider is implemented by drivers that supply a health monitor
// (get_monitor). Drivers without it are polled with the Kubernetes monitor
// of the periodic package.
type MonitorProvider interface {
	// Monitor returns the monitor for cluster, or nil for "no monitor".
	Monitor(ctx context.Context, cluster *objects.Cluster) (Monitor, error)
}

// Health is the result of one health poll.
type Health struct {
	// Status is HEALTHY, UNHEALTHY or UNKNOWN; "" means "leave unchanged"
	// (the auto-healer skip).
	Status string
	// Reason is stored as health_status_reason.
	Reason map[string]string
}

// Monitor polls the health of one cluster (MonitorBase.poll_health_status).
// It must honour ctx's deadline.
type Monitor interface {
	PollHealth(ctx context.Context) (Health, error)
}
