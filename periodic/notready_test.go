package periodic_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/periodic"
	"github.com/openstack/magnum-conductor/test/harness"
)

// notReadyDriver is the simulated driver whose backend is away: its
// monitor and its status sync wrap drivers.ErrNotReady, as the Cluster API
// driver does while its management cluster does not answer.
type notReadyDriver struct{ *simulated.Driver }

var errAway = fmt.Errorf("management cluster has not answered since 12:00: %w", drivers.ErrNotReady)

func (d notReadyDriver) Name() string { return "away" }
func (d notReadyDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "away", COE: "kubernetes"}}
}
func (d notReadyDriver) Monitor(context.Context, drivers.ClusterRequest) (drivers.Monitor, error) {
	return nil, errAway
}

// TestHealthOfADriverNotReadyIsUnknownWithoutAWarningPerCluster: while a
// driver's backend is away, each of its clusters reads UNKNOWN with the
// driver's reason, and the poll logs that at debug level only: the driver
// says it once, not one warning per cluster per interval.
func TestHealthOfADriverNotReadyIsUnknownWithoutAWarningPerCluster(t *testing.T) {
	e := newEnv(t, notReadyDriver{simulated.New(simulated.Options{})})
	e.store.templates["away"] = &objects.ClusterTemplate{UUID: objects.Str("away"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("away"), Coe: "kubernetes"}
	var logs harness.SyncBuffer // the job's workers log concurrently
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	deps := e.deps
	deps.Log = log
	job, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute, PollTimeout: time.Second},
		periodic.HealthDeps{Deps: deps})
	if err != nil {
		t.Fatal(err)
	}
	away := []string{e.addCluster(1, objects.CreateComplete, "", nil, "away"), e.addCluster(2, objects.UpdateComplete, "", nil, "away")}
	failing := e.addCluster(3, objects.CreateComplete, "", map[string]string{"sim_health": "error"}, "ct")
	if err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, uuid := range away {
		c := e.store.cluster(uuid)
		if c.HealthStatus != objects.Unknown || !strings.Contains(c.HealthStatusReason["api"], "has not answered since 12:00") {
			t.Errorf("%s: health %q %v, want UNKNOWN with the driver's reason", uuid, c.HealthStatus, c.HealthStatusReason)
		}
		if !strings.Contains(logs.String(), "level=DEBUG msg=\"cluster health poll waits for its driver\" cluster_uuid="+uuid) {
			t.Errorf("no debug line for %s in:\n%s", uuid, logs.String())
		}
	}
	// Other failures still warn.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && !strings.Contains(line, "cluster_uuid="+failing) {
			t.Errorf("warning about a cluster whose driver is only away: %s", line)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"cluster health poll failed\" cluster_uuid="+failing) {
		t.Errorf("no warning for the failing monitor in:\n%s", logs.String())
	}
}
