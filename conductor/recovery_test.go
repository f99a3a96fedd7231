package conductor

// Operations interrupted between their claim and their driver call (#28):
// the handler is stopped right after the claim's transaction commits, as a
// conductor killed there would be, and two conductors' status syncs race to
// resume it, on MariaDB.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/periodic"
)

// backend is a driver with a back end of its own, in memory: every
// operation writes the cluster's desired state from its request, which
// converges at once; Observe reports it, Request included.
type backend struct {
	drivers.Unimplemented
	mu       sync.Mutex
	clusters map[string]*held
	calls    map[string]int
	// notReady, when set, is every operation's answer.
	notReady error
}

type held struct {
	template string
	deleting bool
	ngs      map[string]heldNG
	ca       string // the CA reference of the last rotation it rolled out
}

type heldNG struct {
	count   int
	version string
	max     int64 // max_node_count, 0 when unset
}

func newBackend() *backend {
	return &backend{clusters: map[string]*held{}, calls: map[string]int{}}
}

func (b *backend) Name() string { return "backend" }
func (b *backend) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: "backend-os", COE: "kubernetes"}}
}

func (b *backend) count(op string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[op]
}

// write records op and the request's desired state.
func (b *backend) write(op string, req drivers.ClusterRequest, change func(h *held)) (drivers.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[op]++
	if b.notReady != nil {
		return drivers.Result{}, b.notReady
	}
	uuid := objects.Deref(req.Cluster.UUID)
	h := b.clusters[uuid]
	if h == nil {
		if op != "create_cluster" {
			return drivers.Result{}, fmt.Errorf("%s: no cluster %s", op, uuid)
		}
		// Created once: a repeated create finds it.
		h = &held{}
		b.clusters[uuid] = h
	}
	h.template = objects.Deref(req.Cluster.ClusterTemplateID)
	h.ngs = map[string]heldNG{}
	for _, ng := range req.NodeGroups {
		if ng.Status != objects.DeleteInProgress {
			h.ngs[ng.UUID] = heldNG{count: int(ng.NodeCount), version: objects.Deref(ng.Version),
				max: maxNodes(ng)}
		}
	}
	if change != nil {
		change(h)
	}
	return drivers.Result{StackID: "b-" + uuid}, nil
}

// seed makes the back end hold c as its rows say.
func (b *backend) seed(c *objects.Cluster, ngs []*objects.NodeGroup) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &held{template: objects.Deref(c.ClusterTemplateID), ngs: map[string]heldNG{}}
	for _, ng := range ngs {
		h.ngs[ng.UUID] = heldNG{count: int(ng.NodeCount), version: objects.Deref(ng.Version),
			max: maxNodes(ng)}
	}
	b.clusters[objects.Deref(c.UUID)] = h
}

func (b *backend) CreateCluster(_ context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	return b.write("create_cluster", req.ClusterRequest, nil)
}
func (b *backend) UpdateCluster(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return b.write("update_cluster", req, nil)
}
func (b *backend) ResizeCluster(_ context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return b.write("resize_cluster", req.ClusterRequest, nil)
}
func (b *backend) UpgradeCluster(_ context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	tag := req.NewTemplate.Labels["kube_tag"]
	return b.write("upgrade_cluster", req.ClusterRequest, func(h *held) {
		if req.NodeGroup.IsDefault {
			h.template = objects.Deref(req.NewTemplate.UUID)
			for u, ng := range h.ngs {
				ng.version = tag
				h.ngs[u] = ng
			}
			return
		}
		ng := h.ngs[req.NodeGroup.UUID]
		ng.version = tag
		h.ngs[req.NodeGroup.UUID] = ng
	})
}
func (b *backend) DeleteCluster(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return b.write("delete_cluster", req, func(h *held) { h.deleting = true })
}
func (b *backend) CreateNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return b.write("create_nodegroup", req.ClusterRequest, nil)
}
func (b *backend) UpdateNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return b.write("update_nodegroup", req.ClusterRequest, nil)
}
func (b *backend) RotateCACertificate(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return b.write("rotate_ca_certificate", req, func(h *held) { h.ca = objects.Deref(req.Cluster.CACertRef) })
}
func (b *backend) DeleteNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return b.write("delete_nodegroup", req.ClusterRequest, nil)
}

