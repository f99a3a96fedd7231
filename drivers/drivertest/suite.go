package drivertest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// suite is one run of the conformance suite.
type suite struct {
	h        Harness
	d        drivers.Driver
	f        Fixture
	caps     Capabilities
	timeouts sm.Timeouts
}

func (s *suite) now() time.Time { return s.f.Now() }

// Run runs the conformance suite against the harness's driver, each part as
// a subtest.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h, d: h.Driver(), f: h.Fixture(), caps: h.Capabilities()}
	s.defaults(t)
	if r, ok := s.d.(drivers.Runner); ok {
		if err := r.Ready(); err != nil {
			t.Fatalf("the harness's driver is not ready: %v", err)
		}
	}
	if s.d.Name() == "" || len(s.d.Provides()) == 0 {
		t.Fatalf("the driver has no name (%q) or provides nothing (%v)", s.d.Name(), s.d.Provides())
	}
	t.Run("Lifecycle", s.lifecycle)
	t.Run("CreateFailure", s.createFailure)
	t.Run("UpgradeFailure", s.upgradeFailure)
	t.Run("CreateTimeout", s.createTimeout)
	t.Run("UpdateTimeout", s.updateTimeout)
	t.Run("NeverCreated", s.neverCreated)
}

func (s *suite) defaults(t *testing.T) {
	f := &s.f
	if f.Template == nil || objects.Deref(f.Template.UUID) == "" {
		t.Fatal("the fixture has no template (with its uuid)")
	}
	if f.ProjectID == "" {
		f.ProjectID = "5c0c1d8f0a6e4c7f9b1e2d3c4b5a6978"
	}
	if f.UserID == "" {
		f.UserID = "7e6d5c4b3a2918070f1e2d3c4b5a6978"
	}
	if f.Keypair == "" {
		f.Keypair = "drivertest"
	}
	if f.MasterCount <= 0 {
		f.MasterCount = 1
	}
	if f.NodeCount <= 0 {
		f.NodeCount = 1
	}
	if f.Patience <= 0 {
		f.Patience = time.Minute
	}
	if f.CreateTimeout <= 0 {
		f.CreateTimeout = 60 * time.Minute
	}
	if f.Now == nil {
		f.Now = time.Now
	}
	if f.Observers == 0 {
		f.Observers = 4
	}
	// The conductor's defaults: an update is bounded like a create
	// ([conductor] update_timeout = -1).
	s.timeouts = sm.Timeouts{Create: f.CreateTimeout, UpdateAsCreate: true}
	if _, lacks := s.caps.lacks(CapUpgrade); !lacks && f.UpgradeTemplate == nil {
		t.Fatal("the fixture has no UpgradeTemplate: declare CapUpgrade lacking, or give one")
	}
	if _, lacks := s.caps.lacks(CapFailure); !lacks {
		if _, ok := s.h.(FailureInjector); !ok {
			t.Fatal("the harness is no FailureInjector: declare CapFailure lacking, or implement it")
		}
	}
	if _, lacks := s.caps.lacks(CapNodesToRemove); !lacks {
		if _, ok := s.h.(NodeLister); !ok {
			t.Fatal("the harness is no NodeLister: declare CapNodesToRemove lacking, or implement it")
		}
	}
}

// skip says why a part is not run: the harness declared it lacking.
func (s *suite) skip(t *testing.T, cp Capability) bool {
	t.Helper()
	if reason, lacks := s.caps.lacks(cp); lacks {
		t.Logf("not checked: the harness declares %s lacking: %s", cp, reason)
		return true
	}
	return false
}

// create runs a create to its end (want: CREATE_COMPLETE or CREATE_FAILED).
func (s *suite) create(t *testing.T, cl *cluster, want string) {
	t.Helper()
	stop := cl.observers(t)
	defer stop()
	req := drivers.CreateClusterRequest{ClusterRequest: cl.request(), Timeout: s.f.CreateTimeout}
	res := cl.twice(t, "CreateCluster", func(ctx context.Context) (drivers.Result, error) {
		return s.d.CreateCluster(ctx, req)
	})
	cl.storeCluster(t, res, true)
	cl.await(t, "create", want)
}

