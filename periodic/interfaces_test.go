package periodic_test

import (
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/periodic"
)

// The real implementations satisfy the narrow interfaces the jobs declare.
var (
	_ periodic.ClusterStore      = (*db.Store)(nil)
	_ periodic.ServiceStore      = (*db.Store)(nil)
	_ periodic.DriverLookup      = (*drivers.Registry)(nil)
	_ periodic.CertDeleter       = (*certmanager.Manager)(nil)
	_ periodic.ClientCredentials = (*certmanager.Manager)(nil)
	_ periodic.MonitorFactory    = (*periodic.KubernetesMonitors)(nil)
	_ periodic.Sharder           = (*periodic.Membership)(nil)
	_ periodic.Job               = (*periodic.SyncClusterStatus)(nil)
	_ periodic.Job               = (*periodic.SyncClusterHealth)(nil)
	_ periodic.Job               = (*periodic.Heartbeat)(nil)
)
