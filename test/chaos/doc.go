// Package chaos runs magnum-conductor against peers of the test's own that
// a scenario may kill: RabbitMQ nodes, clustered with quorum queues (Rabbit),
// a MariaDB Galera cluster behind a failover proxy (Galera, Proxy), and the
// conductor processes themselves (Conductor), under a steady load of calls
// and casts whose outcome is recorded (Load). The shared broker and
// database of the test machine are never stopped.
//
// The scenarios of issue #28 are the tests of this package, behind the
// build tag chaos: `make chaos` runs them (about 25 minutes), and docs/testing.md
// lists what each injects, what held and its figures.
package chaos