// remove deletes the cluster until it is gone.
func (s *suite) remove(t *testing.T, cl *cluster) {
	t.Helper()
	stop := cl.observers(t)
	defer stop()
	cl.claim(objects.DeleteInProgress, nil)
	req := cl.request()
	res := cl.twice(t, "DeleteCluster", func(ctx context.Context) (drivers.Result, error) {
		if p, ok := s.d.(drivers.PreDeleter); ok {
			if err := p.PreDeleteCluster(ctx, req); err != nil {
				return drivers.Result{}, err
			}
		}
		return s.d.DeleteCluster(ctx, req)
	})
	cl.storeCluster(t, res, false)
	cl.await(t, "delete", "gone")
	// Gone stays gone.
	obs, _, err := cl.observe(context.Background(), true)
	if err != nil {
		t.Fatalf("observe after the deletion: %v", err)
	}
	if obs.Phase != drivers.PhaseGone && (obs.Request == nil || obs.Request.Exists) {
		t.Errorf("a deleted cluster is observed %q (request %+v), want gone", obs.Phase, obs.Request)
	}
}

// resize resizes the nodegroup named ng to n nodes, removing the nodes
// named in remove.
func (s *suite) resize(t *testing.T, cl *cluster, name string, n int, remove []string) {
	t.Helper()
	stop := cl.observers(t)
	defer stop()
	var target *objects.NodeGroup
	cl.claim(objects.UpdateInProgress, func() {
		for _, ng := range cl.ngs {
			if ng.Name == name {
				ng.NodeCount, ng.Status = int64(n), objects.UpdateInProgress
				target = objects.Clone(ng)
			}
		}
	})
	req := drivers.ResizeRequest{ClusterRequest: cl.request(), NodeGroup: target, NodeCount: n, NodesToRemove: remove}
	res := cl.twice(t, "ResizeCluster", func(ctx context.Context) (drivers.Result, error) {
		return s.d.ResizeCluster(ctx, req)
	})
	cl.storeCluster(t, res, false)
	cl.await(t, "resize of "+name, objects.UpdateComplete)
	if got := cl.nodeGroup(t, name); got.NodeCount != int64(n) || got.Status != objects.UpdateComplete {
		t.Fatalf("after the resize, %s has %d nodes in %s", name, got.NodeCount, got.Status)
	}
}

func (s *suite) lifecycle(t *testing.T) {
	cl := s.newCluster("drivertest-lifecycle")
	s.create(t, cl, objects.CreateComplete)
	t.Run("Resize", func(t *testing.T) {
		if s.skip(t, CapResize) {
			return
		}
		s.resize(t, cl, "default-worker", s.f.NodeCount+2, nil)
		s.resize(t, cl, "default-worker", s.f.NodeCount+1, nil)
		if s.skip(t, CapNodesToRemove) {
			s.resize(t, cl, "default-worker", s.f.NodeCount, nil)
			return
		}
		ng := cl.nodeGroup(t, "default-worker")
		names, err := s.h.(NodeLister).NodeNames(context.Background(), cl.request().Cluster, ng)
		if err != nil || len(names) != int(ng.NodeCount) {
			t.Fatalf("node names of %s (%d nodes): %v, %v", ng.Name, ng.NodeCount, names, err)
		}
		s.resize(t, cl, "default-worker", s.f.NodeCount, names[:1])
		after, err := s.h.(NodeLister).NodeNames(context.Background(), cl.request().Cluster, cl.nodeGroup(t, "default-worker"))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(after, names[0]) {
			t.Errorf("node %s was to be removed; the nodegroup still has %v", names[0], after)
		}
	})
	t.Run("NodeGroups", func(t *testing.T) {
		if s.skip(t, CapNodeGroups) {
			return
		}
		s.nodeGroups(t, cl)
	})
	t.Run("Upgrade", func(t *testing.T) {
		if s.skip(t, CapUpgrade) {
			return
		}
		s.upgrade(t, cl, objects.UpdateComplete)
		row := cl.request().Cluster
		if objects.Deref(row.ClusterTemplateID) != objects.Deref(s.f.UpgradeTemplate.UUID) {
			t.Errorf("after the upgrade the cluster has template %s", objects.Deref(row.ClusterTemplateID))
		}
	})
	s.remove(t, cl)
}

