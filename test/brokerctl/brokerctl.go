// Package brokerctl restarts the test machine's RabbitMQ for the tests that
// check recovery from a broker restart. Such a restart fails every other
// test using the broker at that moment, so those tests run only when
// OSLO_BROKER_RESTART_TEST=1, which `make test` sets in a step of its own
// after everything else.
package brokerctl

import (
	"os"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// Env enables the broker-restart tests.
const Env = "OSLO_BROKER_RESTART_TEST"

// SkipUnlessEnabled skips t unless Env is set.
func SkipUnlessEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("restarts the shared broker: run alone with %s=1 (make test does, last)", Env)
	}
}

// Restart stops the broker application (`rabbitmqctl stop_app`), waits a
// second, starts it again and waits until it is up. The broker is started
// again when the test ends, whatever happened.
func Restart(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { _, _ = testkit.CombinedOutput(testkit.ToolTimeout, "rabbitmqctl", "start_app") })
	for _, args := range [][]string{{"stop_app"}, nil, {"start_app"}, {"await_startup"}} {
		if args == nil {
			time.Sleep(time.Second)
			continue
		}
		if out, err := testkit.CombinedOutput(testkit.ToolTimeout, "rabbitmqctl", args...); err != nil {
			t.Fatalf("rabbitmqctl %v: %v\n%s", args, err, out)
		}
	}
}
