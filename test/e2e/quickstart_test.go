// Package e2e runs the real binaries the way the README's quick start does:
// magnum-conductor on its embedded SQLite database and the real RabbitMQ,
// driven by magnumctl.
package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/harness"
)

var bins *harness.Binaries

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bins)) }

// TestQuickStart is the README's quick start: start the conductor on the
// embedded default, create a template and a cluster on the simulated driver,
// watch it go CREATE_IN_PROGRESS -> CREATE_COMPLETE, delete it, and stop the
// conductor with SIGTERM.
func TestQuickStart(t *testing.T) {
	dir := t.TempDir()
	metrics := harness.FreePort(t)
	conf := (&harness.Config{SimDelay: 1, MetricsListen: metrics}).Write(t, dir)
	p := harness.Start(t, bins, conf)

	out, err := harness.CTL(bins, conf, "service", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`magnum-conductor\s+up`).MatchString(out) {
		t.Fatalf("service list should show this conductor up:\n%s", out)
	}

	if _, err := harness.CTL(bins, conf, "template", "create", "--name", "dev", "--os", "simulated",
		"--image", "img", "--flavor", "m1.small", "--master-flavor", "m1.medium", "--driver", "simulated"); err != nil {
		t.Fatal(err)
	}
	out, err = harness.CTL(bins, conf, "cluster", "create", "--name", "demo", "--template", "dev",
		"--node-count", "2", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?s)CREATE_IN_PROGRESS.*CREATE_COMPLETE`).MatchString(out) {
		t.Fatalf("create should go CREATE_IN_PROGRESS -> CREATE_COMPLETE:\n%s", out)
	}

	out, err = harness.CTL(bins, conf, "nodegroup", "list", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`default-master\s+master\s+true\s+1`).MatchString(out) ||
		!regexp.MustCompile(`default-worker\s+worker\s+true\s+2`).MatchString(out) {
		t.Fatalf("default nodegroups missing or wrong:\n%s", out)
	}
	out, err = harness.CTL(bins, conf, "ca", "show", "demo")
	if err != nil || !strings.HasPrefix(out, "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("ca show: %v\n%s", err, out)
	}

	out, err = harness.CTL(bins, conf, "cluster", "delete", "demo", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "DELETED") {
		t.Fatalf("delete should end with the cluster gone:\n%s", out)
	}
	if _, err := harness.CTL(bins, conf, "cluster", "show", "demo"); err == nil ||
		!strings.Contains(err.Error(), "ClusterNotFound") {
		t.Fatalf("the deleted cluster should be ClusterNotFound, got %v", err)
	}

	// Prometheus: RPC counts per method and outcome, periodic cycles; and
	// the health check.
	body := httpGet(t, "http://"+metrics+"/metrics")
	for _, want := range []string{
		`magnum_conductor_rpc_requests_total{method="ping_conductor",outcome="ok"}`,
		`magnum_conductor_rpc_requests_total{method="object_class_action",outcome="ClusterNotFound"}`,
		`magnum_conductor_rpc_duration_seconds_bucket{method="cluster_create"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if got := httpGet(t, "http://"+metrics+"/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q", got)
	}

	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if !strings.Contains(p.Log(), "magnum-conductor stopped") {
		t.Fatalf("no clean stop in the log:\n%s", p.Log())
	}
}

// TestStartRefusesBadConfig: a bad value stops the process before it
// connects anywhere, with one line naming the file, group, option and value.
func TestStartRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(conf, []byte("[conductor]\nshutdown_grace_period = soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bins.Conductor, "--config-file", conf).CombinedOutput()
	if err == nil {
		t.Fatalf("the conductor started with a bad value:\n%s", out)
	}
	for _, want := range []string{"bad.conf", "conductor", "shutdown_grace_period", "soon"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error should name %q:\n%s", want, out)
		}
	}

	out, err = exec.Command(bins.Conductor, "--config-file", filepath.Join(dir, "missing.conf")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing.conf") {
		t.Fatalf("a missing file should be a clear error, got %v:\n%s", err, out)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}
