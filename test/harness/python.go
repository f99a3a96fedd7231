package harness

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
)

// Python is Debian's interpreter, the one python3-magnum is installed for.
const Python = "/usr/bin/python3"

// RepoFile is the absolute path of rel, relative to the module root.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// StartPythonConductor runs Debian's magnum-conductor 15.0.1 (through
// test/bench/python/run_conductor.py: no Keystone trust, a zero-delay
// driver) on a fresh MariaDB database migrated by Python's own
// magnum-db-manage, with one worker. It waits until the conductor answers
// ping_conductor and returns its magnum.conf. The process group is killed
// at cleanup.
func StartPythonConductor(t testing.TB, bins *Binaries, dir string) string {
	t.Helper()
	_, dbURL := dbtest.MySQL(t)
	conf := (&Config{Database: dbURL, Extra: "[conductor]\nworkers = 1\n"}).Write(t, dir)
	up := exec.Command("/usr/bin/magnum-db-manage", "--config-file", conf, "upgrade")
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("python magnum-db-manage upgrade: %v\n%s", err, out)
	}
	cmd := exec.Command(Python, RepoFile(t, "test/bench/python/run_conductor.py"), "--config-file", conf)
	log := startGroup(t, cmd, "python conductor")
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := CTL(bins, conf, "--timeout", "5s", "conductor", "ping"); err == nil && strings.Contains(out, "true") {
			return conf
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the Python conductor did not answer ping within 90 s\n%s", tail(log.String(), 4000))
	return ""
}

// StartPythonAPI runs Debian's magnum-api 15.0.1 (through
// test/interop/python/run_api.py, which says what differs without Keystone
// and the other OpenStack services) in front of the conductor that serves
// conf's topic, and waits until it answers. It returns the API's base URL
// (http://127.0.0.1:PORT); the process's log is shown if the test fails.
func StartPythonAPI(t testing.TB, conf string) string {
	t.Helper()
	addr := FreePort(t)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(Python, RepoFile(t, "test/interop/python/run_api.py"), "--config-file", conf, "--port", port)
	log := startGroup(t, cmd, "python magnum-api")
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
	t.Fatalf("magnum-api did not answer GET / within 60 s\n%s", tail(log.String(), 4000))
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
