package exampledriver_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/drivertest"

	"example.com/magnum-example-driver/exampledriver"
)

// harness runs the example driver through the conformance suite: its back
// end is a temporary directory, its nodes boot when the clock moves.
type harness struct {
	mu  sync.Mutex
	now time.Time
	d   *exampledriver.Driver
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) Driver() drivers.Driver { return h.d }

func (h *harness) Fixture() drivertest.Fixture {
	ct := func(uuid, tag, image string) *objects.ClusterTemplate {
		return &objects.ClusterTemplate{UUID: objects.Str(uuid), Name: objects.Str("example-" + tag), Coe: "kubernetes",
			ServerType: objects.Str("vm"), ClusterDistro: objects.Str(exampledriver.Name), Driver: objects.Str(exampledriver.Name),
			ImageID: objects.Str(image), FlavorID: objects.Str("m1.small"), MasterFlavorID: objects.Str("m1.medium"),
			Labels: map[string]string{"kube_tag": tag}}
	}
	return drivertest.Fixture{
		Template:        ct("0b6c5f3e-1d2a-4c8b-9e7f-6a5b4c3d2e1f", "v1.33.1", "img-1"),
		UpgradeTemplate: ct("5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c", "v1.34.1", "img-2"),
		NodeCount:       2,
		Now:             h.clock,
	}
}

// Progress lets the nodes boot.
func (h *harness) Progress(context.Context, *objects.Cluster) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(11 * time.Second)
	return nil
}

// Capabilities: the example driver supports the whole suite.
func (h *harness) Capabilities() drivertest.Capabilities { return drivertest.Capabilities{} }

// InjectFailure sets the example_fail label on the cluster's row.
func (h *harness) InjectFailure(_ context.Context, c *objects.Cluster, op drivertest.Op) error {
	c.Labels[exampledriver.LabelFail] = strings.Trim(c.Labels[exampledriver.LabelFail]+","+string(op), ",")
	return nil
}

// NodeNames reads the back end.
func (h *harness) NodeNames(_ context.Context, c *objects.Cluster, ng *objects.NodeGroup) ([]string, error) {
	return h.d.NodeNames(c, ng.UUID)
}

func TestConformance(t *testing.T) {
	h := &harness{now: time.Now()}
	var err error
	h.d, err = exampledriver.New(exampledriver.Options{StateDir: t.TempDir(), BootTime: 10 * time.Second}, h.clock,
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, h)
}
