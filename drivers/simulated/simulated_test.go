package simulated_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// rows are a cluster and its nodegroups as the database holds them.
type rows struct {
	c   *objects.Cluster
	ngs []*objects.NodeGroup
}

func newRows(labels map[string]string) *rows {
	r := &rows{
		c: &objects.Cluster{UUID: objects.Str("c-uuid"), Name: objects.Str("k"), Labels: labels,
			Status: objects.CreateInProgress, CreateTimeout: objects.Int(60)},
		ngs: []*objects.NodeGroup{
			{UUID: "m-uuid", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, Status: objects.CreateInProgress},
			{UUID: "w-uuid", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 3, IsDefault: true, Status: objects.CreateInProgress},
		},
	}
	r.reset()
	return r
}

func (r *rows) reset() {
	objects.ResetChanges(r.c)
	for _, ng := range r.ngs {
		objects.ResetChanges(ng)
	}
}

func (r *rows) req() drivers.ClusterRequest {
	req := drivers.ClusterRequest{Cluster: objects.Clone(r.c)}
	for _, ng := range r.ngs {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	return req
}

// store records a result as the conductor does: its stack_id on the
// cluster (and default nodegroups at create), or on the nodegroup.
func (r *rows) store(res drivers.Result, ng *objects.NodeGroup) {
	if res.StackID == "" {
		return
	}
	if ng != nil {
		ng.StackID = objects.Str(res.StackID)
		return
	}
	r.c.StackID = objects.Str(res.StackID)
	r.reset()
}

// judge runs the status machine on obs and records its decision.
func (r *rows) judge(t *testing.T, obs drivers.Observation, now time.Time) statusmachine.Decision {
	t.Helper()
	d := statusmachine.Decide(statusmachine.Input{Cluster: r.c, NodeGroups: r.ngs, Observation: obs, Fresh: true, Now: now,
		Timeouts: statusmachine.Timeouts{Create: time.Hour}})
	if d.Cluster == nil {
		return d
	}
	r.c = d.Cluster
	for _, ng := range d.NodeGroups {
		i := slices.IndexFunc(r.ngs, func(n *objects.NodeGroup) bool { return n.UUID == ng.UUID })
		r.ngs[i] = ng
	}
	for _, gone := range d.Destroy {
		r.ngs = slices.DeleteFunc(r.ngs, func(n *objects.NodeGroup) bool { return n.UUID == gone.UUID })
	}
	r.reset()
	return d
}

// sync is one status sync: observe, then judge.
func (r *rows) sync(t *testing.T, d *simulated.Driver, now time.Time) statusmachine.Decision {
	t.Helper()
	obs, err := d.Observe(context.Background(), drivers.ObserveRequest{ClusterRequest: r.req()})
	if err != nil {
		t.Fatal(err)
	}
	return r.judge(t, obs, now)
}

func TestCreateCompletesAfterDelay(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	d := simulated.New(simulated.Options{Delay: 30 * time.Second, Now: clk.now})
	r := newRows(nil)
	res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req(), Timeout: time.Hour})
	if err != nil || res.Observation != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if op, start, ok := simulated.ParseStackID(&res.StackID); !ok || op != "create" || !start.Equal(clk.t) {
		t.Fatalf("stack_id = %q", res.StackID)
	}
	r.store(res, nil)
	clk.t = clk.t.Add(29 * time.Second)
	r.sync(t, d, clk.t)
	if r.c.Status != objects.CreateInProgress || r.ngs[0].Status != objects.CreateInProgress {
		t.Fatalf("completed early: %s %s", r.c.Status, r.ngs[0].Status)
	}
	clk.t = clk.t.Add(time.Second)
	if dec := r.sync(t, d, clk.t); dec.Event == nil || dec.Event.Action != "create" || dec.Event.Outcome != "success" {
		t.Fatalf("event %+v", dec.Event)
	}
	if r.c.Status != objects.CreateComplete || objects.Deref(r.c.StatusReason) != "simulated create completed" {
		t.Fatalf("status = %s %q", r.c.Status, objects.Deref(r.c.StatusReason))
	}
	for _, ng := range r.ngs {
		if ng.Status != objects.CreateComplete || int64(len(ng.NodeAddresses)) != ng.NodeCount {
			t.Fatalf("nodegroup %s: %s %v", ng.Name, ng.Status, ng.NodeAddresses)
		}
	}
	if objects.Deref(r.c.APIAddress) == "" || objects.Deref(r.c.CoeVersion) != "v1.33.1" || objects.Deref(r.c.ContainerVersion) != "1.7.27" {
		t.Fatalf("api_address %q coe_version %q", objects.Deref(r.c.APIAddress), objects.Deref(r.c.CoeVersion))
	}
}

func TestOperationsEndInTheirFinalStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		status  string
		call    func(d *simulated.Driver, r *rows) error
		want    string
		wantNGs string // "" : none still in progress
	}{
		{"create", nil, objects.CreateInProgress, func(d *simulated.Driver, r *rows) error {
			res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req()})
			r.store(res, nil)
			return err
		}, objects.CreateComplete, objects.CreateComplete},
		{"create fails", map[string]string{"sim_fail": "create"}, objects.CreateInProgress, func(d *simulated.Driver, r *rows) error {
			res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req()})
			r.store(res, nil)
			return err
		}, objects.CreateFailed, objects.CreateFailed},
		{"resize", nil, objects.UpdateInProgress, func(d *simulated.Driver, r *rows) error {
			r.ngs[1].NodeCount, r.ngs[1].Status = 5, objects.UpdateInProgress
			r.reset()
			res, err := d.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1], NodeCount: 5})
			r.store(res, nil)
			return err
		}, objects.UpdateComplete, ""},
		{"update fails covers resize", map[string]string{"sim_fail": "update"}, objects.UpdateInProgress, func(d *simulated.Driver, r *rows) error {
			r.ngs[1].Status = objects.UpdateInProgress
			r.reset()
			res, err := d.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1], NodeCount: 5})
			r.store(res, nil)
			return err
		}, objects.UpdateFailed, ""},
		{"upgrade", nil, objects.UpdateInProgress, func(d *simulated.Driver, r *rows) error {
			r.ngs[0].Status = objects.UpdateInProgress
			r.reset()
			asIs := r.req()
			// The conductor records the upgrade with its claim.
			r.c.ClusterTemplateID, r.ngs[0].Version = objects.Str("ct2"), objects.Str("v1.34.0")
			r.reset()
			res, err := d.UpgradeCluster(ctx, drivers.UpgradeRequest{ClusterRequest: asIs, NodeGroup: asIs.NodeGroups[0],
				NewTemplate: &objects.ClusterTemplate{UUID: objects.Str("ct2"), Labels: map[string]string{"kube_tag": "v1.34.0"}}})
			r.store(res, nil)
			return err
		}, objects.UpdateComplete, ""},
		{"delete", nil, objects.DeleteInProgress, func(d *simulated.Driver, r *rows) error {
			res, err := d.DeleteCluster(ctx, r.req())
			r.store(res, nil)
			return err
		}, objects.DeleteComplete, objects.CreateComplete},
		{"delete fails", map[string]string{"sim_fail": "delete"}, objects.DeleteInProgress, func(d *simulated.Driver, r *rows) error {
			res, err := d.DeleteCluster(ctx, r.req())
			r.store(res, nil)
			return err
		}, objects.DeleteFailed, objects.CreateComplete},
		{"nodegroup create", nil, objects.UpdateInProgress, func(d *simulated.Driver, r *rows) error {
			r.ngs[1].Status = objects.CreateInProgress
			r.reset()
			res, err := d.CreateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1]})
			r.store(res, r.ngs[1])
			return err
		}, objects.UpdateComplete, ""},
		{"nodegroup create fails", map[string]string{"sim_fail": "ng_create"}, objects.UpdateInProgress, func(d *simulated.Driver, r *rows) error {
			r.ngs[1].Status = objects.CreateInProgress
			r.reset()
			res, err := d.CreateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1]})
			r.store(res, r.ngs[1])
			return err
		}, objects.UpdateFailed, ""},
		{"hang", map[string]string{"sim_hang": "true"}, objects.CreateInProgress, func(d *simulated.Driver, r *rows) error {
			res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req()})
			r.store(res, nil)
			return err
		}, objects.CreateInProgress, objects.CreateInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			d := simulated.New(simulated.Options{Delay: time.Minute, Now: clk.now})
			r := newRows(tc.labels)
			for _, ng := range r.ngs {
				if tc.status != objects.CreateInProgress {
					ng.Status = objects.CreateComplete
				}
			}
			r.c.Status = tc.status
			r.c.StackID = objects.Str(simulated.StackID("create", clk.t.Add(-time.Hour)))
			r.reset()
			if err := tc.call(d, r); err != nil {
				t.Fatal(err)
			}
			clk.t = clk.t.Add(time.Minute)
			r.sync(t, d, clk.t)
			if r.c.Status != tc.want {
				t.Fatalf("status = %s (%s), want %s", r.c.Status, objects.Deref(r.c.StatusReason), tc.want)
			}
			for _, ng := range r.ngs {
				if tc.wantNGs != "" && ng.Status != tc.wantNGs {
					t.Fatalf("nodegroup %s = %s, want %s", ng.Name, ng.Status, tc.wantNGs)
				}
				if tc.wantNGs == "" && statusmachine.InProgress(ng.Status) {
					t.Fatalf("nodegroup %s still %s", ng.Name, ng.Status)
				}
			}
		})
	}
}

