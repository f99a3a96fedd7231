// Package ctl runs the built magnumctl against the Python conductor of each
// release (pyrelease.All: 15.0.1 on the host, 23.0.0 in the sid chroot), as
// magnumctl promises to work against it as against ours: its changes are
// calls where magnum-api casts, with oslo's call monitor, and its waits read
// the Python conductor's rows.
package ctl

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/test/harness"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

var bins *harness.Binaries

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bins)) }

// ctl runs magnumctl as a member of a project: the Python conductor, as
// magnum-api, makes every cluster and nodegroup a project's (without
// Keystone, magnumctl's admin context has none).
func ctl(t *testing.T, conf string, code int, args ...string) harness.CTLResult {
	t.Helper()
	r := harness.RunCTL(bins, conf, nil, append([]string{"--project-id", "p-interop", "--user-id", "u-interop"}, args...)...)
	if r.Code != code {
		t.Fatalf("magnumctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

var waitLine = regexp.MustCompile(`(?m)^\S+Z  \+[0-9hms.]+  ([A-Z_]+)`)

func statuses(out string) string {
	var s []string
	for _, m := range waitLine.FindAllStringSubmatch(out, -1) {
		s = append(s, m[1])
	}
	return strings.Join(s, " ")
}

// TestMagnumctlAgainstThePythonConductor: with the Python conductor of
// each release, a template is created, a cluster created, updated,
// resized and deleted with --wait (exit 0 at each operation's end), bad
// input is refused before anything is sent and the conductor's refusals
// are printed with exit 1.
func TestMagnumctlAgainstThePythonConductor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Python conductor")
	}
	for _, r := range pyrelease.All() {
		t.Run(r.Name, func(t *testing.T) {
			conf := harness.StartPythonConductor(t, r, bins, t.TempDir())
			ctl(t, conf, 0, "template", "create", "dev", "--os-distro", "simulated", "--image", "img")
			res := ctl(t, conf, 0, "cluster", "create", "demo", "--cluster-template", "dev", "--wait")
			if got := statuses(res.Stdout); !strings.HasSuffix(got, "CREATE_COMPLETE") {
				t.Fatalf("create --wait printed %q", res.Stdout)
			}
			res = ctl(t, conf, 2, "cluster", "create", "demo", "--cluster-template", "dev")
			if !strings.Contains(res.Stderr, "a cluster named demo already exists") {
				t.Fatalf("stderr %q", res.Stderr)
			}
			res = ctl(t, conf, 1, "cluster", "create", "other", "--cluster-template", "nosuch")
			if !strings.Contains(res.Stderr, "ClusterTemplateNotFound") {
				t.Fatalf("stderr %q", res.Stderr)
			}
			res = ctl(t, conf, 0, "cluster", "update", "demo", "--node-count", "2", "--wait")
			if got := statuses(res.Stdout); !strings.HasSuffix(got, "UPDATE_COMPLETE") {
				t.Fatalf("update --wait printed %q", res.Stdout)
			}
			res = ctl(t, conf, 0, "cluster", "resize", "demo", "3", "--wait")
			if got := statuses(res.Stdout); !strings.HasSuffix(got, "UPDATE_COMPLETE") {
				t.Fatalf("resize --wait printed %q", res.Stdout)
			}
			if out := ctl(t, conf, 0, "nodegroup", "list", "demo").Stdout; !regexp.MustCompile(`default-worker\s+worker\s+true\s+3\s`).MatchString(out) {
				t.Fatalf("nodegroups after the resize:\n%s", out)
			}
			res = ctl(t, conf, 0, "cluster", "delete", "demo", "--wait")
			if got := statuses(res.Stdout); !strings.HasSuffix(got, "DELETED") {
				t.Fatalf("delete --wait printed %q", res.Stdout)
			}
		})
	}
}
