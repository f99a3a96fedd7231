package simulated_test

import (
	"context"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newCluster(labels map[string]string) (*objects.Cluster, []*objects.NodeGroup) {
	c := &objects.Cluster{UUID: objects.Str("c-uuid"), Name: objects.Str("k"), Labels: labels,
		Status: objects.CreateInProgress}
	ngs := []*objects.NodeGroup{
		{UUID: "m-uuid", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true, Status: objects.CreateInProgress},
		{UUID: "w-uuid", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 3, IsDefault: true, Status: objects.CreateInProgress},
	}
	return c, ngs
}

func TestCreateCompletesAfterDelay(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	d := simulated.New(simulated.Options{Delay: 30 * time.Second, Now: clk.now})
	c, ngs := newCluster(nil)
	if err := d.CreateCluster(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	if op, start, ok := simulated.ParseStackID(c.StackID); !ok || op != "create" || !start.Equal(clk.t) {
		t.Fatalf("stack_id = %q", objects.Deref(c.StackID))
	}
	clk.t = clk.t.Add(29 * time.Second)
	if err := d.UpdateClusterStatus(ctx, c, ngs); err != nil {
		t.Fatal(err)
	}
	if c.Status != objects.CreateInProgress || ngs[0].Status != objects.CreateInProgress {
		t.Fatalf("completed early: %s %s", c.Status, ngs[0].Status)
	}
	clk.t = clk.t.Add(time.Second)
	if err := d.UpdateClusterStatus(ctx, c, ngs); err != nil {
		t.Fatal(err)
	}
	if c.Status != objects.CreateComplete {
		t.Fatalf("status = %s", c.Status)
	}
	for _, ng := range ngs {
		if ng.Status != objects.CreateComplete || int64(len(ng.NodeAddresses)) != ng.NodeCount {
			t.Fatalf("nodegroup %s: %s %v", ng.Name, ng.Status, ng.NodeAddresses)
		}
	}
	if objects.Deref(c.APIAddress) == "" || objects.Deref(c.CoeVersion) != "v1.33.1" {
		t.Fatalf("api_address %q coe_version %q", objects.Deref(c.APIAddress), objects.Deref(c.CoeVersion))
	}
}

func TestOperationsEndInTheirFinalStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		status  string
		call    func(d *simulated.Driver, c *objects.Cluster, ngs []*objects.NodeGroup) error
		want    string
		wantNGs string
	}{
		{"create", nil, objects.CreateInProgress, func(d *simulated.Driver, c *objects.Cluster, _ []*objects.NodeGroup) error {
			return d.CreateCluster(ctx, c, 0)
		}, objects.CreateComplete, objects.CreateComplete},
		{"create fails", map[string]string{"sim_fail": "create"}, objects.CreateInProgress, func(d *simulated.Driver, c *objects.Cluster, _ []*objects.NodeGroup) error {
			return d.CreateCluster(ctx, c, 0)
		}, objects.CreateFailed, objects.CreateFailed},
		{"resize", nil, objects.UpdateInProgress, func(d *simulated.Driver, c *objects.Cluster, ngs []*objects.NodeGroup) error {
			ngs[1].NodeCount = 5
			ngs[1].Status = objects.UpdateInProgress
			return d.ResizeCluster(ctx, c, nil, 5, nil, ngs[1])
		}, objects.UpdateComplete, ""},
		{"update fails covers resize", map[string]string{"sim_fail": "update"}, objects.UpdateInProgress, func(d *simulated.Driver, c *objects.Cluster, ngs []*objects.NodeGroup) error {
			ngs[1].Status = objects.UpdateInProgress
			return d.ResizeCluster(ctx, c, nil, 5, nil, ngs[1])
		}, objects.UpdateFailed, ""},
		{"upgrade", nil, objects.UpdateInProgress, func(d *simulated.Driver, c *objects.Cluster, ngs []*objects.NodeGroup) error {
			ngs[0].Status = objects.UpdateInProgress
			return d.UpgradeCluster(ctx, c, &objects.ClusterTemplate{UUID: objects.Str("ct2"), Labels: map[string]string{"kube_tag": "v1.34.0"}}, 1, ngs[0], nil, false)
		}, objects.UpdateComplete, ""},
		{"delete", nil, objects.DeleteInProgress, func(d *simulated.Driver, c *objects.Cluster, _ []*objects.NodeGroup) error {
			return d.DeleteCluster(ctx, c)
		}, objects.DeleteComplete, objects.DeleteComplete},
		{"delete fails", map[string]string{"sim_fail": "delete"}, objects.DeleteInProgress, func(d *simulated.Driver, c *objects.Cluster, _ []*objects.NodeGroup) error {
			return d.DeleteCluster(ctx, c)
		}, objects.DeleteFailed, objects.DeleteFailed},
		{"nodegroup create", nil, objects.UpdateInProgress, func(d *simulated.Driver, c *objects.Cluster, ngs []*objects.NodeGroup) error {
			ngs[1].Status = objects.CreateInProgress
			return d.CreateNodeGroup(ctx, c, ngs[1])
		}, objects.UpdateComplete, ""},
		{"hang", map[string]string{"sim_hang": "true"}, objects.CreateInProgress, func(d *simulated.Driver, c *objects.Cluster, _ []*objects.NodeGroup) error {
			return d.CreateCluster(ctx, c, 0)
		}, objects.CreateInProgress, objects.CreateInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			d := simulated.New(simulated.Options{Delay: time.Minute, Now: clk.now})
			c, ngs := newCluster(tc.labels)
			for _, ng := range ngs {
				ng.Status = objects.CreateComplete
			}
			if tc.status == objects.CreateInProgress {
				for _, ng := range ngs {
					ng.Status = objects.CreateInProgress
				}
			}
			c.Status = tc.status
			if err := tc.call(d, c, ngs); err != nil {
				t.Fatal(err)
			}
			clk.t = clk.t.Add(time.Minute)
			if err := d.UpdateClusterStatus(ctx, c, ngs); err != nil {
				t.Fatal(err)
			}
			if c.Status != tc.want {
				t.Fatalf("status = %s (%s), want %s", c.Status, objects.Deref(c.StatusReason), tc.want)
			}
			for _, ng := range ngs {
				if tc.wantNGs != "" && ng.Status != tc.wantNGs {
					t.Fatalf("nodegroup %s = %s, want %s", ng.Name, ng.Status, tc.wantNGs)
				}
				if tc.wantNGs == "" && (ng.Status == objects.UpdateInProgress || ng.Status == objects.CreateInProgress) {
					t.Fatalf("nodegroup %s still %s", ng.Name, ng.Status)
				}
			}
		})
	}
}