// TestNodeGroupDeletionIsGone: a nodegroup deleted is reported gone once
// its delay passed, and its row goes.
func TestNodeGroupDeletionIsGone(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	d := simulated.New(simulated.Options{Delay: time.Minute, Now: clk.now})
	r := newRows(nil)
	r.c.Status, r.c.StackID = objects.UpdateInProgress, objects.Str(simulated.StackID("create", clk.t.Add(-time.Hour)))
	r.ngs[0].Status = objects.CreateComplete
	r.ngs[1].Status = objects.DeleteInProgress
	r.reset()
	res, err := d.DeleteNodeGroup(context.Background(), drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1]})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, r.ngs[1])
	r.reset()
	clk.t = clk.t.Add(59 * time.Second)
	if r.sync(t, d, clk.t); len(r.ngs) != 2 || r.c.Status != objects.UpdateInProgress {
		t.Fatalf("gone early: %d nodegroups, %s", len(r.ngs), r.c.Status)
	}
	clk.t = clk.t.Add(time.Second)
	if dec := r.sync(t, d, clk.t); len(dec.Destroy) != 1 || len(r.ngs) != 1 || r.c.Status != objects.UpdateComplete {
		t.Fatalf("%d nodegroups, %s", len(r.ngs), r.c.Status)
	}
}

