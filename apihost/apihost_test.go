// Package apihost_test checks that the Python package for magnum-api hosts
// (this directory) registers what the Go conductor's drivers are: one
// magnum.drivers entry point per driver, under the driver's name, with the
// (server_type, os, coe) it provides. It asks Python's own entry-point
// loader, as magnum-api does.
package apihost_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/simulated"
)

const listEntryPoints = `
import importlib.metadata, json
out = {}
for ep in importlib.metadata.entry_points(group='magnum.drivers'):
    if ep.dist.name != 'magnum-conductor-go':
        continue
    d = ep.load()()
    out[ep.name] = {'provides': [[p['server_type'], p['os'], p['coe']] for p in d.provides],
                    'odd_ok': d.validate_master_size(3) is None and d.validate_master_resize(1) is None}
print(json.dumps(out))
`

func TestEntryPointsMatchTheGoDrivers(t *testing.T) {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/magnum/common/exception.py"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-magnum is required (make services): %v", err)
		}
		t.Skipf("python3-magnum is not installed (make services): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", listEntryPoints)
	cmd.Env = append(os.Environ(), "PYTHONPATH=.")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got map[string]struct {
		Provides [][3]string `json:"provides"`
		OddOK    bool        `json:"odd_ok"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	keys := func(ks []drivers.Key) [][3]string {
		var out [][3]string
		for _, k := range ks {
			out = append(out, [3]string{k.ServerType, k.OS, k.COE})
		}
		return out
	}
	sim := simulated.New(simulated.Options{})
	want := map[string][][3]string{
		sim.Name(): keys(sim.Provides()),
		// The Cluster API driver's default [capi] distros (capi.Options).
		capi.DriverName: {{"vm", "ubuntu", "kubernetes"}, {"vm", "flatcar", "kubernetes"}, {"vm", "rockylinux", "kubernetes"}},
	}
	if len(got) != len(want) {
		t.Errorf("entry points %v, want one per Go driver: %v", got, want)
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("no entry point for the Go driver %s", name)
		case !slices.Equal(g.Provides, w):
			t.Errorf("%s provides %v, the Go driver %v", name, g.Provides, w)
		case !g.OddOK:
			t.Errorf("%s refuses an odd master count", name)
		}
	}
}
