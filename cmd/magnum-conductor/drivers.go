package main

import (
	"context"
	"fmt"

	"github.com/openstack/magnum-conductor/certmanager"
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

// capiDriver is the Cluster API driver, when configured (capi.go). It is
// given the conductor's certificate manager (the cluster CAs it hands to
// Cluster API), and no database handle: the conductor persists what it
// returns.
func capiDriver(_ context.Context, env service.DriverEnv) (drivers.Driver, error) {
	certs, ok := env.Certs.(*certmanager.Manager)
	if !ok {
		return nil, fmt.Errorf("the Cluster API driver needs the conductor's certificate manager, not %T", env.Certs)
	}
	return newCAPIDriver(env.Config, certs, env.Log.With("component", "capi"))
}