// nodeGroups creates, updates and deletes a nodegroup.
func (s *suite) nodeGroups(t *testing.T, cl *cluster) {
	stop := cl.observers(t)
	defer stop()
	var ng *objects.NodeGroup
	cl.claim(objects.UpdateInProgress, func() {
		now := s.now()
		worker := cl.ngs[len(cl.ngs)-1]
		ng = reset(&objects.NodeGroup{UUID: newUUID(), Name: "extra", ClusterID: objects.Deref(cl.c.UUID),
			ProjectID: s.f.ProjectID, Role: "worker", NodeCount: 1, MaxNodeCount: objects.Int(3),
			ImageID: worker.ImageID, FlavorID: worker.FlavorID, Labels: maps.Clone(worker.Labels),
			Status: objects.CreateInProgress, CreatedAt: &now, UpdatedAt: &now})
		cl.ngs = append(cl.ngs, ng)
		ng = objects.Clone(ng)
	})
	req := drivers.NodeGroupRequest{ClusterRequest: cl.request(), NodeGroup: ng}
	res := cl.twice(t, "CreateNodeGroup", func(ctx context.Context) (drivers.Result, error) {
		return s.d.CreateNodeGroup(ctx, req)
	})
	cl.storeNodeGroup(t, res, ng.UUID)
	cl.await(t, "nodegroup create", objects.UpdateComplete)
	if got := cl.nodeGroup(t, "extra"); got.Status != objects.CreateComplete {
		t.Fatalf("the new nodegroup is %s", got.Status)
	}

	cl.claim(objects.UpdateInProgress, func() {
		for _, n := range cl.ngs {
			if n.UUID == ng.UUID {
				n.MaxNodeCount, n.Status = objects.Int(5), objects.UpdateInProgress
				ng = objects.Clone(n)
			}
		}
	})
	req = drivers.NodeGroupRequest{ClusterRequest: cl.request(), NodeGroup: ng}
	res = cl.twice(t, "UpdateNodeGroup", func(ctx context.Context) (drivers.Result, error) {
		return s.d.UpdateNodeGroup(ctx, req)
	})
	cl.storeNodeGroup(t, res, ng.UUID)
	cl.await(t, "nodegroup update", objects.UpdateComplete)
	if got := cl.nodeGroup(t, "extra"); got.Status != objects.UpdateComplete {
		t.Fatalf("the updated nodegroup is %s", got.Status)
	}

	cl.claim(objects.UpdateInProgress, func() {
		for _, n := range cl.ngs {
			if n.UUID == ng.UUID {
				n.Status = objects.DeleteInProgress
				ng = objects.Clone(n)
			}
		}
	})
	req = drivers.NodeGroupRequest{ClusterRequest: cl.request(), NodeGroup: ng}
	res = cl.twice(t, "DeleteNodeGroup", func(ctx context.Context) (drivers.Result, error) {
		return s.d.DeleteNodeGroup(ctx, req)
	})
	cl.storeNodeGroup(t, res, ng.UUID)
	cl.await(t, "nodegroup delete", objects.UpdateComplete)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if slices.ContainsFunc(cl.ngs, func(n *objects.NodeGroup) bool { return n.UUID == ng.UUID }) {
		t.Fatal("the deleted nodegroup was never reported gone")
	}
}

// upgrade upgrades the cluster to the fixture's UpgradeTemplate through its
// default master, as the conductor does: recorded with the claim, the
// request holding the cluster as it was.
func (s *suite) upgrade(t *testing.T, cl *cluster, want string) {
	t.Helper()
	stop := cl.observers(t)
	defer stop()
	to := s.f.UpgradeTemplate
	tag, hasTag := to.Labels["kube_tag"]
	var asIs drivers.ClusterRequest
	var target *objects.NodeGroup
	cl.claim(objects.UpdateInProgress, func() {
		for _, ng := range cl.ngs {
			ng.Status = objects.UpdateInProgress
		}
		asIs = cl.requestLocked()
		target = objects.Clone(cl.ngs[0])
		cl.c.ClusterTemplateID = to.UUID
		if hasTag {
			cl.c.Labels = maps.Clone(cl.c.Labels)
			cl.c.Labels["kube_tag"] = tag
		}
		for _, ng := range cl.ngs {
			if to.ImageID != nil {
				ng.ImageID = to.ImageID
			}
			if hasTag {
				ng.Version = objects.Str(tag)
			}
		}
		cl.ct = to
	})
	req := drivers.UpgradeRequest{ClusterRequest: asIs, NewTemplate: objects.Clone(to), NodeGroup: target, MaxBatchSize: 1}
	res := cl.twice(t, "UpgradeCluster", func(ctx context.Context) (drivers.Result, error) {
		return s.d.UpgradeCluster(ctx, req)
	})
	cl.storeCluster(t, res, false)
	cl.await(t, "upgrade", want)
}

