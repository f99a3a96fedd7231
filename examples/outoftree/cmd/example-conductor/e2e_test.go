package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/harness"
)

// TestOwnConductorBinary builds this binary and magnumctl, starts the
// conductor with the example driver on the real RabbitMQ and an SQLite
// database, and runs a cluster through it: created, complete once its
// nodes booted, deleted.
func TestOwnConductorBinary(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), ".",
		"github.com/openstack/magnum-conductor/cmd/magnumctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bins := &harness.Binaries{Dir: dir, Conductor: filepath.Join(dir, "example-conductor"), CTL: filepath.Join(dir, "magnumctl")}
	conf := (&harness.Config{Extra: "[example_driver]\nenabled = true\nboot_time = 1\nstate_dir = " +
		filepath.Join(dir, "backend") + "\n"}).Write(t, dir)
	p := harness.Start(t, bins, conf)
	if !regexp.MustCompile(`serving RPC .*drivers="?\[example[ \]]`).MatchString(p.Log()) {
		t.Fatalf("the example driver is not the conductor's driver:\n%s", p.Log())
	}
	if _, err := harness.CTL(bins, conf, "template", "create", "--name", "ex", "--os", "example", "--image", "img",
		"--flavor", "m1.small", "--master-flavor", "m1.medium", "--driver", "example"); err != nil {
		t.Fatal(err)
	}
	out, err := harness.CTL(bins, conf, "cluster", "create", "--name", "demo", "--template", "ex", "--node-count", "2", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?s)CREATE_IN_PROGRESS.*CREATE_COMPLETE`).MatchString(out) {
		t.Fatalf("create should go CREATE_IN_PROGRESS -> CREATE_COMPLETE:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "backend")); err != nil {
		t.Fatalf("the example back end holds nothing: %v", err)
	}
	out, err = harness.CTL(bins, conf, "cluster", "delete", "demo", "--wait")
	if err != nil || !strings.Contains(out, "DELETED") {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}