// Observe reports the desired state, converged: a deleted cluster is gone.
func (b *backend) Observe(_ context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.clusters[objects.Deref(req.Cluster.UUID)]
	if h == nil || h.deleting {
		return drivers.Observation{Phase: drivers.PhaseGone, Request: &drivers.BackendRequest{}}, nil
	}
	o := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: map[string]drivers.NodeGroupObservation{},
		Request: &drivers.BackendRequest{Exists: true, TemplateID: h.template, NodeGroups: map[string]drivers.NodeGroupRequestState{}}}
	for u, ng := range h.ngs {
		n := ng.count
		o.Request.NodeGroups[u] = drivers.NodeGroupRequestState{NodeCount: &n, Version: ng.version, MaxNodeCount: &ng.max}
		o.NodeGroups[u] = drivers.NodeGroupObservation{Phase: drivers.PhaseReady, Version: ng.version}
	}
	for _, ng := range req.NodeGroups {
		if _, ok := h.ngs[ng.UUID]; !ok {
			o.NodeGroups[ng.UUID] = drivers.NodeGroupObservation{Phase: drivers.PhaseGone}
		}
	}
	return o, nil
}

// killStore stops the goroutine that commits its next transaction (the
// armed one), right after the commit: a conductor killed at that point.
type killStore struct {
	*db.Store
	mu    sync.Mutex
	after int // transactions to let through before the kill; <0: disarmed
}

func (s *killStore) arm(after int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = after
}

func (s *killStore) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	err := s.Store.InTx(ctx, fn)
	if err != nil {
		return err
	}
	s.mu.Lock()
	kill := s.after == 0
	if s.after >= 0 {
		s.after--
	}
	s.mu.Unlock()
	if kill {
		runtime.Goexit()
	}
	return nil
}

// clock is the time of the database's timestamps and the syncs' deadlines.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recoveryEnv is two conductors sharing one database and one back end: the
// first's handlers can be killed; each runs a status sync that resumes with
// its own handlers.
type recoveryEnv struct {
	*env
	clock    *clock
	back     *backend
	kill     *killStore
	h1       *Handlers
	syncs    [2]*periodic.SyncClusterStatus
	ct2      *objects.ClusterTemplate
	timeouts sm.Timeouts
}

