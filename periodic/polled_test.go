package periodic_test

// Which clusters each periodic task looks at, a poll that fails once, and a
// nodegroup deletion finished by sync_cluster_status.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/periodic"
)

// recDriver records the clusters it is polled for and monitors. An Observe
// fails once for the clusters in failOnce; a successful one reports a
// cluster being created, and its nodegroups, ready, and any other in
// progress.
type recDriver struct {
	drivers.Unimplemented
	mu        sync.Mutex
	polled    []string
	monitored []string
	failOnce  map[string]bool
}

func (d *recDriver) Name() string { return "rec" }
func (d *recDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "rec", COE: "kubernetes"}}
}

func (d *recDriver) Observe(_ context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	uuid := objects.Deref(req.Cluster.UUID)
	d.polled = append(d.polled, uuid)
	if d.failOnce[uuid] {
		delete(d.failOnce, uuid)
		return drivers.Observation{}, errors.New("the management cluster timed out")
	}
	if req.Cluster.Status == objects.CreateInProgress {
		return ready(req), nil
	}
	return drivers.Observation{Phase: drivers.PhaseInProgress}, nil
}

type healthyMonitor struct{}

func (healthyMonitor) PollHealth(context.Context) (drivers.Health, error) {
	return drivers.Health{Status: objects.Healthy, Reason: map[string]string{"api": "ok"}}, nil
}

func (d *recDriver) Monitor(_ context.Context, req drivers.ClusterRequest) (drivers.Monitor, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.monitored = append(d.monitored, objects.Deref(req.Cluster.UUID))
	return healthyMonitor{}, nil
}

func (d *recDriver) seen() (polled, monitored []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(slices.Values(d.polled)), slices.Sorted(slices.Values(d.monitored))
}

