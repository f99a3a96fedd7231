// Package harness runs the real binaries for end-to-end and interoperability
// tests: it builds them, writes a magnum.conf with names of its own (control
// exchange, topic, database), starts magnum-conductor as a process and stops
// it with SIGTERM.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// Broker is the RabbitMQ every test uses.
const Broker = "rabbit://guest:guest@127.0.0.1:5672/"

// Binaries are the built commands.
type Binaries struct {
	Dir       string
	Conductor string
	CTL       string
	DBManage  string
}

// Build compiles the three commands into dir.
func Build(dir string) (*Binaries, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"./cmd/magnum-conductor", "./cmd/magnumctl", "./cmd/magnum-db-manage")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return &Binaries{
		Dir:       dir,
		Conductor: filepath.Join(dir, "magnum-conductor"),
		CTL:       filepath.Join(dir, "magnumctl"),
		DBManage:  filepath.Join(dir, "magnum-db-manage"),
	}, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// Config describes one conductor's magnum.conf.
type Config struct {
	// Database is [database]/connection; empty gives a fresh SQLite file.
	Database string
	// Exchange and Topic default to names unique to the test.
	Exchange, Topic string
	// Host is [DEFAULT]/host; default unique.
	Host string
	// SimDelay is [simulated_driver]/operation_delay in seconds.
	SimDelay float64
	// NotificationTopic, when set, enables messagingv2 notifications on it.
	NotificationTopic string
	// MetricsListen is [conductor]/metrics_listen ("" keeps it off).
	MetricsListen string
	// Extra is appended verbatim.
	Extra string
}

// Write fills the defaults and writes the file into dir.
func (c *Config) Write(t testing.TB, dir string) string {
	t.Helper()
	if c.Exchange == "" {
		c.Exchange = dbtest.RandomName("e2e_x")
	}
	if c.Topic == "" {
		c.Topic = dbtest.RandomName("e2e_topic")
	}
	if c.Host == "" {
		c.Host = strings.ReplaceAll(dbtest.RandomName("e2e-host-"), "_", "-")
	}
	if c.Database == "" {
		c.Database = "sqlite:///" + filepath.Join(dir, "magnum.sqlite")
	}
	notif := "driver = noop"
	if c.NotificationTopic != "" {
		notif = "driver = messagingv2\ntopics = " + c.NotificationTopic
	}
	body := fmt.Sprintf(`[DEFAULT]
transport_url = %s
control_exchange = %s
host = %s
[conductor]
topic = %s
shutdown_grace_period = 5
metrics_listen = %s
[database]
connection = %s
[certificates]
cert_manager_type = x509keypair
[x509]
key_pool_size = 2
[oslo_messaging_notifications]
%s
[simulated_driver]
enabled = true
operation_delay = %g
[kubernetes]
health_polling_interval = 0
%s
`, Broker, c.Exchange, c.Host, c.Topic, c.MetricsListen, c.Database, notif, c.SimDelay, c.Extra)
	path := filepath.Join(dir, "magnum.conf")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Process is a running magnum-conductor.
type Process struct {
	cmd  *exec.Cmd
	log  *SyncBuffer
	done chan error
	// ExitErr is set once the process has exited.
	ExitErr error
}

// SyncBuffer is testkit's, under the name the end-to-end tests know.
type SyncBuffer = testkit.SyncBuffer

// Start runs the conductor with confPath and waits until it answers
// ping_conductor (through magnumctl). The process is stopped at cleanup.
func Start(t testing.TB, bins *Binaries, confPath string) *Process {
	t.Helper()
	return StartArgs(t, bins, confPath)
}

// StartArgs is Start with further command-line arguments.
func StartArgs(t testing.TB, bins *Binaries, confPath string, args ...string) *Process {
	t.Helper()
	testkit.NeedsService(t, "RabbitMQ (the conductor it starts connects to it)")
	p := &Process{log: &SyncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bins.Conductor, append([]string{"--config-file", confPath}, args...)...)
	// Killed with the test process if it dies without cleaning up.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.Stop(10 * time.Second)
		}
		if t.Failed() {
			t.Logf("conductor log:\n%s", p.Log())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.ExitErr = err
			t.Fatalf("magnum-conductor exited during start-up: %v\n%s", err, p.Log())
		default:
		}
		out, err := CTL(bins, confPath, "--timeout", "3s", "conductor", "ping")
		if err == nil && strings.Contains(out, "true") {
			return p
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("magnum-conductor did not answer ping_conductor within 60 s\n%s", p.Log())
	return nil
}

// Log returns what the process has logged so far.
func (p *Process) Log() string { return p.log.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits up to timeout for the process to exit.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.ExitErr = err
		return err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done //nolint:errcheck // killed: its exit status says nothing more
		return fmt.Errorf("magnum-conductor did not exit within %s of SIGTERM", timeout)
	}
}

// CTL runs magnumctl with the config file and args, returning its stdout
// (and stderr on failure). It runs without Keystone settings (see
// RunCTL).
func CTL(bins *Binaries, confPath string, args ...string) (string, error) {
	r := RunCTL(bins, confPath, nil, args...)
	if r.Err != nil {
		return r.Stdout, fmt.Errorf("magnumctl %s: %w: %s", strings.Join(args, " "), r.Err, r.Stderr)
	}
	return r.Stdout, nil
}

// CTLResult is one run of magnumctl.
type CTLResult struct {
	// Code is the exit status (-1 when it did not exit).
	Code           int
	Stdout, Stderr string
	// Err is the run's error: nil for exit 0.
	Err error
}

// RunCTL runs magnumctl with the config file and args, in the test's
// environment without its OS_* variables (a developer's openrc must not
// send the tests to a cloud) plus env ("NAME=value"). It is bounded by two
// minutes.
func RunCTL(bins *Binaries, confPath string, env []string, args ...string) CTLResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.CTL, append([]string{"--config-file", confPath}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	return CTLResult{Code: code, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// FreePort returns a loopback address with a port nobody listens on now.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// Main is a TestMain body for packages that run the binaries: it builds
// them into a temporary directory, stores them in *bins, runs the tests and
// removes the directory. It returns the exit code for os.Exit.
func Main(m *testing.M, bins **Binaries) int {
	dir, err := os.MkdirTemp("", "magnum-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bins, err = Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