// createFailure: a create the back end gives up on ends CREATE_FAILED with
// a reason; the failed cluster can be deleted.
func (s *suite) createFailure(t *testing.T) {
	if s.skip(t, CapFailure) {
		return
	}
	cl := s.newCluster("drivertest-create-failure")
	if err := s.h.(FailureInjector).InjectFailure(context.Background(), cl.c, OpCreate); err != nil {
		t.Fatal(err)
	}
	objects.ResetChanges(cl.c)
	s.create(t, cl, objects.CreateFailed)
	if r := cl.request().Cluster.StatusReason; objects.Deref(r) == "" {
		t.Error("a failed create has no reason")
	}
	s.remove(t, cl)
}

// upgradeFailure: an upgrade the back end gives up on ends UPDATE_FAILED
// with a reason, the cluster rolled back to the template its back end runs.
func (s *suite) upgradeFailure(t *testing.T) {
	if s.skip(t, CapFailure) || s.skip(t, CapUpgrade) {
		return
	}
	cl := s.newCluster("drivertest-upgrade-failure")
	s.create(t, cl, objects.CreateComplete)
	if err := s.h.(FailureInjector).InjectFailure(context.Background(), cl.c, OpUpgrade); err != nil {
		t.Fatal(err)
	}
	objects.ResetChanges(cl.c)
	s.upgrade(t, cl, objects.UpdateFailed)
	row := cl.request().Cluster
	if objects.Deref(row.StatusReason) == "" {
		t.Error("a failed upgrade has no reason")
	}
	if !s.skip(t, CapUpgradeRollback) {
		if got := objects.Deref(row.ClusterTemplateID); got != objects.Deref(s.f.Template.UUID) {
			t.Errorf("a failed upgrade left template %s, want the one the back end runs, %s (AppliedTemplateID)", got,
				objects.Deref(s.f.Template.UUID))
		}
		if !strings.Contains(objects.Deref(row.StatusReason), "rolled back") {
			t.Errorf("reason %q does not say it was rolled back", objects.Deref(row.StatusReason))
		}
	}
	cl.mu.Lock()
	cl.ct = s.f.Template
	cl.mu.Unlock()
	s.remove(t, cl)
}

// createTimeout: a create the back end does not converge fails on its
// deadline, and only on a fresh observation.
func (s *suite) createTimeout(t *testing.T) {
	if s.skip(t, CapStall) {
		return
	}
	cl := s.newCluster("drivertest-timeout")
	req := drivers.CreateClusterRequest{ClusterRequest: cl.request(), Timeout: s.f.CreateTimeout}
	res := cl.twice(t, "CreateCluster", func(ctx context.Context) (drivers.Result, error) {
		return s.d.CreateCluster(ctx, req)
	})
	if res.Observation != nil && res.Observation.Phase == drivers.PhaseReady {
		t.Log("not checked: the back end finished the create inside the call")
		cl.storeCluster(t, res, true)
		s.remove(t, cl)
		return
	}
	cl.storeCluster(t, res, true)
	late := s.now().Add(s.f.CreateTimeout + time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), s.f.Patience)
	defer cancel()
	obs, _, err := cl.observe(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Phase == drivers.PhaseReady {
		t.Fatal("a create the back end was not let progress is observed ready")
	}
	if fresh, ok := cl.failsOnDeadline(ctx, t, obs, late, objects.CreateFailed); !ok {
		t.Fatalf("after its deadline the create is %s (%q); Started %s", cl.c.Status, objects.Deref(cl.c.StatusReason), fresh.Started)
	}
	s.remove(t, cl)
}