func newRecoveryEnv(t *testing.T) *recoveryEnv {
	t.Helper()
	t.Parallel()
	clk := &clock{now: time.Now().UTC().Truncate(time.Second)}
	store := dbtest.MySQLStore(t, db.Options{MaxRetries: 1, RetryInterval: time.Second, Now: clk.Now}, discardLog())
	e := &env{t: t, store: store, notes: &recorder{}, certs: &fakeCerts{}, drv: newTestDriver()}
	e.ctx = request.With(context.Background(), &request.Context{UserID: testUser, ProjectID: testProject,
		RequestID: request.NewRequestID(), Roles: []string{"member"}})
	r := &recoveryEnv{env: e, clock: clk, back: newBackend(), kill: &killStore{Store: store, after: -1},
		timeouts: sm.Timeouts{Create: time.Hour, Resume: 10 * time.Minute, ResumeAttempts: 2}}
	reg, err := drivers.NewRegistry(nil, r.back)
	if err != nil {
		t.Fatal(err)
	}
	newHandlers := func(s Store) *Handlers {
		h, err := New(Deps{Store: s, Certs: e.certs, Drivers: reg, Log: discardLog(), RetryBackoff: time.Millisecond,
			Notifications: NewNotifications(e.notes, store, "openstack", discardLog()), Timeouts: r.timeouts})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	r.h1 = newHandlers(r.kill)
	e.h = r.h1
	for i, h := range []*Handlers{r.h1, newHandlers(store)} {
		shard, err := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, periodic.RealClock{}, discardLog(), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.syncs[i], err = periodic.NewSyncClusterStatus(periodic.SyncOptions{Timeouts: r.timeouts, Now: clk.Now},
			periodic.Deps{Store: store, Drivers: reg, Notifier: e.h.notify, Certs: e.certs, Sharder: shard, Log: discardLog(),
				Resumer: h})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.ct = e.template("backend-os")
	return r
}

// killed runs op as a handler of the first conductor that dies after
// transactions more commits (0: right after its first, the claim).
func (r *recoveryEnv) killed(after int, op func() error) {
	r.t.Helper()
	r.kill.arm(after)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		if err := op(); err != nil {
			done <- err
		}
	}()
	if err, ok := <-done; ok {
		r.t.Fatalf("the handler returned before it was killed: %v", err)
	}
	r.kill.arm(-1)
}

// race runs both conductors' status syncs at once.
func (r *recoveryEnv) race() {
	var wg sync.WaitGroup
	for _, s := range r.syncs {
		wg.Go(func() {
			if err := s.RunOnce(context.Background()); err != nil {
				r.t.Error(err)
			}
		})
	}
	wg.Wait()
}

// seeded is a cluster created and complete, held by the back end.
func (r *recoveryEnv) seeded() *objects.Cluster {
	c := r.seed(r.ct, objects.CreateComplete, 2)
	ngs, err := r.store.ListNodeGroups(r.ctx, *c.UUID, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.back.seed(c, ngs)
	return c
}

// TestInterruptedOperationsAreResumed: for every kind of operation, a
// conductor killed between the claim and the driver call leaves the
// cluster in progress and the driver without the call; once the bound has
// passed, one of two conductors racing resumes it with exactly one driver
// call, and the next sync completes it as the back end shows it.
func TestInterruptedOperationsAreResumed(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   string // the driver call the operation makes
		// start seeds what the operation needs and returns the handler
		// call, and how many commits it makes before the one it dies
		// after.
		start func(r *recoveryEnv) (c *objects.Cluster, after int, call func() error)
		want  func(r *recoveryEnv, c *objects.Cluster)
	}{
		{"create killed after its insert", "create_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.newCluster(r.ct)
			return c, 0, func() error { _, err := r.h1.ClusterCreate(r.ctx, c, 1, 2, intp(60)); return err }
		}, wantCreated},
		{"create killed after recording its certificates", "create_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.newCluster(r.ct)
			return c, 1, func() error { _, err := r.h1.ClusterCreate(r.ctx, c, 1, 2, intp(60)); return err }
		}, wantCreated},
		{"delete", "delete_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			return c, 0, func() error { return r.h1.ClusterDelete(r.ctx, *c.UUID) }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			if _, err := r.store.GetClusterByUUID(r.ctx, *c.UUID); err == nil {
				r.t.Error("the deleted cluster's row is still there")
			}
		}},
		{"resize", "resize_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			w := r.nodegroup(c, "default-worker")
			return c, 0, func() error { _, err := r.h1.ClusterResize(r.ctx, c, 5, nil, w); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			r.wantStatus(*c.UUID, objects.UpdateComplete, "")
			r.wantNGStatus(c, "default-worker", objects.UpdateComplete, "", 5)
		}},
		{"update", "update_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			return c, 0, func() error { _, err := r.h1.ClusterUpdate(r.ctx, c, 4, "", nil, false); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			r.wantStatus(*c.UUID, objects.UpdateComplete, "")
			r.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 4)
		}},
		{"upgrade", "upgrade_cluster", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			to := objects.Clone(r.ct)
			to.ID, to.UUID, to.Name = 0, nil, objects.Str("ct-upgrade")
			to.Labels = map[string]string{"kube_tag": "v1.35.0"}
			if err := r.store.CreateClusterTemplate(r.ctx, to); err != nil {
				r.t.Fatal(err)
			}
			r.ct2 = to
			m := r.nodegroup(c, "default-master")
			return c, 0, func() error { _, err := r.h1.ClusterUpgrade(r.ctx, c, to, 1, m, false); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			row := r.cluster(*c.UUID)
			if row.Status != objects.UpdateComplete || objects.Deref(row.ClusterTemplateID) != objects.Deref(r.ct2.UUID) ||
				row.Labels["kube_tag"] != "v1.35.0" {
				r.t.Errorf("%s template %s labels %v", row.Status, objects.Deref(row.ClusterTemplateID), row.Labels)
			}
			r.back.mu.Lock()
			defer r.back.mu.Unlock()
			if h := r.back.clusters[*c.UUID]; h.template != objects.Deref(r.ct2.UUID) {
				r.t.Errorf("the back end runs template %s", h.template)
			}
		}},
		{"nodegroup create", "create_nodegroup", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			ng := &objects.NodeGroup{Name: "extra", Role: objects.RoleWorker, NodeCount: 3, FlavorID: objects.Str("m1.small")}
			return c, 0, func() error { _, err := r.h1.NodeGroupCreate(r.ctx, c, ng); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			r.wantStatus(*c.UUID, objects.UpdateComplete, "")
			r.wantNGStatus(c, "extra", objects.CreateComplete, "", 3)
		}},
		{"nodegroup update", "update_nodegroup", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			ng := r.nodegroup(c, "default-worker")
			ng.MaxNodeCount = int64p(7)
			return c, 0, func() error { _, err := r.h1.NodeGroupUpdate(r.ctx, c, ng); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			r.wantStatus(*c.UUID, objects.UpdateComplete, "")
			r.wantNGStatus(c, "default-worker", objects.UpdateComplete, "", 2)
			if ng := r.nodegroup(c, "default-worker"); maxNodes(ng) != 7 {
				r.t.Errorf("max_node_count %v", ng.MaxNodeCount)
			}
			r.back.mu.Lock()
			defer r.back.mu.Unlock()
			if got := r.back.clusters[*c.UUID].ngs[r.nodegroup(c, "default-worker").UUID].max; got != 7 {
				r.t.Errorf("the back end's max_node_count is %d", got)
			}
		}},
		{"CA rotation", "rotate_ca_certificate", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			return c, 0, func() error { _, err := r.h1.RotateCACertificate(r.ctx, c); return err }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			row := r.cluster(*c.UUID)
			// The handler died before it generated any: the resumption's
			// are the first.
			if row.Status != objects.UpdateComplete || objects.Deref(row.CACertRef) != "ca-1" ||
				objects.Deref(row.MagnumCertRef) != "client-1" || row.StatusReason != nil {
				r.t.Errorf("%s ca_cert_ref %v magnum_cert_ref %v reason %q", row.Status, objects.Deref(row.CACertRef),
					objects.Deref(row.MagnumCertRef), objects.Deref(row.StatusReason))
			}
			r.back.mu.Lock()
			if got := r.back.clusters[*c.UUID].ca; got != "ca-1" {
				r.t.Errorf("the back end rolled out %q, not the recorded CA", got)
			}
			r.back.mu.Unlock()
			r.certs.mu.Lock()
			defer r.certs.mu.Unlock()
			if d := strings.Join(r.certs.deleted, " "); d != "ca-old client-old etcd-old fp-old" {
				r.t.Errorf("deleted certificates %q: want the old set only", d)
			}
		}},
		{"nodegroup delete", "delete_nodegroup", func(r *recoveryEnv) (*objects.Cluster, int, func() error) {
			c := r.seeded()
			extra := &objects.NodeGroup{Name: "extra", Role: objects.RoleWorker, NodeCount: 1, ClusterID: *c.UUID,
				ProjectID: testProject, Status: objects.CreateComplete}
			if err := r.store.CreateNodeGroup(r.ctx, extra); err != nil {
				r.t.Fatal(err)
			}
			ngs, _ := r.store.ListNodeGroups(r.ctx, *c.UUID, db.ListOpts{}, db.NodeGroupFilters{})
			r.back.seed(c, ngs)
			ng := r.nodegroup(c, "extra")
			return c, 0, func() error { return r.h1.NodeGroupDelete(r.ctx, c, ng) }
		}, func(r *recoveryEnv, c *objects.Cluster) {
			r.wantStatus(*c.UUID, objects.UpdateComplete, "")
			if _, err := r.store.GetNodeGroupByName(r.ctx, *c.UUID, "extra"); err == nil {
				r.t.Error("the deleted nodegroup's row is still there")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecoveryEnv(t)
			c, after, call := tc.start(r)
			r.killed(after, call)
			row := r.cluster(*c.UUID)
			if !sm.InProgress(row.Status) || r.back.count(tc.op) != 0 {
				t.Fatalf("after the kill: %s, %d %s calls", row.Status, r.back.count(tc.op), tc.op)
			}
			// Within the bound nothing is resumed and nothing completes.
			r.clock.advance(9 * time.Minute)
			r.race()
			if got := r.cluster(*c.UUID); got.Status != row.Status || r.back.count(tc.op) != 0 {
				t.Fatalf("within the bound: %s, %d calls", got.Status, r.back.count(tc.op))
			}
			r.clock.advance(2 * time.Minute)
			r.race()
			if n := r.back.count(tc.op); n != 1 {
				t.Fatalf("%d %s calls after two conductors raced to resume, want 1", n, tc.op)
			}
			// (A resumed CA rotation clears its note when it records the new
			// CAs: that, not the note, says the driver has them.)
			if row, err := r.store.GetClusterByUUID(r.ctx, *c.UUID); err == nil && sm.Attempts(row.StatusReason) != 1 &&
				sm.InProgress(row.Status) && tc.op != "rotate_ca_certificate" {
				t.Errorf("the resumption is not recorded: %q", objects.Deref(row.StatusReason))
			}
			r.race()
			tc.want(r, c)
			if n := r.back.count(tc.op); n != 1 {
				t.Errorf("%d %s calls in the end, want 1", n, tc.op)
			}
		})
	}
}