func TestSyncFailureAndMonitor(t *testing.T) {
	ctx := context.Background()
	d := simulated.New(simulated.Options{})
	r := newRows(map[string]string{"sim_fail_sync": "create,rotate_ca"})
	if _, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req()}); err == nil {
		t.Fatal("CreateCluster: want error")
	}
	if _, err := d.RotateCACertificate(ctx, r.req()); err == nil {
		t.Fatal("RotateCACertificate: want error")
	}
	if _, err := d.DeleteCluster(ctx, r.req()); err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]string{"": objects.Healthy, "unhealthy": objects.Unhealthy, "unknown": objects.Unknown} {
		r.c.Labels = map[string]string{"sim_health": label}
		m, err := d.Monitor(ctx, r.req())
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.PollHealth(ctx)
		if err != nil || h.Status != want {
			t.Fatalf("label %q: %v %v, want %s", label, h, err, want)
		}
	}
	r.c.Labels = map[string]string{"sim_health": "hang"}
	m, _ := d.Monitor(ctx, r.req())
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.PollHealth(cctx); err == nil {
		t.Fatal("hang: want ctx error")
	}
	reg, err := drivers.NewRegistry(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := reg.ForTemplate(&objects.ClusterTemplate{ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"})
	if err != nil || got != drivers.Driver(d) {
		t.Fatalf("ForTemplate = %v, %v", got, err)
	}
}

// TestZeroDelayCreateCompletesAtOnce: at delay 0 the create's result
// carries the observation of a finished create, for the cluster and its
// default nodegroups alike (#25: the nodegroups used to stay in progress).
func TestZeroDelayCreateCompletesAtOnce(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	cases := []struct {
		name       string
		delay      time.Duration
		labels     map[string]string
		wantStatus string // "": no observation in the result
	}{
		{"zero delay completes inside CreateCluster", 0, nil, objects.CreateComplete},
		{"zero delay with sim_fail=create fails inside CreateCluster", 0, map[string]string{"sim_fail": "create"}, objects.CreateFailed},
		{"a sim_delay label keeps the create in progress", 0, map[string]string{"sim_delay": "5s"}, ""},
		{"sim_hang keeps the create in progress", 0, map[string]string{"sim_hang": "true"}, ""},
		{"a configured delay keeps the create in progress", time.Second, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := simulated.New(simulated.Options{Delay: tc.delay, Now: clk.now})
			r := newRows(tc.labels)
			res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req(), Timeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if op, _, ok := simulated.ParseStackID(&res.StackID); !ok || op != simulated.OpCreate {
				t.Fatalf("stack_id = %q", res.StackID)
			}
			if tc.wantStatus == "" {
				if res.Observation != nil {
					t.Fatalf("observation %+v", res.Observation)
				}
				return
			}
			if res.Observation == nil {
				t.Fatal("no observation")
			}
			r.store(res, nil)
			r.judge(t, *res.Observation, clk.t)
			if r.c.Status != tc.wantStatus {
				t.Fatalf("status = %s, want %s", r.c.Status, tc.wantStatus)
			}
			for _, ng := range r.ngs {
				if statusmachine.InProgress(ng.Status) {
					t.Fatalf("nodegroup %s still %s", ng.Name, ng.Status)
				}
			}
			if tc.wantStatus == objects.CreateComplete && (objects.Deref(r.c.APIAddress) == "" || objects.Deref(r.c.CoeVersion) == "") {
				t.Fatalf("api_address %q coe_version %q", objects.Deref(r.c.APIAddress), objects.Deref(r.c.CoeVersion))
			}
		})
	}
}

// TestRequestShowsWhatTheBackEndWasAskedFor: the back end holds the desired
// state of its last request; rows changed by a claim whose driver call never
// came show it behind, and a failed upgrade reports what it ran.
func TestRequestShowsWhatTheBackEndWasAskedFor(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	d := simulated.New(simulated.Options{Delay: time.Minute, Now: clk.now})
	r := newRows(nil)
	r.c.ClusterTemplateID = objects.Str("ct1")
	r.c.Labels = map[string]string{"kube_tag": "v1.33.1"}
	r.reset()
	observe := func() drivers.Observation {
		t.Helper()
		obs, err := d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: r.req()})
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	if req := observe().Request; req == nil || req.Exists {
		t.Fatalf("before any call the back end holds nothing: %+v", req)
	}
	res, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: r.req()})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, nil)
	req := observe().Request
	if req == nil || !req.Exists || req.Behind || req.TemplateID != "ct1" || *req.NodeGroups["w-uuid"].NodeCount != 3 {
		t.Fatalf("after the create: %+v", req)
	}
	// A resize claimed, its driver call never made.
	r.ngs[1].NodeCount, r.ngs[1].Status = 5, objects.UpdateInProgress
	r.c.Status = objects.UpdateInProgress
	r.reset()
	if req := observe().Request; req == nil || !req.Behind {
		t.Fatalf("a change the back end never got: %+v", req)
	}
	clk.t = clk.t.Add(time.Second)
	res, err = d.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1], NodeCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, nil)
	if req := observe().Request; req == nil || req.Behind || *req.NodeGroups["w-uuid"].NodeCount != 5 {
		t.Fatalf("after the resize: %+v", req)
	}
	// A nodegroup added: its own stack_id is the newest request.
	extra := &objects.NodeGroup{UUID: "x-uuid", Name: "extra", Role: objects.RoleWorker, NodeCount: 2, Status: objects.CreateInProgress}
	r.ngs = append(r.ngs, extra)
	r.reset()
	if req := observe().Request; !req.Behind {
		t.Fatalf("a nodegroup the back end never got: %+v", req)
	}
	clk.t = clk.t.Add(time.Second)
	res, err = d.CreateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: extra})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, extra)
	if req := observe().Request; req.Behind || req.NodeGroups["x-uuid"].NodeCount == nil {
		t.Fatalf("after the nodegroup create: %+v", req)
	}
	// A nodegroup update (its autoscaler bounds) claimed, its driver call
	// never made; then made.
	extra.MaxNodeCount, extra.Status = ptrInt64(4), objects.UpdateInProgress
	r.reset()
	if req := observe().Request; !req.Behind {
		t.Fatalf("a nodegroup update the back end never got: %+v", req)
	}
	clk.t = clk.t.Add(time.Second)
	res, err = d.UpdateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: extra})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, extra)
	if req := observe().Request; req.Behind || *req.NodeGroups["x-uuid"].MaxNodeCount != 4 {
		t.Fatalf("after the nodegroup update: %+v", req)
	}
	// A failed upgrade reports the template and kube_tag it ran.
	r.c.Labels[simulated.LabelFail] = "upgrade"
	r.reset()
	asIs := r.req()
	r.c.ClusterTemplateID = objects.Str("ct2")
	r.reset()
	clk.t = clk.t.Add(time.Second)
	res, err = d.UpgradeCluster(ctx, drivers.UpgradeRequest{ClusterRequest: asIs, NodeGroup: asIs.NodeGroups[0],
		NewTemplate: &objects.ClusterTemplate{UUID: objects.Str("ct2")}})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, nil)
	clk.t = clk.t.Add(time.Minute)
	obs := observe()
	if obs.Phase != drivers.PhaseFailed || obs.AppliedTemplateID != "ct1" || obs.AppliedKubeTag != "v1.33.1" ||
		obs.Request.Behind || obs.Request.TemplateID != "ct2" {
		t.Fatalf("failed upgrade: %+v %+v", obs, obs.Request)
	}
	// A stack_id from before fingerprints: not reported.
	r.c.StackID = objects.Str(simulated.StackID(simulated.OpCreate, clk.t.Add(time.Hour)))
	r.reset()
	if req := observe().Request; req != nil {
		t.Fatalf("an old stack_id: %+v", req)
	}
}

