package main

import (
	"context"
	"log/slog"

	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/drivers"
)

// newCAPIDriver returns the Cluster API driver, or nil when it is not
// configured.
func newCAPIDriver(ctx context.Context, cfg *config.Config, certs *certmanager.Manager, log *slog.Logger) (drivers.Driver, error) {
	return nil, nil
}
