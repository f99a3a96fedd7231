package harness

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/test/harness/pyrelease"
)

// Python is Debian's interpreter, the one python3-magnum is installed for.
const Python = pyrelease.Python

// RepoFile is the absolute path of rel, relative to the module root.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// StartPythonConductor runs the release's magnum-conductor (through
// test/bench/python/run_conductor.py: no Keystone, the zero-delay driver)
// on a fresh MariaDB database migrated by the release's own
// magnum-db-manage, with one worker. It waits until the conductor answers
// ping_conductor and returns its magnum.conf, whose [drivers]/
// default_driver is "simulated" (magnum-api 23.0.0 stores it in templates
// that name no driver). The process group is killed at cleanup.
func StartPythonConductor(t testing.TB, r pyrelease.Release, bins *Binaries, dir string) string {
	t.Helper()
	r.Require(t)
	_, dbURL := dbtest.MySQL(t)
	conf := (&Config{Database: dbURL, Extra: "[conductor]\nworkers = 1\n" + DriversSection}).Write(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up := r.Command(ctx, "/usr/bin/magnum-db-manage", "--config-file", conf, "upgrade")
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("%s magnum-db-manage upgrade: %v\n%s", r, err, out)
	}
	scripts := r.Scripts(t)
	cmd := r.Python(context.Background(), filepath.Join(scripts, "test/bench/python/run_conductor.py"), "--config-file", conf)
	log := startGroup(t, cmd, r.String()+" conductor")
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := CTL(bins, conf, "--timeout", "5s", "conductor", "ping"); err == nil && strings.Contains(out, "true") {
			return conf
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the %s conductor did not answer ping within 90 s\n%s", r, tail(log.String(), 4000))
	return ""
}

// DriversSection is the [drivers] section of every configuration the
// harness writes for a Python peer: magnum-api 23.0.0 stores
// [drivers]/default_driver in a cluster template that names no driver (by
// default the alphabetically first registered one, k8s_capi_v1).
const DriversSection = "[drivers]\ndefault_driver = simulated\n"

// APIOptions are the optional settings of StartPythonAPI.
type APIOptions struct {
	// DriverPath is the directory put on PYTHONPATH for magnum-api's
	// magnum.drivers entry points; default the repository's apihost/ (the
	// package of the Go conductor's drivers), as the release sees it.
	DriverPath string
	// Identity, as USER:PROJECT:ROLES, is set on requests that carry no
	// identity headers (the CLI's, see run_api.py); empty: none.
	Identity string
}

// StartPythonAPI runs the release's magnum-api (through
// test/interop/python/run_api.py, which says what differs without Keystone
// and the other OpenStack services) in front of the conductor that serves
// conf's topic, with the Go conductor's driver package (apihost/) on its
// PYTHONPATH, and waits until it answers. It returns the API's base URL
// (http://127.0.0.1:PORT); the process's log is shown if the test fails.
func StartPythonAPI(t testing.TB, r pyrelease.Release, conf string, o APIOptions) string {
	t.Helper()
	r.Require(t)
	addr := FreePort(t)
	_, port, _ := strings.Cut(addr, ":")
	scripts := r.Scripts(t)
	if o.DriverPath == "" {
		o.DriverPath = filepath.Join(scripts, "apihost")
	}
	args := []string{filepath.Join(scripts, "test/interop/python/run_api.py"), "--config-file", conf, "--port", port}
	if o.Identity != "" {
		args = append(args, "--identity", o.Identity)
	}
	cmd := r.Python(context.Background(), args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+o.DriverPath)
	log := startGroup(t, cmd, r.String()+" magnum-api")
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s magnum-api did not answer GET / within 60 s\n%s", r, tail(log.String(), 4000))
	return ""
}

// startGroup starts cmd in its own process group, logging into a buffer,
// and kills the group at cleanup (with the log's tail when the test
// failed).
func startGroup(t testing.TB, cmd *exec.Cmd, what string) *SyncBuffer {
	t.Helper()
	cmd.SysProcAttr = ProcessGroup()
	log := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(func() {
		KillGroup(cmd)
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", what, tail(log.String(), 6000))
		}
	})
	return log
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
