package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// cluster is one cluster as the suite's conductor holds it: the rows the
// conductor's database would hold, guarded by mu (observers read them
// while operations run).
type cluster struct {
	s   *suite
	mu  sync.Mutex
	c   *objects.Cluster
	ngs []*objects.NodeGroup
	ct  *objects.ClusterTemplate
	// gone: the deletion finished; the rows are removed.
	gone bool
	// last is the latest observation judged.
	last drivers.Observation
	// reached: an operation's driver call returned (Request is then due).
	reached bool
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func reset[T objects.Object](o T) T {
	objects.ResetChanges(o)
	return o
}

// newCluster builds the rows cluster_create inserts: the cluster in
// CREATE_IN_PROGRESS and its default master and worker nodegroups.
func (s *suite) newCluster(name string) *cluster {
	f, ct := s.f, s.f.Template
	now := s.now()
	labels := maps.Clone(ct.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, f.Labels)
	c := &objects.Cluster{
		UUID: objects.Str(newUUID()), Name: objects.Str(name), ProjectID: objects.Str(f.ProjectID),
		UserID: objects.Str(f.UserID), ClusterTemplateID: ct.UUID, Keypair: objects.Str(f.Keypair), Labels: labels,
		FlavorID: ct.FlavorID, MasterFlavorID: ct.MasterFlavorID, DockerVolumeSize: ct.DockerVolumeSize,
		Status: objects.CreateInProgress, CreateTimeout: objects.Int(int64(f.CreateTimeout / time.Minute)),
		FloatingIPEnabled: ct.FloatingIPEnabled, MasterLBEnabled: ct.MasterLBEnabled, CreatedAt: &now, UpdatedAt: &now,
	}
	cl := &cluster{s: s, c: reset(c), ct: ct}
	for _, role := range []string{objects.RoleMaster, objects.RoleWorker} {
		count, flavor := f.MasterCount, ct.MasterFlavorID
		if role == objects.RoleWorker {
			count, flavor = f.NodeCount, ct.FlavorID
		}
		cl.ngs = append(cl.ngs, reset(&objects.NodeGroup{
			UUID: newUUID(), Name: "default-" + role, ClusterID: *c.UUID, ProjectID: f.ProjectID, Role: role,
			NodeCount: int64(count), IsDefault: true, ImageID: ct.ImageID, FlavorID: flavor, Labels: maps.Clone(labels),
			DockerVolumeSize: ct.DockerVolumeSize, Status: objects.CreateInProgress, CreatedAt: &now, UpdatedAt: &now,
		}))
	}
	return cl
}

// request is a ClusterRequest of copies of the rows.
func (cl *cluster) request() drivers.ClusterRequest {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.requestLocked()
}

func (cl *cluster) requestLocked() drivers.ClusterRequest {
	req := drivers.ClusterRequest{Cluster: objects.Clone(cl.c), Template: objects.Clone(cl.ct)}
	for _, ng := range cl.ngs {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	return req
}

// nodeGroup returns the row of the nodegroup named name.
func (cl *cluster) nodeGroup(t *testing.T, name string) *objects.NodeGroup {
	t.Helper()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, ng := range cl.ngs {
		if ng.Name == name {
			return objects.Clone(ng)
		}
	}
	t.Fatalf("no nodegroup %s", name)
	return nil
}

// claim changes the rows as an operation's claim does: the cluster in
// status (its reason cleared), change applied under the lock.
func (cl *cluster) claim(status string, change func()) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	now := cl.s.now()
	cl.c.Status, cl.c.StatusReason, cl.c.UpdatedAt = status, nil, &now
	if change != nil {
		change()
	}
	objects.ResetChanges(cl.c)
	for _, ng := range cl.ngs {
		objects.ResetChanges(ng)
	}
	cl.reached = false
}

// twice calls op twice with the same request, as the conductor would after
// a lost reply, and returns the second result (the one it would store). A
// driver must answer both alike.
func (cl *cluster) twice(t *testing.T, name string, op func(ctx context.Context) (drivers.Result, error)) drivers.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cl.s.f.Patience)
	defer cancel()
	if _, err := op(ctx); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := op(ctx)
	if err != nil {
		t.Fatalf("%s, called again with the same request (a lost reply): %v", name, err)
	}
	cl.mu.Lock()
	cl.reached = true
	cl.mu.Unlock()
	return res
}

