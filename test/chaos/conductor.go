package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/test/harness"
)

// Site is what the conductors of a scenario share: the broker, the
// database, the exchange and topic.
type Site struct {
	Broker   string // transport_url
	Database string // [database]/connection
	Exchange string
	Topic    string
	// Rabbit is the [oslo_messaging_rabbit] section's body.
	Rabbit string
	// Extra is appended to every magnum.conf.
	Extra string
	// SimDelay is [simulated_driver] operation_delay, seconds.
	SimDelay float64
	// Grace is shutdown_grace_period, seconds (default 10).
	Grace int
	// Heartbeat is periodic_interval_max, the heartbeat's period, seconds
	// (default 2).
	Heartbeat int
}

// Conductor is one magnum-conductor process of a scenario, which can be
// killed and started again with the same configuration.
type Conductor struct {
	t    testing.TB
	bin  string
	Host string
	Conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *logWatch
	done chan struct{}
	runs []string // the logs of earlier runs
}

// NewConductor writes the magnum.conf of conductor host in dir; Start runs
// it.
func NewConductor(t testing.TB, bins *harness.Binaries, s Site, host, dir string) *Conductor {
	t.Helper()
	grace := s.Grace
	if grace == 0 {
		grace = 10
	}
	heartbeat := s.Heartbeat
	if heartbeat == 0 {
		heartbeat = 2
	}
	conf := fmt.Sprintf(`[DEFAULT]
transport_url = %s
control_exchange = %s
host = %s
periodic_interval_max = %d
[conductor]
topic = %s
workers = 1
shutdown_grace_period = %d
release_startup_pages = false
[database]
connection = %s
max_retries = -1
retry_interval = 1
mysql_io_timeout = 5
[oslo_messaging_rabbit]
%s
[certificates]
cert_manager_type = x509keypair
[x509]
key_pool_size = 2
rsa_key_size = 2048
[oslo_messaging_notifications]
driver = noop
[simulated_driver]
enabled = true
operation_delay = %g
[kubernetes]
health_polling_interval = 0
%s
`, s.Broker, s.Exchange, host, heartbeat, s.Topic, grace, s.Database, s.Rabbit, s.SimDelay, s.Extra)
	path := filepath.Join(dir, host+".conf")
	must(t, os.WriteFile(path, []byte(conf), 0o600))
	bin := bins.Conductor
	if other := os.Getenv("CHAOS_CONDUCTOR"); other != "" {
		bin = other // another build, to measure it the same way (the one before a fix)
	}
	c := &Conductor{t: t, bin: bin, Host: host, Conf: path}
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("conductor %s log (tail):\n%s", host, tail(c.Log(), 6000))
		}
		// CHAOS_LOGS=<dir> keeps every conductor's whole log.
		if logs := os.Getenv("CHAOS_LOGS"); logs != "" {
			_ = os.WriteFile(filepath.Join(logs, host+".log"), []byte(c.AllLogs()), 0o644)
		}
	})
	return c
}

// Start runs the conductor and waits until it serves RPC.
func (c *Conductor) Start() {
	c.t.Helper()
	c.mu.Lock()
	if c.log != nil {
		c.runs = append(c.runs, c.log.String())
	}
	c.log = newLogWatch()
	c.cmd = exec.Command(c.bin, "--config-file", c.Conf, "--log-format", "text")
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		c.mu.Unlock()
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	c.done = done
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(done) }(c.cmd)
	log := c.log
	c.mu.Unlock()
	if !log.waitFor(2*time.Minute, func(s string) bool { return strings.Contains(s, "serving RPC") }, done) {
		c.t.Fatalf("conductor %s did not serve RPC:\n%s", c.Host, tail(log.String(), 4000))
	}
}

// Pid is the running process's id.
func (c *Conductor) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd.Process.Pid
}

// Kill kills the process with SIGKILL (kill -9), if it runs.
func (c *Conductor) Kill() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Kill()
	<-done
}

// Stop sends SIGTERM and returns how long the process took to exit (it is
// killed after limit).
func (c *Conductor) Stop(limit time.Duration) time.Duration {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
	}
	return time.Since(start)
}

// Log is what the current run logged; AllLogs adds the earlier runs.
func (c *Conductor) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log == nil {
		return ""
	}
	return c.log.String()
}

// AllLogs is what every run logged.
func (c *Conductor) AllLogs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.Join(c.runs, "\n")
	if c.log != nil {
		s += "\n" + c.log.String()
	}
	return s
}

// WaitLog waits until the current run's log satisfies ok.
func (c *Conductor) WaitLog(timeout time.Duration, ok func(string) bool) bool {
	c.mu.Lock()
	log, done := c.log, c.done
	c.mu.Unlock()
	return log.waitFor(timeout, ok, done)
}

// logWatch is a process's output that a test can wait on.
type logWatch struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{wrote: make(chan struct{}, 1)} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the output satisfies ok, the process exits (done),
// or timeout.
func (w *logWatch) waitFor(timeout time.Duration, ok func(string) bool, done <-chan struct{}) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for !ok(w.String()) {
		select {
		case <-w.wrote:
		case <-done:
			return ok(w.String())
		case <-t.C:
			return ok(w.String())
		}
	}
	return true
}

// Migrate brings the database of connection to the schema's head with
// magnum-db-manage, as an operator does before starting conductors.
func Migrate(t testing.TB, bins *harness.Binaries, connection, dir string) {
	t.Helper()
	conf := filepath.Join(dir, "db-manage.conf")
	must(t, os.WriteFile(conf, []byte("[database]\nconnection = "+connection+"\n"), 0o600))
	if out, err := exec.Command(bins.DBManage, "--config-file", conf, "upgrade").CombinedOutput(); err != nil {
		t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
	}
}
