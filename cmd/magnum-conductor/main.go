// Command magnum-conductor serves Magnum's conductor RPC topic, runs the
// periodic cluster jobs and the service heartbeat. It is a drop-in
// replacement for the Python magnum-conductor: same magnum.conf, same
// RabbitMQ topic and wire protocol, same database.
//
// It is the conductor library (package service) with the bundled cluster
// drivers registered; a binary with other drivers is built the same way
// (docs/writing-a-driver.md).
package main

import (
	"os"

	"github.com/openstack/magnum-conductor/service"
)

func main() {
	os.Exit(service.Main(os.Args[1:], service.Options{}, simulatedDriver, capiDriver))
}
