package oci_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openstack/magnum-conductor/packaging/oci"
)

// podman runs podman on a storage of its own (vfs, under the test's
// temporary directory), with runc: on this machine's hybrid cgroup layout
// (cgroup v1 controllers beside an empty v2 hierarchy) crun refuses to
// start any container ("cgroups in hybrid mode not supported"), and
// podman's default rlimits exceed what this container may set, so each run
// gets ours (see runLimits).
type podman struct {
	t    *testing.T
	args []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is missing (`make services` installs it): %v", err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("runc is missing (`make services` installs it): %v", err)
	}
	dir, err := os.MkdirTemp("", "podman-test-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t, args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", "runc"}}
	t.Cleanup(func() {
		for _, args := range [][]string{{"rm", "--all", "--force", "--time", "0"}, {"system", "reset", "--force"}} {
			if _, err := p.run(args...); err != nil {
				t.Logf("cleanup: %v", err) // the directory is removed below all the same
			}
		}
		unmountUnder(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return p
}

// run runs podman and returns its output and error (no failure).
func (p *podman) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(append([]string{}, p.args...), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), nil
}

// logs is a container's output, stdout and stderr (where the conductor
// logs without a log file).
func (p *podman) logs(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "podman", append(append([]string{}, p.args...), "logs", name)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("podman logs %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// must runs podman and fails the test on error.
func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// runLimits are --ulimit flags that podman may set here: at most 65536
// open files and 4096 processes, and never above this process's own hard
// limits (podman's defaults, 1048576 files, are refused in this container;
// so is a process limit at our own maximum).
func runLimits(t *testing.T) []string {
	t.Helper()
	var flags []string
	for _, r := range []struct {
		name string
		res  int
		max  uint64
	}{{"nofile", unix.RLIMIT_NOFILE, 65536}, {"nproc", unix.RLIMIT_NPROC, 4096}} {
		var l unix.Rlimit
		if err := unix.Getrlimit(r.res, &l); err != nil {
			t.Fatal(err)
		}
		v := min(l.Max, r.max)
		flags = append(flags, "--ulimit", fmt.Sprintf("%s=%d:%d", r.name, v, v))
	}
	return flags
}

// unmountUnder unmounts what podman may have left mounted below dir.
func unmountUnder(t *testing.T, dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	var points []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := unix.Unmount(points[i], unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", points[i], err)
		}
	}
}

// TestImageRunsUnderPodman loads the image into podman and runs it as a
// Kolla deployment would: the configuration mounted at
// /etc/magnum/magnum.conf from a file that is 0660 root:root (as
// kolla-ansible writes /etc/kolla/magnum-conductor/magnum.conf), the
// schema upgraded by the image's magnum-db-manage, the conductor started by
// the image's own command, answering the health check docs/install.md gives, as
// uid 42428 in groups root and kolla, and stopping with exit status 0 on SIGTERM.
func TestImageRunsUnderPodman(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the podman test runs podman as root: run `make package-test` as root")
	}
	b := built[0]
	p := newPodman(t)
	ref := "localhost/" + oci.Reference(b.Version)
	if out := p.must("load", "--input", built[0].tarball); !strings.Contains(out, "Loaded image: "+ref) {
		t.Fatalf("podman load: %q, want %s", out, ref)
	}

	id := fmt.Sprintf("pkgimg_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	host := strings.ReplaceAll(id, "_", "-")
	mysql(t, "CREATE DATABASE "+id)
	t.Cleanup(func() { mysql(t, "DROP DATABASE IF EXISTS "+id) })
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:5672/
control_exchange = %[1]s
host = %[2]s
[conductor]
topic = %[1]s
[database]
connection = mysql+pymysql://root@127.0.0.1:3306/%[1]s
`, id, host)), 0o660); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o660); err != nil {
		t.Fatal(err)
	}
	mount := conf + ":" + oci.ConfigFile + ":ro"
	limits := runLimits(t)

	runArgs := append([]string{"run", "--rm", "--network", "host", "--volume", mount}, limits...)
	p.must(append(runArgs, ref, "magnum-db-manage", "--config-file", oci.ConfigFile, "upgrade")...)

	name := "conductor-" + host
	p.must(append(append([]string{"run", "--detach", "--name", name, "--network", "host", "--volume", mount}, limits...), ref)...)
	// The health check docs/install.md gives Kolla: a conductor answers on the
	// topic (the only one here is this container's).
	health := []string{"exec", name, "magnumctl", "--config-file", oci.ConfigFile, "--timeout", "5s", "conductor", "ping"}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := p.run(health...)
		if err == nil {
			break
		}
		if state, _ := p.run("inspect", "--format", "{{.State.Status}}", name); strings.TrimSpace(state) != "running" {
			t.Fatalf("the container is %s:\n%s", strings.TrimSpace(state), p.logs(name))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer to a ping after 90 s: %v\n%s", err, p.logs(name))
		}
		time.Sleep(time.Second) // polling a condition, with a deadline
	}

	pid, err := strconv.Atoi(p.must("inspect", "--format", "{{.State.Pid}}", name))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nUid:\t42428\t42428\t42428\t42428\n", "\nGid:\t42428\t42428\t42428\t42428\n"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("the conductor's /proc/%d/status lacks %q:\n%s", pid, strings.TrimSpace(want), status)
		}
	}
	for _, line := range strings.Split(string(status), "\n") {
		if groups := strings.Fields(strings.TrimPrefix(line, "Groups:")); strings.HasPrefix(line, "Groups:") &&
			(!slices.Contains(groups, "0") || !slices.Contains(groups, "42400")) {
			t.Errorf("the conductor is not in groups root and kolla: %s", line)
		}
	}

	stopped := time.Now()
	p.must("stop", "--time", "60", name)
	t.Logf("stopped in %s", time.Since(stopped).Round(time.Millisecond))
	if code := p.must("inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Errorf("exit code %s after SIGTERM:\n%s", code, p.logs(name))
	}
	logs := p.logs(name)
	if !strings.Contains(logs, "magnum.conductor") {
		t.Errorf("no oslo.log line in the container's log:\n%s", logs)
	}
}

func mysql(t *testing.T, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "mysql", "-uroot", "-h127.0.0.1", "-e", stmt).CombinedOutput(); err != nil {
		t.Fatalf("mysql %q: %v\n%s", stmt, err, out)
	}
}