func int64p(i int64) *int64 { return &i }

// maxNodes is ng's max_node_count, 0 when unset.
func maxNodes(ng *objects.NodeGroup) int64 {
	if ng.MaxNodeCount == nil {
		return 0
	}
	return *ng.MaxNodeCount
}

// wantCreated: the resumed create is complete, with its stack_id and one
// set of certificates, none leaked.
func wantCreated(r *recoveryEnv, c *objects.Cluster) {
	r.t.Helper()
	row := r.cluster(*c.UUID)
	if row.Status != objects.CreateComplete || objects.Deref(row.StackID) != "b-"+*c.UUID || objects.Deref(row.CACertRef) == "" {
		r.t.Fatalf("%s stack_id %v ca_cert_ref %v", row.Status, row.StackID, row.CACertRef)
	}
	r.certs.mu.Lock()
	defer r.certs.mu.Unlock()
	if r.certs.n != 1 || len(r.certs.deleted) != 0 {
		r.t.Errorf("%d certificate sets generated, %v deleted: want exactly one, kept", r.certs.n, r.certs.deleted)
	}
	for _, name := range []string{"default-master", "default-worker"} {
		if ng := r.nodegroup(c, name); objects.Deref(ng.StackID) != "b-"+*c.UUID || ng.Status != objects.CreateComplete {
			r.t.Errorf("%s: %s stack_id %v", name, ng.Status, ng.StackID)
		}
	}
}

