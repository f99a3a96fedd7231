package drivertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/drivertest"
	"github.com/openstack/magnum-conductor/drivers/simulated"
)

// The suite must catch what it promises to catch: each broken driver below
// (the simulated driver with one fault) fails it, with the fault named. The
// suite runs in a child process of the test binary, since a failing suite
// fails its test.

// broken is the simulated driver with a fault.
type broken struct {
	*simulated.Driver
	fault string
	mu    sync.Mutex
	seen  map[string]bool
}

func (b *broken) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	if b.fault == "not idempotent" {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.seen[objects.Deref(req.Cluster.UUID)] {
			return drivers.Result{}, errors.New("cluster already exists")
		}
		b.seen[objects.Deref(req.Cluster.UUID)] = true
	}
	return b.Driver.CreateCluster(ctx, req)
}

func (b *broken) Observe(ctx context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	o, err := b.Driver.Observe(ctx, req)
	switch b.fault {
	case "no request":
		o.Request = nil
	case "doubled nodes":
		for u, ng := range o.NodeGroups {
			ng.NodeAddresses = append(ng.NodeAddresses, ng.NodeAddresses...)
			o.NodeGroups[u] = ng
		}
	case "no update start":
		if req.Cluster.Status == objects.UpdateInProgress {
			o.Started = time.Time{}
		}
	case "foreign nodegroup":
		o.NodeGroups["f00d0000-0000-4000-8000-000000000000"] = drivers.NodeGroupObservation{Phase: drivers.PhaseReady}
	case "always there":
		if o.Phase == drivers.PhaseGone || (o.Request != nil && !o.Request.Exists) {
			o.Phase, o.Request = drivers.PhaseReady, &drivers.BackendRequest{Exists: true, TemplateID: objects.Deref(req.Cluster.ClusterTemplateID)}
		}
	}
	return o, err
}

type brokenHarness struct {
	mu  sync.Mutex
	now time.Time
	d   *broken
}

func (h *brokenHarness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *brokenHarness) Driver() drivers.Driver { return h.d }
func (h *brokenHarness) Fixture() drivertest.Fixture {
	ct := func(uuid, tag string) *objects.ClusterTemplate {
		return &objects.ClusterTemplate{UUID: objects.Str(uuid), Coe: "kubernetes", ServerType: objects.Str("vm"),
			ClusterDistro: objects.Str("simulated"), Labels: map[string]string{"kube_tag": tag}}
	}
	return drivertest.Fixture{Template: ct("a0000000-0000-4000-8000-000000000001", "v1.33.1"),
		UpgradeTemplate: ct("a0000000-0000-4000-8000-000000000002", "v1.34.1"), Now: h.clock, Patience: 2 * time.Second}
}
func (h *brokenHarness) Progress(context.Context, *objects.Cluster) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(time.Minute)
	return nil
}
func (h *brokenHarness) Capabilities() drivertest.Capabilities {
	return drivertest.Capabilities{Lacks: map[drivertest.Capability]string{drivertest.CapNodesToRemove: "not named"}}
}
func (h *brokenHarness) InjectFailure(_ context.Context, c *objects.Cluster, op drivertest.Op) error {
	if h.d.fault != "ignores failures" {
		c.Labels[simulated.LabelFail] = string(op)
	}
	return nil
}

// TestBrokenDriver runs the suite on the broken driver named by
// DRIVERTEST_FAULT (in the child process).
func TestBrokenDriver(t *testing.T) {
	fault := os.Getenv("DRIVERTEST_FAULT")
	if fault == "" {
		t.Log("runs in the child processes of TestSuiteCatchesBrokenDrivers")
		return
	}
	h := &brokenHarness{now: time.Now()}
	h.d = &broken{fault: fault, seen: map[string]bool{},
		Driver: simulated.New(simulated.Options{Delay: time.Minute, Now: h.clock})}
	drivertest.Run(t, h)
}

func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for fault, want := range map[string]string{
		"no request":        "Observation.Request not reported",
		"doubled nodes":     "addresses",
		"not idempotent":    "called again with the same request",
		"foreign nodegroup": "which the request does not hold",
		"always there":      "a cluster the back end never had",
		"ignores failures":  "want CREATE_FAILED",
		"no update start":   "an update in progress reports no Started",
	} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenDriver$", "-test.count=1")
			cmd.Env = append(os.Environ(), "DRIVERTEST_FAULT="+fault)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a driver with fault %q:\n%s", fault, out)
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("the suite failed, but does not say %q:\n%s", want, out)
			}
		})
	}
}