// storeCluster records a cluster operation's result: its stack_id (the
// cluster's uuid for a create that names none, on the default nodegroups
// too), then its observation.
func (cl *cluster) storeCluster(t *testing.T, res drivers.Result, create bool) {
	t.Helper()
	cl.mu.Lock()
	sid := res.StackID
	if create && sid == "" {
		sid = objects.Deref(cl.c.UUID)
	}
	if sid != "" {
		cl.c.StackID = objects.Str(sid)
		objects.ResetChanges(cl.c)
		if create {
			for _, ng := range cl.ngs {
				ng.StackID = objects.Str(sid)
				objects.ResetChanges(ng)
			}
		}
	}
	cl.mu.Unlock()
	cl.judgeResult(t, res)
}

// storeNodeGroup records a nodegroup operation's result.
func (cl *cluster) storeNodeGroup(t *testing.T, res drivers.Result, uuid string) {
	t.Helper()
	cl.mu.Lock()
	if res.StackID != "" {
		for _, ng := range cl.ngs {
			if ng.UUID == uuid {
				ng.StackID = objects.Str(res.StackID)
				objects.ResetChanges(ng)
			}
		}
	}
	cl.mu.Unlock()
	cl.judgeResult(t, res)
}

func (cl *cluster) judgeResult(t *testing.T, res drivers.Result) {
	t.Helper()
	if res.Observation == nil {
		return
	}
	cl.check(t, *res.Observation, cl.request(), "the observation returned with the result")
	cl.decide(t, *res.Observation, true, cl.s.now())
}

// decide judges obs as the conductor does and records the decision.
func (cl *cluster) decide(t *testing.T, obs drivers.Observation, fresh bool, now time.Time) sm.Decision {
	t.Helper()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	d := sm.Decide(sm.Input{Cluster: cl.c, NodeGroups: cl.ngs, Observation: obs, Fresh: fresh, Now: now, Timeouts: cl.s.timeouts})
	if d.Resume != nil {
		t.Fatalf("the status machine would resume the operation (%s): the back end does not show what it was asked for",
			d.Interrupted)
	}
	cl.apply(d)
	cl.last = obs
	return d
}

// apply records d on the rows (the conductor's saves).
func (cl *cluster) apply(d sm.Decision) {
	if d.Cluster == nil {
		return
	}
	cl.c = reset(d.Cluster)
	for _, ng := range d.NodeGroups {
		i := slices.IndexFunc(cl.ngs, func(n *objects.NodeGroup) bool { return n.UUID == ng.UUID })
		cl.ngs[i] = reset(ng)
	}
	for _, gone := range d.Destroy {
		cl.ngs = slices.DeleteFunc(cl.ngs, func(n *objects.NodeGroup) bool { return n.UUID == gone.UUID })
	}
	if d.Deleted {
		cl.gone = true
	}
}

// observe asks the driver, retrying while it is not ready.
func (cl *cluster) observe(ctx context.Context, fresh bool) (drivers.Observation, drivers.ClusterRequest, error) {
	req := cl.request()
	for {
		obs, err := cl.s.d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: req, Fresh: fresh})
		if !errors.Is(err, drivers.ErrNotReady) {
			return obs, req, err
		}
		if err := cl.s.h.Progress(ctx, req.Cluster); err != nil {
			return obs, req, err
		}
	}
}

// await observes and progresses the back end until the cluster's operation
// ends, and fails the test unless it ends in want ("gone": the deletion
// finished). It returns the cluster's status reason.
func (cl *cluster) await(t *testing.T, what, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cl.s.f.Patience)
	defer cancel()
	for {
		obs, req, err := cl.observe(ctx, false)
		if err != nil {
			t.Fatalf("%s: observe: %v", what, err)
		}
		cl.check(t, obs, req, what)
		now := cl.s.now()
		d := cl.decide(t, obs, false, now)
		if d.NeedFresh {
			fresh, req, err := cl.observe(ctx, true)
			if err != nil {
				t.Fatalf("%s: fresh observe: %v", what, err)
			}
			cl.check(t, fresh, req, what+" (fresh)")
			cl.decide(t, fresh, true, now)
		}
		cl.mu.Lock()
		status, reason, gone := cl.c.Status, objects.Deref(cl.c.StatusReason), cl.gone
		cl.mu.Unlock()
		switch {
		case gone && want == "gone":
			return reason
		case gone:
			t.Fatalf("%s: the cluster is gone, want %s", what, want)
		case !sm.InProgress(status):
			if status != want {
				t.Fatalf("%s: %s (%q), want %s", what, status, reason, want)
			}
			cl.checkSettled(t, what)
			return reason
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: still %s after %s (%q; last phase %q)", what, status, cl.s.f.Patience, reason, obs.Phase)
		}
		if err := cl.s.h.Progress(ctx, req.Cluster); err != nil && ctx.Err() == nil {
			t.Fatalf("%s: progress: %v", what, err)
		}
	}
}

