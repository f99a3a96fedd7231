package periodic

import (
	"context"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/conductor/clusterstate"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// ClusterStore is the part of db.Store the cluster jobs use.
type ClusterStore interface {
	clusterstate.Store
	ListClusters(ctx context.Context, opts db.ListOpts, f db.ClusterFilters) ([]*objects.Cluster, error)
	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*objects.ClusterTemplate, error)
	SaveCluster(ctx context.Context, c *objects.Cluster) error
	ListNodeGroupsOfClusters(ctx context.Context, clusterUUIDs []string) (map[string][]*objects.NodeGroup, error)
}

// ServiceStore is the part of db.Store the heartbeat and the membership use.
type ServiceStore interface {
	ListMagnumServices(ctx context.Context, opts db.ListOpts) ([]*objects.MagnumService, error)
	ReportServiceUp(ctx context.Context, host, binary string) (*objects.MagnumService, error)
}

// DriverLookup finds the driver of a template; *drivers.Registry
// implements it.
type DriverLookup interface {
	ForTemplate(ct *objects.ClusterTemplate) (drivers.Driver, error)
}

// Notifier emits the CADF notification magnum.cluster.<action> with outcome
// success or failure (conductor_utils.notify_about_cluster_operation). The
// conductor package builds the payload.
type Notifier interface {
	ClusterEvent(ctx context.Context, action, outcome string, c *objects.Cluster)
}

// CertDeleter removes a cluster's certificates (all four: the Kubernetes,
// etcd and front-proxy CAs and the Magnum client certificate).
// certmanager.Manager implements it.
type CertDeleter interface {
	DeleteForCluster(ctx context.Context, c *objects.Cluster) error
}

// MonitorFactory builds the health monitor of a cluster whose driver has
// none of its own (KubernetesMonitors).
type MonitorFactory interface {
	Monitor(ctx context.Context, c *objects.Cluster) (drivers.Monitor, error)
}

// Resumer resumes an operation interrupted between its claim and its
// driver call, as the status machine decided (conductor.Handlers). Its
// error matches clusterstate.ErrStale when the cluster changed since it was
// read (another conductor resumed it first).
type Resumer interface {
	Resume(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, r statusmachine.Resume) error
}
