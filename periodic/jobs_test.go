package periodic_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/periodic"
)

type event struct{ uuid, action, outcome string }

type recNotifier struct {
	mu     sync.Mutex
	events []event
}

func (n *recNotifier) ClusterEvent(_ context.Context, action, outcome string, c *objects.Cluster) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, event{objects.Deref(c.UUID), action, outcome})
}

func (n *recNotifier) all() []event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

type recCerts struct {
	mu      sync.Mutex
	deleted map[string]int
}

func (r *recCerts) DeleteForCluster(_ context.Context, c *objects.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deleted == nil {
		r.deleted = map[string]int{}
	}
	r.deleted[objects.Deref(c.UUID)]++
	return nil
}

func (r *recCerts) count(uuid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted[uuid]
}

// env is one conductor's jobs over a store, with the simulated driver.
type env struct {
	t        *testing.T
	clock    *periodic.ManualClock
	store    *memStore
	sim      *simulated.Driver
	notifier *recNotifier
	certs    *recCerts
	sync     *periodic.SyncClusterStatus
	health   *periodic.SyncClusterHealth
	deps     periodic.Deps
}

var t0 = time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, extra ...drivers.Driver) *env {
	e := &env{t: t, clock: periodic.NewManualClock(t0), store: newMemStore(), notifier: &recNotifier{}, certs: &recCerts{}}
	e.sim = simulated.New(simulated.Options{Delay: 30 * time.Second, Now: e.clock.Now})
	reg, err := drivers.NewRegistry(nil, append([]drivers.Driver{e.sim}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.store.templates["ct"] = &objects.ClusterTemplate{UUID: objects.Str("ct"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"}
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, e.clock, testLog(t), nil)
	deps := periodic.Deps{Store: e.store, Drivers: reg, Notifier: e.notifier, Certs: e.certs, Sharder: shard, Log: testLog(t)}
	e.deps = deps
	if e.sync, err = periodic.NewSyncClusterStatus(periodic.SyncOptions{}, deps); err != nil {
		t.Fatal(err)
	}
	if e.health, err = periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute, PollTimeout: time.Second},
		periodic.HealthDeps{Deps: deps}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) addCluster(i int, status, op string, labels map[string]string, template string) string {
	uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	c := &objects.Cluster{ID: int64(i), UUID: objects.Str(uuid), Name: objects.Str(fmt.Sprintf("c%d", i)),
		ClusterTemplateID: objects.Str(template), Status: status, Labels: labels, FloatingIPEnabled: true}
	if op != "" {
		c.StackID = objects.Str(simulated.StackID(op, e.clock.Now()))
	}
	ngStatus := status
	if status != objects.CreateInProgress {
		ngStatus = objects.CreateComplete
	}
	// cluster_create copies the stack_id to the default nodegroups.
	e.store.addCluster(c,
		&objects.NodeGroup{UUID: uuid + "-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, Status: ngStatus, StackID: c.StackID},
		&objects.NodeGroup{UUID: uuid + "-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 2, IsDefault: true, Status: ngStatus, StackID: c.StackID})
	return uuid
}

func (e *env) runSync() {
	e.t.Helper()
	if err := e.sync.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) runHealth() {
	e.t.Helper()
	if err := e.health.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func TestSyncCompletesCreateAfterTheDriverDelay(t *testing.T) {
	e := newEnv(t)
	ok := e.addCluster(1, objects.CreateInProgress, simulated.OpCreate, nil, "ct")
	bad := e.addCluster(2, objects.CreateInProgress, simulated.OpCreate, map[string]string{"sim_fail": "create"}, "ct")
	e.clock.Advance(10 * time.Second)
	e.runSync()
	if c := e.store.cluster(ok); c.Status != objects.CreateInProgress || len(e.store.saved[ok]) != 0 {
		t.Fatalf("cluster changed before the delay: %s, saves %v", c.Status, e.store.saved[ok])
	}
	if ev := e.notifier.all(); len(ev) != 0 {
		t.Fatalf("notified early: %v", ev)
	}
	e.clock.Advance(20 * time.Second)
	e.runSync()
	c := e.store.cluster(ok)
	if c.Status != objects.CreateComplete || objects.Deref(c.APIAddress) == "" || objects.Deref(c.CoeVersion) == "" {
		t.Fatalf("cluster = %s api %q coe %q", c.Status, objects.Deref(c.APIAddress), objects.Deref(c.CoeVersion))
	}
	for _, ng := range e.store.nodeGroups(ok) {
		if ng.Status != objects.CreateComplete || int64(len(ng.NodeAddresses)) != ng.NodeCount {
			t.Fatalf("nodegroup %s = %s %v", ng.Name, ng.Status, ng.NodeAddresses)
		}
	}
	if c := e.store.cluster(bad); c.Status != objects.CreateFailed || objects.Deref(c.StatusReason) == "" {
		t.Fatalf("failed cluster = %s %q", c.Status, objects.Deref(c.StatusReason))
	}
	want := []event{{ok, "create", "success"}, {bad, "create", "failure"}}
	got := e.notifier.all()
	slices.SortFunc(got, func(a, b event) int { return cmpStr(a.uuid, b.uuid) })
	if !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	e.runSync()
	if n := len(e.notifier.all()); n != 2 {
		t.Fatalf("%d events after a further cycle, want 2", n)
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSyncFinishesDeletionOnce(t *testing.T) {
	e := newEnv(t)
	uuid := e.addCluster(1, objects.DeleteInProgress, simulated.OpDelete, nil, "ct")
	leftover := e.addCluster(2, objects.DeleteComplete, "", nil, "ct")
	e.clock.Advance(30 * time.Second)
	e.runSync()
	e.runSync()
	for _, u := range []string{uuid, leftover} {
		if e.store.cluster(u) != nil || len(e.store.nodeGroups(u)) != 0 {
			t.Fatalf("cluster %s or its nodegroups still exist", u)
		}
		if e.store.destroyed[u] != 1 || e.certs.count(u) != 1 {
			t.Fatalf("cluster %s destroyed %d times, certificates deleted %d times", u, e.store.destroyed[u], e.certs.count(u))
		}
	}
	if got := e.notifier.all(); !slices.Equal(got, []event{{uuid, "delete", "success"}}) {
		t.Fatalf("events = %v (the leftover row must not notify again)", got)
	}
}

// oddDriver reports odd observations, panics, or lets another actor change
// the cluster while it is observed.
type oddDriver struct {
	drivers.Unimplemented
	store *memStore
}

func (d *oddDriver) Name() string { return "odd" }
func (d *oddDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "odd", COE: "kubernetes"}}
}

// ready reports the cluster and every nodegroup of req ready.
func ready(req drivers.ObserveRequest) drivers.Observation {
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: map[string]drivers.NodeGroupObservation{}}
	for _, ng := range req.NodeGroups {
		obs.NodeGroups[ng.UUID] = drivers.NodeGroupObservation{Phase: drivers.PhaseReady}
	}
	return obs
}

func (d *oddDriver) Observe(_ context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	c := req.Cluster
	switch c.Labels["odd"] {
	case "resized", "new nodegroup":
		// An operation allowed in UPDATE_IN_PROGRESS lands after the
		// cycle read the nodegroups: a resize of the worker, or a new
		// nodegroup. The driver, which saw neither, reports everything
		// ready.
		d.store.mu.Lock()
		if c.Labels["odd"] == "resized" {
			w := d.store.ngs[*c.UUID][*c.UUID+"-w"]
			w.NodeCount, w.Status = 5, objects.UpdateInProgress
		} else {
			d.store.ngs[*c.UUID][*c.UUID+"-new"] = &objects.NodeGroup{UUID: *c.UUID + "-new", ClusterID: *c.UUID,
				Name: "extra", Role: objects.RoleWorker, NodeCount: 1, Status: objects.CreateInProgress}
		}
		d.store.mu.Unlock()
		return ready(req), nil
	case "pending":
		return drivers.Observation{Phase: drivers.PhasePending, Reason: "cache behind"}, nil
	case "panic":
		panic("driver bug")
	case "race":
		// An RPC handler moves the cluster to DELETE_IN_PROGRESS meanwhile.
		other := d.store.cluster(*c.UUID)
		other.Status = objects.DeleteInProgress
		if err := d.store.SaveCluster(context.Background(), other); err != nil {
			return drivers.Observation{}, err
		}
		return ready(req), nil
	}
	return drivers.Observation{}, nil
}

func TestSyncSkipsBadClustersAndGoesOn(t *testing.T) {
	e := newEnv(t)
	odd := &oddDriver{store: e.store}
	e = newEnv(t, odd)
	odd.store = e.store
	e.store.templates["odd"] = &objects.ClusterTemplate{UUID: objects.Str("odd"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("odd"), Coe: "kubernetes"}
	e.store.templates["gone-driver"] = &objects.ClusterTemplate{UUID: objects.Str("gone-driver"), Driver: objects.Str("removed")}
	noTemplate := e.addCluster(1, objects.UpdateInProgress, simulated.OpUpdate, nil, "missing")
	noDriver := e.addCluster(2, objects.UpdateInProgress, simulated.OpUpdate, nil, "gone-driver")
	panics := e.addCluster(3, objects.UpdateInProgress, "", map[string]string{"odd": "panic"}, "odd")
	pending := e.addCluster(4, objects.UpdateInProgress, "", map[string]string{"odd": "pending"}, "odd")
	race := e.addCluster(5, objects.UpdateInProgress, "", map[string]string{"odd": "race"}, "odd")
	good := e.addCluster(6, objects.UpdateInProgress, simulated.OpUpdate, nil, "ct")
	resized := e.addCluster(7, objects.UpdateInProgress, "", map[string]string{"odd": "resized"}, "odd")
	grown := e.addCluster(8, objects.UpdateInProgress, "", map[string]string{"odd": "new nodegroup"}, "odd")
	e.clock.Advance(time.Minute)
	e.runSync()
	for _, u := range []string{resized, grown} {
		if c := e.store.cluster(u); c.Status != objects.UpdateInProgress {
			t.Fatalf("cluster %s completed from stale nodegroups: %s", u, c.Status)
		}
		for _, ng := range e.store.nodeGroups(u) {
			if ng.Status == objects.UpdateComplete {
				t.Fatalf("cluster %s: stale result saved on nodegroup %s", u, ng.Name)
			}
		}
	}
	for _, ng := range e.store.nodeGroups(resized) {
		if ng.Name == "default-worker" && (ng.NodeCount != 5 || ng.Status != objects.UpdateInProgress) {
			t.Fatalf("the resize was overwritten: %d nodes, %s", ng.NodeCount, ng.Status)
		}
	}
	for _, u := range []string{noTemplate, noDriver, panics} {
		if c := e.store.cluster(u); c.Status != objects.UpdateInProgress {
			t.Fatalf("bad cluster %s changed to %s", u, c.Status)
		}
	}
	if c := e.store.cluster(pending); c.Status != objects.UpdateInProgress || objects.Deref(c.StatusReason) != "cache behind" {
		t.Fatalf("pending cluster: %s %q", c.Status, objects.Deref(c.StatusReason))
	}
	if c := e.store.cluster(race); c.Status != objects.DeleteInProgress {
		t.Fatalf("stale poll overwrote a concurrent change: %s", c.Status)
	}
	if c := e.store.cluster(good); c.Status != objects.UpdateComplete {
		t.Fatalf("good cluster = %s", c.Status)
	}
	if got := e.notifier.all(); !slices.Equal(got, []event{{good, "update", "success"}}) {
		t.Fatalf("events = %v", got)
	}
}

// panicMonitorDriver is the simulated driver with a monitor that panics for
// label boom=true.
type panicMonitorDriver struct{ *simulated.Driver }

func (d panicMonitorDriver) Name() string { return "boom" }
func (d panicMonitorDriver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "boom", COE: "kubernetes"}}
}
func (d panicMonitorDriver) Monitor(context.Context, drivers.ClusterRequest) (drivers.Monitor, error) {
	panic("monitor bug")
}

func TestHealthSavesOnlyHealthFields(t *testing.T) {
	e := newEnv(t, panicMonitorDriver{simulated.New(simulated.Options{})})
	e.store.templates["boom"] = &objects.ClusterTemplate{UUID: objects.Str("boom"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("boom"), Coe: "kubernetes"}
	healthy := e.addCluster(1, objects.CreateComplete, "", nil, "ct")
	sick := e.addCluster(2, objects.UpdateFailed, "", map[string]string{"sim_health": "unhealthy"}, "ct")
	failing := e.addCluster(3, objects.CreateComplete, "", map[string]string{"sim_health": "error"}, "ct")
	healer := e.addCluster(4, objects.CreateComplete, "", map[string]string{"sim_health": "unhealthy",
		"auto_healing_enabled": "true", "auto_healing_controller": "magnum-auto-healer"}, "ct")
	notPolled := e.addCluster(5, objects.RollbackComplete, "", nil, "ct")
	boom := e.addCluster(6, objects.CreateComplete, "", nil, "boom")
	e.runHealth()
	check := func(uuid, status string, reason map[string]string) {
		t.Helper()
		c := e.store.cluster(uuid)
		if c.HealthStatus != status || (reason != nil && !maps.Equal(c.HealthStatusReason, reason)) {
			t.Fatalf("%s: health %q %v, want %q %v", uuid, c.HealthStatus, c.HealthStatusReason, status, reason)
		}
	}
	check(healthy, objects.Healthy, map[string]string{"api": "ok", "c1-node-0.Ready": "True"})
	check(sick, objects.Unhealthy, map[string]string{"api": "ok", "c2-node-0.Ready": "False"})
	check(failing, objects.Unknown, map[string]string{"api": "simulated health poll failure"})
	check(healer, "", nil)
	check(notPolled, "", nil)
	check(boom, objects.Unknown, map[string]string{"api": "monitor panic: monitor bug"})
	for uuid, saves := range e.store.saved {
		for _, fields := range saves {
			if !slices.Equal(fields, []string{"health_status", "health_status_reason"}) {
				t.Fatalf("cluster %s: save wrote %v", uuid, fields)
			}
		}
	}
	before := len(e.store.saved[healthy])
	e.runHealth()
	if after := len(e.store.saved[healthy]); after != before {
		t.Fatalf("unchanged health saved again (%d → %d saves)", before, after)
	}
}

func TestHealthKeepOnErrorKeepsThePreviousValue(t *testing.T) {
	e := newEnv(t)
	reg, _ := drivers.NewRegistry(nil, e.sim)
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, e.clock, testLog(t), nil)
	job, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute, KeepOnError: true},
		periodic.HealthDeps{Deps: periodic.Deps{Store: e.store, Drivers: reg, Sharder: shard, Log: testLog(t)}})
	if err != nil {
		t.Fatal(err)
	}
	uuid := e.addCluster(1, objects.CreateComplete, "", map[string]string{"sim_health": "error"}, "ct")
	if err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := e.store.cluster(uuid); c.HealthStatus != "" || len(e.store.saved[uuid]) != 0 {
		t.Fatalf("health changed to %q", c.HealthStatus)
	}
	if job.Spacing() != time.Minute {
		t.Fatalf("spacing %v, want the configured interval", job.Spacing())
	}
}

// k8sOnly hides the simulated driver's monitor so the Kubernetes monitor
// of the periodic package is used.
type k8sOnly struct{ drivers.Driver }

func TestHealthUsesTheKubernetesMonitorForDriversWithoutOne(t *testing.T) {
	pki := newTestPKI(t)
	clock := periodic.NewManualClock(t0)
	store := newMemStore()
	sim := simulated.New(simulated.Options{Now: clock.Now})
	reg, _ := drivers.NewRegistry(nil, k8sOnly{sim})
	store.templates["ct"] = &objects.ClusterTemplate{UUID: objects.Str("ct"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"}
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(t), nil)
	mons := periodic.NewKubernetesMonitors(&credentials{pki: pki},
		// The black hole costs one ConnectTimeout (the TLS handshake never
		// ends); the live server gets a margin for a loaded machine.
		periodic.KubernetesMonitorOptions{ConnectTimeout: 2 * time.Second, RequestTimeout: 2 * time.Second})
	job, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute},
		periodic.HealthDeps{Deps: periodic.Deps{Store: store, Drivers: reg, Sharder: shard, Log: testLog(t)}, Monitors: mons})
	if err != nil {
		t.Fatal(err)
	}
	up := fakeAPIServer(t, pki, k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": "True"})))
	hole := newBlackHole(t)
	add := func(i int, api string) string {
		c := k8sCluster(api, nil)
		c.UUID = objects.Str(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		c.ID = int64(i)
		c.ClusterTemplateID = objects.Str("ct")
		c.Status = objects.CreateComplete
		c.HealthStatus = objects.Healthy
		store.addCluster(c)
		return *c.UUID
	}
	a, b := add(1, up.URL), add(2, hole.URL())
	if err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := store.cluster(a); c.HealthStatus != objects.Healthy || c.HealthStatusReason["n0.Ready"] != "True" {
		t.Fatalf("healthy cluster: %s %v", c.HealthStatus, c.HealthStatusReason)
	}
	if c := store.cluster(b); c.HealthStatus != objects.Unknown || c.HealthStatusReason["api"] == "" {
		t.Fatalf("black-holed cluster: %s %v", c.HealthStatus, c.HealthStatusReason)
	}
}

// blockingDriver signals entered and waits for release in each Observe.
type blockingDriver struct {
	*simulated.Driver
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (d *blockingDriver) Observe(ctx context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	d.entered <- *req.Cluster.UUID
	<-d.release
	return d.Driver.Observe(ctx, req)
}

func TestSyncIsSingleFlightPerCluster(t *testing.T) {
	clock := periodic.NewManualClock(t0)
	store := newMemStore()
	store.templates["ct"] = &objects.ClusterTemplate{UUID: objects.Str("ct"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"}
	d := &blockingDriver{Driver: simulated.New(simulated.Options{Now: clock.Now}), entered: make(chan string, 1),
		release: make(chan struct{})}
	reg, _ := drivers.NewRegistry(nil, d)
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(t), nil)
	notifier := &recNotifier{}
	job, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, periodic.Deps{Store: store, Drivers: reg,
		Notifier: notifier, Sharder: shard, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	uuid := "00000000-0000-4000-8000-000000000001"
	store.addCluster(&objects.Cluster{ID: 1, UUID: objects.Str(uuid), ClusterTemplateID: objects.Str("ct"),
		Status: objects.CreateInProgress, StackID: objects.Str(simulated.StackID("create", t0))})
	first := make(chan error)
	go func() { first <- job.RunOnce(context.Background()) }()
	<-d.entered
	// A second run while the first still polls the cluster skips it.
	if err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(d.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if d.calls != 1 {
		t.Fatalf("driver polled %d times, want 1", d.calls)
	}
	if got := notifier.all(); len(got) != 1 || store.cluster(uuid).Status != objects.CreateComplete {
		t.Fatalf("events %v status %s", got, store.cluster(uuid).Status)
	}
}

// TestSyncGivesDefaultNodeGroupsTheClusterStackID: default nodegroups
// without the cluster's stack_id (rows of an older conductor, whose
// cluster_create only logged a failed copy) get it at the next sync;
// nodegroups that are not default keep theirs.
func TestSyncGivesDefaultNodeGroupsTheClusterStackID(t *testing.T) {
	e := newEnv(t)
	uuid := "00000000-0000-4000-8000-000000000042"
	sid := simulated.StackID(simulated.OpCreate, e.clock.Now())
	c := &objects.Cluster{ID: 42, UUID: objects.Str(uuid), Name: objects.Str("c42"), ClusterTemplateID: objects.Str("ct"),
		Status: objects.CreateInProgress, StackID: objects.Str(sid)}
	e.store.addCluster(c,
		&objects.NodeGroup{UUID: uuid + "-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, Status: objects.CreateInProgress},
		&objects.NodeGroup{UUID: uuid + "-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 2, IsDefault: true, Status: objects.CreateInProgress},
		&objects.NodeGroup{UUID: uuid + "-x", Name: "extra", Role: objects.RoleWorker, NodeCount: 1, Status: objects.CreateInProgress,
			StackID: objects.Str("own-stack")})
	e.runSync()
	for suffix, want := range map[string]string{"-m": sid, "-w": sid, "-x": "own-stack"} {
		ng := e.store.nodeGroups(uuid)[uuid+suffix]
		if got := objects.Deref(ng.StackID); got != want {
			t.Errorf("nodegroup %s: stack_id %q, want %q", ng.Name, got, want)
		}
	}
	if c := e.store.cluster(uuid); c.Status != objects.CreateInProgress {
		t.Errorf("the cluster moved to %s before the driver's delay", c.Status)
	}
}