func ptrInt64(n int64) *int64 { return &n }

// TestUpdateStartedAndItsDeadline: Started is when the current operation
// began, the newest stack_id of the cluster and its nodegroups (a
// nodegroup update's is the nodegroup's, not the cluster's create), also
// under sim_hang, whose update then fails on the update deadline.
func TestUpdateStartedAndItsDeadline(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0).Add(5 * time.Hour)}
	d := simulated.New(simulated.Options{Delay: time.Minute, Now: clk.now})
	r := newRows(map[string]string{"sim_hang": "true"})
	for _, ng := range r.ngs {
		ng.Status = objects.CreateComplete
	}
	r.c.Status = objects.UpdateInProgress
	r.c.StackID = objects.Str(simulated.StackID("create", time.Unix(1000, 0)))
	r.ngs[1].Status, r.ngs[1].MinNodeCount = objects.UpdateInProgress, 2
	r.reset()
	res, err := d.UpdateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: r.req(), NodeGroup: r.ngs[1]})
	if err != nil {
		t.Fatal(err)
	}
	r.store(res, r.ngs[1])
	started := clk.t
	obs, err := d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: r.req(), Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Started.Equal(started) {
		t.Fatalf("Started %s, want the nodegroup update's %s", obs.Started, started)
	}
	tm := statusmachine.Timeouts{Create: 2 * time.Hour, UpdateAsCreate: true} // create_timeout 60 min wins
	decide := func(now time.Time) statusmachine.Decision {
		return statusmachine.Decide(statusmachine.Input{Cluster: r.c, NodeGroups: r.ngs, Observation: obs, Fresh: true, Now: now, Timeouts: tm})
	}
	if dec := decide(started.Add(59 * time.Minute)); dec.Cluster.Status != objects.UpdateInProgress {
		t.Fatalf("before the deadline: %s %q", dec.Cluster.Status, objects.Deref(dec.Cluster.StatusReason))
	}
	dec := decide(started.Add(61 * time.Minute))
	if dec.Cluster.Status != objects.UpdateFailed || !strings.Contains(objects.Deref(dec.Cluster.StatusReason), "timed out") {
		t.Fatalf("after the deadline: %s %q", dec.Cluster.Status, objects.Deref(dec.Cluster.StatusReason))
	}
}
