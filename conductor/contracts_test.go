package conductor

import (
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// The narrow interfaces are satisfied by the real implementations main
// wires in.
var (
	_ Store           = (*db.Store)(nil)
	_ NodeGroupLister = (*db.Store)(nil)
	_ CertManager     = (*certmanager.Manager)(nil)
	_ Notifier        = (*oslo.Notifier)(nil)
	_ DriverRegistry  = (*drivers.Registry)(nil)
)