// check validates one observation of req's rows.
func (cl *cluster) check(t *testing.T, obs drivers.Observation, req drivers.ClusterRequest, what string) {
	t.Helper()
	for _, p := range []drivers.Phase{obs.Phase} {
		if !validPhase(p) {
			t.Errorf("%s: phase %q is not one of the contract's", what, p)
		}
	}
	for uuid, o := range obs.NodeGroups {
		if req.NodeGroupByUUID(uuid) == nil {
			t.Errorf("%s: nodegroup %s reported, which the request does not hold", what, uuid)
		}
		if !validPhase(o.Phase) {
			t.Errorf("%s: nodegroup %s phase %q is not one of the contract's", what, uuid, o.Phase)
		}
		if o.NodeCount != nil && *o.NodeCount < 0 {
			t.Errorf("%s: nodegroup %s node count %d", what, uuid, *o.NodeCount)
		}
	}
	if !obs.Started.IsZero() && obs.Started.After(cl.s.now().Add(time.Minute)) {
		t.Errorf("%s: Started %s is in the future (now %s)", what, obs.Started, cl.s.now())
	}
	if strings.Contains(obs.Reason, "\n") {
		t.Errorf("%s: reason %q is more than one line", what, obs.Reason)
	}
	cl.mu.Lock()
	reached := cl.reached
	cl.mu.Unlock()
	if _, lacks := cl.s.caps.lacks(CapRequest); !lacks && reached && obs.Request == nil {
		t.Errorf("%s: Observation.Request not reported after the driver call returned", what)
	}
}

func validPhase(p drivers.Phase) bool {
	switch p {
	case "", drivers.PhasePending, drivers.PhaseInProgress, drivers.PhaseReady, drivers.PhaseFailed, drivers.PhaseGone:
		return true
	}
	return false
}

// checkSettled checks a settled cluster's last observation: a converged
// nodegroup shows one address per node (no node twice, none left over from
// a repeated call).
func (cl *cluster) checkSettled(t *testing.T, what string) {
	t.Helper()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if !strings.HasSuffix(cl.c.Status, "_COMPLETE") {
		return
	}
	for _, ng := range cl.ngs {
		o, ok := cl.last.NodeGroups[ng.UUID]
		if !ok || o.NodeAddresses == nil || o.Phase != drivers.PhaseReady {
			continue
		}
		if int64(len(o.NodeAddresses)) != ng.NodeCount {
			t.Errorf("%s: nodegroup %s of %d nodes reports %d addresses %v", what, ng.Name, ng.NodeCount,
				len(o.NodeAddresses), o.NodeAddresses)
		}
		seen := map[string]bool{}
		for _, a := range o.NodeAddresses {
			if seen[a] {
				t.Errorf("%s: nodegroup %s reports address %s twice", what, ng.Name, a)
			}
			seen[a] = true
		}
	}
}

// observers starts the concurrent observers; stop ends them.
func (cl *cluster) observers(t *testing.T) (stop func()) {
	n := cl.s.f.Observers
	if n <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				req := cl.request()
				ctx, cancel := context.WithTimeout(context.Background(), cl.s.f.Patience)
				obs, err := cl.s.d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: req, Fresh: (i+k)%2 == 1})
				cancel()
				if err != nil {
					if !errors.Is(err, drivers.ErrNotReady) {
						t.Errorf("concurrent Observe: %v", err)
						return
					}
					continue
				}
				cl.check(t, obs, req, fmt.Sprintf("concurrent Observe %d", i))
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
