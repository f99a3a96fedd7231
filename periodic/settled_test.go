package periodic_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/periodic"
)

// settledDriver's back end resizes the default worker on its own (an
// autoscaler) to 7 nodes, after every operation.
type settledDriver struct {
	drivers.Unimplemented
	observes bool
	calls    atomic.Int32
}

func (d *settledDriver) Name() string { return "settled" }
func (d *settledDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "settled", COE: "kubernetes"}}
}
func (d *settledDriver) ObservesSettled() bool { return d.observes }

func (d *settledDriver) Observe(_ context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	d.calls.Add(1)
	seven := 7
	obs := drivers.Observation{Phase: drivers.PhaseFailed, Reason: "not to be judged", APIAddress: "https://192.0.2.9:6443",
		NodeGroups: map[string]drivers.NodeGroupObservation{}}
	for _, ng := range req.NodeGroups {
		o := drivers.NodeGroupObservation{Phase: drivers.PhaseFailed, NodeAddresses: []string{"192.0.2.1"}}
		if ng.Role == objects.RoleWorker {
			o.NodeCount = &seven
		}
		obs.NodeGroups[ng.UUID] = o
	}
	return obs, nil
}

// The node_count of a nodegroup the back end sizes itself follows the back
// end at every sync, after its operation ended too (vexxhost #521, #907),
// for a driver that asks for it (drivers.SettledObserver); no status,
// reason or notification changes.
func TestSyncStoresWhatTheBackEndDecidesOnSettledClusters(t *testing.T) {
	drv := &settledDriver{observes: true}
	e := newEnv(t, drv)
	e.store.templates["st"] = &objects.ClusterTemplate{UUID: objects.Str("st"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("settled"), Coe: "kubernetes"}
	ok := e.addCluster(1, objects.CreateComplete, "", nil, "st")
	failed := e.addCluster(2, objects.UpdateFailed, "", nil, "st")
	// A settled cluster of a driver that does not ask for it.
	other := e.addCluster(3, objects.CreateComplete, "", nil, "ct")
	for _, uuid := range []string{ok, failed, other} {
		c := e.store.cluster(uuid)
		c.StatusReason = objects.Str("as it was")
		if err := e.store.SaveCluster(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}

	// Without SyncOptions.Settled, settled clusters are not observed.
	e.runSync()
	if n := drv.calls.Load(); n != 0 {
		t.Fatalf("%d observations of settled clusters without SyncOptions.Settled", n)
	}
	sync, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{Settled: true}, e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := sync.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := drv.calls.Load(); n != 2 {
		t.Errorf("%d observations, want one per settled cluster of the driver (2)", n)
	}
	for uuid, status := range map[string]string{ok: objects.CreateComplete, failed: objects.UpdateFailed} {
		c := e.store.cluster(uuid)
		if c.Status != status || objects.Deref(c.StatusReason) != "as it was" || objects.Deref(c.APIAddress) != "https://192.0.2.9:6443" {
			t.Errorf("cluster %s: %s %q %q, want %s, its reason kept and the api_address stored", uuid, c.Status,
				objects.Deref(c.StatusReason), objects.Deref(c.APIAddress), status)
		}
		w := e.store.nodeGroups(uuid)[uuid+"-w"]
		m := e.store.nodeGroups(uuid)[uuid+"-m"]
		if w.NodeCount != 7 || w.Status != objects.CreateComplete || m.NodeCount != 1 || len(m.NodeAddresses) != 1 {
			t.Errorf("cluster %s: worker %d %s, master %d %v; want the worker's node_count 7, the master's addresses",
				uuid, w.NodeCount, w.Status, m.NodeCount, m.NodeAddresses)
		}
	}
	if w := e.store.nodeGroups(other)[other+"-w"]; w.NodeCount != 2 {
		t.Errorf("a driver without SettledObserver: worker node_count %d, want 2", w.NodeCount)
	}
	if ev := e.notifier.all(); len(ev) != 0 {
		t.Errorf("notifications for settled clusters: %v", ev)
	}
	// A driver that says no is not asked.
	drv.observes = false
	drv.calls.Store(0)
	if err := sync.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := drv.calls.Load(); n != 0 {
		t.Errorf("%d observations by a driver whose ObservesSettled is false", n)
	}
}

// A settled cluster whose template names a driver this conductor does not
// run (left by another driver in a shared database) is not refreshed, and
// is not warned about at every cycle; a settled cluster of a registered
// driver beside it still is.
func TestSettledClusterOfAnUnregisteredDriverIsQuiet(t *testing.T) {
	drv := &settledDriver{observes: true}
	e := newEnv(t, drv)
	e.store.templates["st"] = &objects.ClusterTemplate{UUID: objects.Str("st"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("settled"), Coe: "kubernetes"}
	e.store.templates["heat"] = &objects.ClusterTemplate{UUID: objects.Str("heat"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("fedora-coreos"), Coe: "kubernetes"}
	e.addCluster(1, objects.CreateComplete, "", nil, "heat")
	e.addCluster(2, objects.CreateComplete, "", nil, "st")
	var logs testkit.SyncBuffer
	deps := e.deps
	deps.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sync, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{Settled: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := sync.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := drv.calls.Load(); n != 1 {
		t.Errorf("%d observations, want 1 (the registered driver's cluster)", n)
	}
	if s := logs.String(); strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") {
		t.Errorf("a settled cluster without a registered driver was logged as a failure:\n%s", s)
	}
}