// TestInterruptedOperationFailsOnceItsResumptionsAreSpent: a driver that
// never takes the resumed call: after the attempts, the operation fails with
// a reason saying what happened, its nodegroup's size put back.
func TestInterruptedOperationFailsOnceItsResumptionsAreSpent(t *testing.T) {
	r := newRecoveryEnv(t)
	c := r.seeded()
	w := r.nodegroup(c, "default-worker")
	r.killed(0, func() error { _, err := r.h1.ClusterResize(r.ctx, c, 5, nil, w); return err })
	r.back.mu.Lock()
	r.back.notReady = fmt.Errorf("management cluster away: %w", drivers.ErrNotReady)
	r.back.mu.Unlock()
	for attempt := 1; attempt <= r.timeouts.ResumeAttempts; attempt++ {
		r.clock.advance(11 * time.Minute)
		r.race()
		row := r.cluster(*c.UUID)
		if row.Status != objects.UpdateInProgress || sm.Attempts(row.StatusReason) != attempt ||
			!strings.Contains(objects.Deref(row.StatusReason), "driver not ready") {
			t.Fatalf("attempt %d: %s %q", attempt, row.Status, objects.Deref(row.StatusReason))
		}
	}
	r.notes.take()
	r.clock.advance(11 * time.Minute)
	r.race()
	row := r.cluster(*c.UUID)
	reason := objects.Deref(row.StatusReason)
	if row.Status != objects.UpdateFailed || !strings.Contains(reason, "did not reach the driver's back end") ||
		!strings.Contains(reason, "2 resumptions") {
		t.Fatalf("%s %q", row.Status, reason)
	}
	r.wantNGStatus(c, "default-worker", objects.UpdateFailed, "*", 2)
	r.wantNotes("ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
	if n := r.back.count("resize_cluster"); n != 2 {
		t.Errorf("%d resize calls, want one per attempt", n)
	}
}

// TestResumedCreateFailureIsTheDriversAnswer: a resumed create the driver
// refuses ends CREATE_FAILED with the driver's reason and a notification.
func TestResumedCreateFailureIsTheDriversAnswer(t *testing.T) {
	r := newRecoveryEnv(t)
	c := r.newCluster(r.ct)
	r.killed(1, func() error { _, err := r.h1.ClusterCreate(r.ctx, c, 1, 2, intp(60)); return err })
	r.back.mu.Lock()
	r.back.notReady = errors.New("quota exceeded")
	r.back.mu.Unlock()
	r.notes.take()
	r.clock.advance(11 * time.Minute)
	r.race()
	r.wantStatus(*c.UUID, objects.CreateFailed, "quota exceeded")
	r.wantNotes("ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}
