package main

import (
	"context"
	"fmt"

	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/service"
)

// simulatedDriver is the simulated driver, when [simulated_driver]/enabled.
func simulatedDriver(_ context.Context, env service.DriverEnv) (drivers.Driver, error) {
	if !env.Config.SimulatedDriver.Enabled {
		return nil, nil
	}
	return simulated.New(simulated.Options{Delay: env.Config.SimulatedDriver.OperationDelay}), nil
}

// capiDriver is the Cluster API driver, when configured (capi.go). Until
// its factory takes DriverEnv itself, it is given the conductor's own
// certificate manager and (read-only, see conductorWrites) store.
func capiDriver(_ context.Context, env service.DriverEnv) (drivers.Driver, error) {
	certs, ok := env.Certs.(*certmanager.Manager)
	store, ok2 := env.Lookup.(*db.Store)
	if !ok || !ok2 {
		return nil, fmt.Errorf("the Cluster API driver needs the conductor's certificate manager and store, not %T and %T",
			env.Certs, env.Lookup)
	}
	return newCAPIDriver(env.Config, certs, store, env.Log.With("component", "capi"))
}
