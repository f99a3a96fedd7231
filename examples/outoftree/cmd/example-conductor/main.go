// Command example-conductor is magnum-conductor with the example driver
// registered beside the bundled simulated driver: a conductor binary built
// outside the conductor's repository.
package main

import (
	"context"
	"os"

	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/service"

	"example.com/magnum-example-driver/exampledriver"
)

func main() {
	os.Exit(service.Main(os.Args[1:], service.Options{}, exampledriver.Factory, simulatedDriver))
}

// simulatedDriver registers the bundled simulated driver when
// [simulated_driver]/enabled: any driver of the repository is a factory
// away.
func simulatedDriver(_ context.Context, env service.DriverEnv) (drivers.Driver, error) {
	if !env.Config.SimulatedDriver.Enabled {
		return nil, nil
	}
	return simulated.New(simulated.Options{Delay: env.Config.SimulatedDriver.OperationDelay}), nil
}