func newRecEnv(t *testing.T) (*env, *recDriver) {
	rec := &recDriver{failOnce: map[string]bool{}}
	e := newEnv(t, rec)
	e.store.templates["rec"] = &objects.ClusterTemplate{UUID: objects.Str("rec"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("rec"), Coe: "kubernetes"}
	return e, rec
}

// seedEveryStatus adds one cluster per cluster status, each handed to its
// driver (a stack_id), and returns their UUIDs by status.
func seedEveryStatus(e *env) map[string]string {
	byStatus := map[string]string{}
	for i, status := range objects.ClusterStatuses {
		byStatus[status] = e.addCluster(i+1, status, "rec", nil, "rec")
	}
	return byStatus
}

func uuidsOf(byStatus map[string]string, statuses ...string) []string {
	var out []string
	for _, s := range statuses {
		out = append(out, byStatus[s])
	}
	return slices.Sorted(slices.Values(out))
}

// TestSyncPollsOnlyClustersInProgress: Magnum's sync_cluster_status asks
// the driver about the four *_IN_PROGRESS states only; a DELETE_COMPLETE
// row (an interrupted clean-up) is finished without asking the driver.
func TestSyncPollsOnlyClustersInProgress(t *testing.T) {
	e, rec := newRecEnv(t)
	byStatus := seedEveryStatus(e)
	e.runSync()
	polled, _ := rec.seen()
	want := uuidsOf(byStatus, objects.CreateInProgress, objects.UpdateInProgress, objects.DeleteInProgress,
		objects.RollbackInProgress)
	if !slices.Equal(polled, want) {
		t.Fatalf("polled %v, want the clusters in progress %v", polled, want)
	}
	if leftover := byStatus[objects.DeleteComplete]; e.store.cluster(leftover) != nil || e.store.destroyed[leftover] != 1 {
		t.Fatalf("the DELETE_COMPLETE row was not finished (destroyed %d times)", e.store.destroyed[leftover])
	}
	for _, s := range objects.ClusterStatuses {
		if s == objects.DeleteComplete || s == objects.CreateInProgress {
			continue
		}
		if c := e.store.cluster(byStatus[s]); c == nil || c.Status != s {
			t.Errorf("cluster in %s changed: %+v", s, c)
		}
	}
}

// TestSyncRetriesAFailedPollNextCycle: a driver error leaves the cluster as
// it was, and the next cycle polls it again and completes it.
func TestSyncRetriesAFailedPollNextCycle(t *testing.T) {
	e, rec := newRecEnv(t)
	uuid := e.addCluster(1, objects.CreateInProgress, "rec", nil, "rec")
	rec.failOnce[uuid] = true
	e.runSync()
	if c := e.store.cluster(uuid); c.Status != objects.CreateInProgress || len(e.notifier.all()) != 0 {
		t.Fatalf("after the failed poll: %s, events %v", c.Status, e.notifier.all())
	}
	e.runSync()
	if c := e.store.cluster(uuid); c.Status != objects.CreateComplete {
		t.Fatalf("after the next cycle: %s", c.Status)
	}
	if polled, _ := rec.seen(); len(polled) != 2 {
		t.Fatalf("polled %d times, want 2", len(polled))
	}
	if got := e.notifier.all(); !slices.Equal(got, []event{{uuid, "create", "success"}}) {
		t.Fatalf("events %v", got)
	}
}

// TestSyncLeavesACreateNotHandedOverAlone: a cluster in
// CREATE_IN_PROGRESS without stack_id is still its create handler's (in
// this or another conductor): the sync does not ask the driver, and
// nothing, not even a driver that would report it ready, completes it
// (#28: a create is done only when its driver says so).
func TestSyncLeavesACreateNotHandedOverAlone(t *testing.T) {
	e, rec := newRecEnv(t)
	uuid := e.addCluster(1, objects.CreateInProgress, "", nil, "rec")
	sim := e.addCluster(2, objects.CreateInProgress, "", nil, "ct")
	e.clock.Advance(2 * time.Hour)
	e.runSync()
	if polled, _ := rec.seen(); len(polled) != 0 {
		t.Fatalf("polled %v", polled)
	}
	for _, u := range []string{uuid, sim} {
		if c := e.store.cluster(u); c.Status != objects.CreateInProgress || len(e.store.saved[u]) != 0 {
			t.Fatalf("cluster %s: %s, saves %v", u, c.Status, e.store.saved[u])
		}
	}
	if ev := e.notifier.all(); len(ev) != 0 {
		t.Fatalf("events %v", ev)
	}
}

// TestHealthPollsTheNineStates: sync_cluster_health_status looks at
// CREATE_IN_PROGRESS, CREATE_FAILED, CREATE_COMPLETE, UPDATE_*,
// DELETE_IN_PROGRESS, DELETE_FAILED and ROLLBACK_IN_PROGRESS (Magnum's
// periodic.py), and at nothing else.
func TestHealthPollsTheNineStates(t *testing.T) {
	nine := []string{objects.CreateInProgress, objects.CreateFailed, objects.CreateComplete,
		objects.UpdateInProgress, objects.UpdateFailed, objects.UpdateComplete,
		objects.DeleteInProgress, objects.DeleteFailed, objects.RollbackInProgress}
	if !slices.Equal(slices.Sorted(slices.Values(periodic.HealthStatuses)), slices.Sorted(slices.Values(nine))) {
		t.Fatalf("HealthStatuses = %v, want %v", periodic.HealthStatuses, nine)
	}
	e, rec := newRecEnv(t)
	byStatus := seedEveryStatus(e)
	e.runHealth()
	_, monitored := rec.seen()
	if want := uuidsOf(byStatus, nine...); !slices.Equal(monitored, want) {
		t.Fatalf("monitored %v, want %v", monitored, want)
	}
	for _, s := range objects.ClusterStatuses {
		c := e.store.cluster(byStatus[s])
		if got, want := c.HealthStatus == objects.Healthy, slices.Contains(nine, s); got != want {
			t.Errorf("cluster in %s: health %q", s, c.HealthStatus)
		}
	}
}

// TestSyncFinishesNodeGroupDeletion: after nodegroup_delete, the driver
// reports the nodegroup DELETE_COMPLETE; sync removes its row and completes
// the cluster's update, as Magnum's Heat poller did.
func TestSyncFinishesNodeGroupDeletion(t *testing.T) {
	e := newEnv(t)
	uuid := "00000000-0000-4000-8000-000000000001"
	c := &objects.Cluster{ID: 1, UUID: objects.Str(uuid), Name: objects.Str("c1"), ClusterTemplateID: objects.Str("ct"),
		Status: objects.UpdateInProgress, FloatingIPEnabled: true}
	extra := &objects.NodeGroup{UUID: uuid + "-x", Name: "extra", Role: "worker", NodeCount: 3,
		Status: objects.DeleteInProgress, StackID: objects.Str(simulated.StackID(simulated.OpNGDelete, e.clock.Now()))}
	e.store.addCluster(c,
		&objects.NodeGroup{UUID: uuid + "-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, Status: objects.CreateComplete},
		&objects.NodeGroup{UUID: uuid + "-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 2, IsDefault: true, Status: objects.CreateComplete},
		extra)
	e.clock.Advance(10 * time.Second)
	e.runSync()
	if _, ok := e.store.nodeGroups(uuid)[extra.UUID]; !ok || e.store.cluster(uuid).Status != objects.UpdateInProgress {
		t.Fatalf("finished before the driver's delay: nodegroup kept %v, cluster %s", ok, e.store.cluster(uuid).Status)
	}
	e.clock.Advance(30 * time.Second)
	e.runSync()
	ngs := e.store.nodeGroups(uuid)
	if _, ok := ngs[extra.UUID]; ok || len(ngs) != 2 {
		t.Fatalf("%d nodegroups after the deletion, want the 2 default ones", len(ngs))
	}
	if got := e.store.cluster(uuid).Status; got != objects.UpdateComplete {
		t.Fatalf("cluster %s, want UPDATE_COMPLETE", got)
	}
	if got := e.notifier.all(); !slices.Equal(got, []event{{uuid, "update", "success"}}) {
		t.Fatalf("events %v", got)
	}
}