func TestUpgradeRecordsTemplateAndVersion(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	d := simulated.New(simulated.Options{Now: clk.now})
	c, ngs := newCluster(nil)
	c.Status = objects.UpdateInProgress
	ngs[0].Status = objects.UpdateInProgress
	ngs[1].Status = objects.CreateComplete
	if err := d.UpgradeCluster(ctx, c, &objects.ClusterTemplate{UUID: objects.Str("ct2"), Labels: map[string]string{"kube_tag": "v1.34.0"}}, 1, ngs[0], nil, false); err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateClusterStatus(ctx, c, ngs); err != nil {
		t.Fatal(err)
	}
	if objects.Deref(c.ClusterTemplateID) != "ct2" || objects.Deref(c.CoeVersion) != "v1.34.0" || c.Status != objects.UpdateComplete {
		t.Fatalf("template %q coe %q status %s", objects.Deref(c.ClusterTemplateID), objects.Deref(c.CoeVersion), c.Status)
	}
}

func TestSyncFailureAndMonitor(t *testing.T) {
	ctx := context.Background()
	d := simulated.New(simulated.Options{})
	c, _ := newCluster(map[string]string{"sim_fail_sync": "create,rotate_ca"})
	if err := d.CreateCluster(ctx, c, 0); err == nil {
		t.Fatal("CreateCluster: want error")
	}
	if err := d.RotateCACertificate(ctx, c); err == nil {
		t.Fatal("RotateCACertificate: want error")
	}
	if err := d.DeleteCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]string{"": objects.Healthy, "unhealthy": objects.Unhealthy, "unknown": objects.Unknown} {
		c.Labels = map[string]string{"sim_health": label}
		m, err := d.Monitor(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.PollHealth(ctx)
		if err != nil || h.Status != want {
			t.Fatalf("label %q: %v %v, want %s", label, h, err, want)
		}
	}
	c.Labels = map[string]string{"sim_health": "hang"}
	m, _ := d.Monitor(ctx, c)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.PollHealth(cctx); err == nil {
		t.Fatal("hang: want ctx error")
	}
	r, err := drivers.NewRegistry(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ForTemplate(&objects.ClusterTemplate{ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"})
	if err != nil || got != drivers.Driver(d) {
		t.Fatalf("ForTemplate = %v, %v", got, err)
	}
}

func TestZeroDelayCreateCompletesAtOnce(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1000, 0)}
	cases := []struct {
		name       string
		delay      time.Duration
		labels     map[string]string
		wantStatus string
	}{
		{"zero delay completes inside CreateCluster", 0, nil, objects.CreateComplete},
		{"zero delay with sim_fail=create fails inside CreateCluster", 0, map[string]string{"sim_fail": "create"}, objects.CreateFailed},
		{"a sim_delay label keeps the create in progress", 0, map[string]string{"sim_delay": "5s"}, objects.CreateInProgress},
		{"sim_hang keeps the create in progress", 0, map[string]string{"sim_hang": "true"}, objects.CreateInProgress},
		{"a configured delay keeps the create in progress", time.Second, nil, objects.CreateInProgress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := simulated.New(simulated.Options{Delay: tc.delay, Now: clk.now})
			c, _ := newCluster(tc.labels)
			if err := d.CreateCluster(ctx, c, 60); err != nil {
				t.Fatal(err)
			}
			if c.Status != tc.wantStatus {
				t.Fatalf("status = %s, want %s", c.Status, tc.wantStatus)
			}
			if op, _, ok := simulated.ParseStackID(c.StackID); !ok || op != simulated.OpCreate {
				t.Fatalf("stack_id = %q", objects.Deref(c.StackID))
			}
			if tc.wantStatus == objects.CreateComplete && (objects.Deref(c.APIAddress) == "" || objects.Deref(c.CoeVersion) == "") {
				t.Fatalf("api_address %q coe_version %q", objects.Deref(c.APIAddress), objects.Deref(c.CoeVersion))
			}
		})
	}
}
