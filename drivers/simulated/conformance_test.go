package simulated_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/drivertest"
	"github.com/openstack/magnum-conductor/drivers/simulated"
)

// harness runs the simulated driver through the conformance suite: its
// back end progresses when its clock moves, and fails on the sim_fail
// label.
type harness struct {
	mu    sync.Mutex
	now   time.Time
	delay time.Duration
	d     *simulated.Driver
}

func newHarness(delay time.Duration) *harness {
	h := &harness{now: time.Now().UTC(), delay: delay}
	h.d = simulated.New(simulated.Options{Delay: delay, Now: h.clock})
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) Driver() drivers.Driver { return h.d }

func (h *harness) Fixture() drivertest.Fixture {
	return drivertest.Fixture{
		Template: &objects.ClusterTemplate{UUID: objects.Str("3f7a2a4e-6c1b-4d0e-9f2a-1b2c3d4e5f60"), Name: objects.Str("sim"),
			Coe: "kubernetes", ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"),
			ImageID: objects.Str("img-1"), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
			Labels: map[string]string{"kube_tag": "v1.33.1"}},
		UpgradeTemplate: &objects.ClusterTemplate{UUID: objects.Str("8e1d0c9b-2a3f-4e5d-8c7b-6a5f4e3d2c1b"), Name: objects.Str("sim-next"),
			Coe: "kubernetes", ServerType: objects.Str("vm"), ClusterDistro: objects.Str("simulated"),
			ImageID: objects.Str("img-2"), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
			Labels: map[string]string{"kube_tag": "v1.34.1"}},
		NodeCount: 2,
		Now:       h.clock,
	}
}

// Progress moves the clock past the operation's delay.
func (h *harness) Progress(context.Context, *objects.Cluster) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(h.delay/2 + time.Second)
	return nil
}

func (h *harness) Capabilities() drivertest.Capabilities {
	return drivertest.Capabilities{Lacks: map[drivertest.Capability]string{
		drivertest.CapNodesToRemove: "the simulated back end does not name its nodes: it picks the ones to remove",
	}}
}

// InjectFailure sets the sim_fail label on the cluster's row.
func (h *harness) InjectFailure(_ context.Context, c *objects.Cluster, op drivertest.Op) error {
	fails := strings.Split(c.Labels[simulated.LabelFail], ",")
	c.Labels[simulated.LabelFail] = strings.Trim(strings.Join(append(fails, string(op)), ","), ",")
	return nil
}

// TestConformance: the simulated driver passes the driver conformance
// suite, with a back end that takes time and with one that finishes
// creates inside the call.
func TestConformance(t *testing.T) {
	t.Run("delay", func(t *testing.T) { drivertest.Run(t, newHarness(time.Minute)) })
	t.Run("no delay", func(t *testing.T) { drivertest.Run(t, newHarness(0)) })
}