// failsOnDeadline checks the conductor's rule for a deadline passed at
// late on obs: decided on that cached observation, it only asks for a
// fresh one; on a fresh observation the operation fails (status want,
// "timed out" in the reason). It returns the fresh observation and whether
// the operation failed so.
func (cl *cluster) failsOnDeadline(ctx context.Context, t *testing.T, obs drivers.Observation, late time.Time, want string) (drivers.Observation, bool) {
	t.Helper()
	d := cl.decide(t, obs, false, late)
	if !d.NeedFresh || d.Changed() {
		t.Fatalf("a deadline passed on a cached observation must only ask for a fresh one: %+v", d)
	}
	fresh, _, err := cl.observe(ctx, true)
	if err != nil {
		t.Fatalf("a fresh observation, which the conductor asks before it fails an operation on its deadline: %v", err)
	}
	d = cl.decide(t, fresh, true, late)
	return fresh, d.Cluster != nil && d.Cluster.Status == want && strings.Contains(objects.Deref(d.Cluster.StatusReason), "timed out")
}

// updateTimeout: a resize the back end holds but does not converge fails on
// the update deadline, counted from Observation.Started, and only on a fresh
// observation.
func (s *suite) updateTimeout(t *testing.T) {
	if s.skip(t, CapStall) || s.skip(t, CapResize) {
		return
	}
	cl := s.newCluster("drivertest-update-timeout")
	s.create(t, cl, objects.CreateComplete)
	var target *objects.NodeGroup
	cl.claim(objects.UpdateInProgress, func() {
		for _, ng := range cl.ngs {
			if ng.Name == "default-worker" {
				ng.NodeCount, ng.Status = ng.NodeCount+1, objects.UpdateInProgress
				target = objects.Clone(ng)
			}
		}
	})
	req := drivers.ResizeRequest{ClusterRequest: cl.request(), NodeGroup: target, NodeCount: int(target.NodeCount)}
	res := cl.twice(t, "ResizeCluster", func(ctx context.Context) (drivers.Result, error) {
		return s.d.ResizeCluster(ctx, req)
	})
	cl.storeCluster(t, res, false)
	if status := cl.request().Cluster.Status; status != objects.UpdateInProgress {
		t.Logf("not checked: the back end finished the resize inside the call (%s)", status)
		s.remove(t, cl)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.f.Patience)
	defer cancel()
	obs, req2, err := cl.observe(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	cl.check(t, obs, req2, "a resize the back end was not let progress")
	if d := cl.decide(t, obs, false, s.now()); d.Cluster != nil && d.Cluster.Status == objects.UpdateComplete {
		t.Log("not checked: the back end finished the resize without being let progress")
		s.remove(t, cl)
		return
	}
	if obs.Started.IsZero() {
		t.Fatal("an update in progress reports no Started: the conductor's update deadline cannot apply, and an update " +
			"that never converges would stay UPDATE_IN_PROGRESS for ever")
	}
	late := s.now().Add(s.f.CreateTimeout + time.Minute)
	if fresh, ok := cl.failsOnDeadline(ctx, t, obs, late, objects.UpdateFailed); !ok {
		row := cl.request().Cluster
		t.Fatalf("after its deadline the resize is %s (%q); Started %s, deadline %s after it", row.Status,
			objects.Deref(row.StatusReason), fresh.Started, s.f.CreateTimeout)
	}
	s.remove(t, cl)
}

// neverCreated: a cluster the back end never had is not reported as there.
func (s *suite) neverCreated(t *testing.T) {
	cl := s.newCluster("drivertest-never-created")
	cl.claim(objects.UpdateInProgress, func() {
		cl.c.StackID = cl.c.UUID
		for _, ng := range cl.ngs {
			ng.Status = objects.CreateComplete
		}
	})
	for _, fresh := range []bool{false, true} {
		obs, req, err := cl.observe(context.Background(), fresh)
		if errors.Is(err, drivers.ErrNotManaged) {
			// The stack_id (the cluster's uuid) is not of the driver's
			// shape: it refuses to judge a cluster it cannot tell its own,
			// which never reports it present either.
			continue
		}
		if err != nil {
			t.Fatalf("observe (fresh %v): %v", fresh, err)
		}
		cl.check(t, obs, req, "a cluster never created")
		there := obs.Phase == drivers.PhaseReady || obs.Phase == drivers.PhaseInProgress || obs.Phase == drivers.PhaseFailed
		if there && (obs.Request == nil || obs.Request.Exists) {
			t.Errorf("a cluster the back end never had is observed %q (request %+v): want gone, pending, or a request "+
				"that does not exist", obs.Phase, obs.Request)
		}
	}
}
