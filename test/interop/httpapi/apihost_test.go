package httpapi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/test/harness"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

// TestAPIHostPackageRegistersGoDrivers installs the package an operator
// puts on the magnum-api hosts (apihost/, built into a .deb by
// apihost/build-deb and unpacked as dpkg would) in front of magnum-api of
// each release, with our conductor behind it: a cluster template for each
// Go driver is accepted, and without the package the same requests are
// refused by magnum-api's own driver checks.
func TestAPIHostPackageRegistersGoDrivers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts magnum-api")
	}
	site := unpackAPIHostDeb(t)
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) {
			r.Require(t)
			_, dbURL := dbtest.MySQL(t)
			// No [drivers]/default_driver: 2026.2 stores the
			// alphabetically first registered driver.
			conf := (&harness.Config{Database: dbURL}).Write(t, t.TempDir())
			if out, err := exec.Command(bins.DBManage, "--config-file", conf, "upgrade").CombinedOutput(); err != nil {
				t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
			}
			harness.Start(t, bins, conf)
			with := &api{t: t, base: harness.StartPythonAPI(t, r, conf, harness.APIOptions{DriverPath: site})}
			without := &api{t: t, base: harness.StartPythonAPI(t, r, conf, harness.APIOptions{DriverPath: t.TempDir()})}
			checkAPIHostPackage(t, r, with, without)
		})
	}
}

// apiTemplate is a template body for image (whose os_distro the test's
// Glance says is its name) and, when not empty, driver.
func apiTemplate(name, image, driver string) map[string]any {
	b := map[string]any{"name": name, "image_id": image, "coe": "kubernetes", "server_type": "vm",
		"external_network_id": "public", "keypair_id": "kp", "flavor_id": "m1.small", "master_flavor_id": "m1.medium"}
	if driver != "" {
		b["driver"] = driver
	}
	return b
}

func checkAPIHostPackage(t *testing.T, r pyrelease.Release, with, without *api) {
	type tc struct{ name, image, driver, wantDriver string }
	cases := []tc{
		// By cluster type: every release.
		{"by-type-capi", "ubuntu", "", ""},
		{"by-type-simulated", "simulated", "", ""},
	}
	if r != pyrelease.Magnum15 {
		// A template names its driver from 2024.1 on; 2026.2 stores the
		// alphabetically first registered driver when it names none.
		cases = []tc{
			{"capi", "ubuntu", "k8s_capi_v1", "k8s_capi_v1"},
			{"simulated", "simulated", "simulated", "simulated"},
			{"default", "flatcar", "", "k8s_capi_v1"},
		}
	}
	for _, c := range cases {
		got := with.record("with_"+c.name, "POST", "/v1/clustertemplates", apiTemplate(c.name, c.image, c.driver))
		if got.code != 201 {
			t.Errorf("%s: template create through magnum-api %s with the package: HTTP %d %s", c.name, r.Name, got.code, got.raw)
			continue
		}
		if got.str("cluster_distro") != c.image {
			t.Errorf("%s: cluster_distro %q, want %q", c.name, got.str("cluster_distro"), c.image)
		}
		if c.wantDriver != "" && got.str("driver") != c.wantDriver {
			t.Errorf("%s: driver %q, want %q", c.name, got.str("driver"), c.wantDriver)
		}
		// The conductor stored it: magnum-api reads it back through it.
		if back := with.do("GET", "/v1/clustertemplates/"+c.name, nil); back.code != 200 {
			t.Errorf("%s: GET after create: HTTP %d %s", c.name, back.code, back.raw)
		}

		refused := without.do("POST", "/v1/clustertemplates", apiTemplate(c.name+"-without", c.image, c.driver))
		want := "Cluster type (vm, " + c.image + ", kubernetes) not supported."
		switch {
		case r != pyrelease.Magnum15 && c.driver != "":
			want = "Cluster driver (" + c.driver + ") not supported."
		case r != pyrelease.Magnum15:
			want = "Cluster type (vm, " + c.image + ", kubernetes) is not supported by any loaded cluster driver. " +
				"Loaded drivers support: none (no cluster drivers are loaded)."
		}
		if refused.code != 400 || !strings.Contains(string(refused.raw), want) {
			t.Errorf("%s: without the package, magnum-api %s should refuse with %q: HTTP %d %s",
				c.name, r.Name, want, refused.code, refused.raw)
		}
	}
	// magnum-api 2026.2 asks the driver about the master count of a new
	// cluster: the package answers as the Go drivers would.
	if r != pyrelease.Magnum15 {
		ok := with.do("POST", "/v1/clusters", map[string]any{"name": "c-ok", "cluster_template_id": "simulated",
			"master_count": 1, "node_count": 1})
		if ok.code != 202 {
			t.Errorf("cluster create with 1 master: HTTP %d %s", ok.code, ok.raw)
		}
		even := with.do("POST", "/v1/clusters", map[string]any{"name": "c-even", "cluster_template_id": "simulated",
			"master_count": 2, "node_count": 1, "master_lb_enabled": true})
		if even.code != 400 || !strings.Contains(string(even.raw), "master nodegroup size of 2 is invalid") {
			t.Errorf("cluster create with 2 masters: HTTP %d %s, want 400 MasterNGSizeInvalid", even.code, even.raw)
		}
	}
}

// unpackAPIHostDeb builds apihost's .deb and unpacks it as dpkg would
// install it; it returns the site-packages directory inside.
func unpackAPIHostDeb(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := t.TempDir()
	b, err := exec.CommandContext(ctx, "bash", harness.RepoFile(t, "apihost/build-deb"), out).CombinedOutput()
	if err != nil {
		t.Fatalf("apihost/build-deb: %v\n%s", err, b)
	}
	deb := strings.TrimSpace(string(b))
	root := t.TempDir()
	if b, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", deb, err, b)
	}
	site := filepath.Join(root, "usr/lib/python3/dist-packages")
	if _, err := os.Stat(filepath.Join(site, "magnum_conductor_go-1.0.0.dist-info", "entry_points.txt")); err != nil {
		t.Fatalf("the .deb has no entry points: %v", err)
	}
	return site
}
