package chaos

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rabbitBin is where Debian's rabbitmq-server package keeps the scripts
// that run a node as the calling user (/usr/sbin's wrappers switch to the
// rabbitmq user, whose cookie and data are the shared broker's).
const rabbitBin = "/usr/lib/rabbitmq/bin"

// Rabbit is a RabbitMQ cluster of the test's own: nodes with their own node
// names, ports, data directories and Erlang cookie, on this machine's epmd.
// The shared broker (rabbit@localhost, 5672) is never touched.
type Rabbit struct {
	t     testing.TB
	dir   string
	Nodes []*RabbitNode
}

// RabbitNode is one node of a Rabbit.
type RabbitNode struct {
	r        *Rabbit
	Name     string // node name, name@localhost
	Port     int    // AMQP
	distPort int
	dir      string
}

// StartRabbit starts n nodes and clusters them (the first is the seed).
// They are killed when the test ends.
func StartRabbit(t testing.TB, n int) *Rabbit {
	t.Helper()
	dir, err := os.MkdirTemp("", "chaos-rabbit-")
	if err != nil {
		t.Fatal(err)
	}
	r := &Rabbit{t: t, dir: dir}
	t.Cleanup(func() {
		for _, node := range r.Nodes {
			node.kill()
		}
		if t.Failed() {
			for _, node := range r.Nodes {
				if b, err := os.ReadFile(filepath.Join(node.dir, "log", node.Name+".log")); err == nil {
					t.Logf("%s log (tail):\n%s", node.Name, tail(string(b), 4000))
				}
			}
		}
		_ = os.RemoveAll(dir)
	})
	home := filepath.Join(dir, "home")
	cookie := make([]byte, 16)
	_, _ = rand.Read(cookie)
	must(t, os.MkdirAll(home, 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".erlang.cookie"), []byte(strings.ToUpper(hex.EncodeToString(cookie))), 0o400))
	must(t, os.WriteFile(filepath.Join(dir, "rabbitmq-env.conf"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "advanced.config"), []byte("[].\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte(
		"loopback_users = none\nlog.console = false\nlog.file.level = info\n"+
			"cluster_partition_handling = pause_minority\n"), 0o644))
	suffix := hex.EncodeToString(cookie[:3])
	for i := range n {
		node := &RabbitNode{r: r, Name: fmt.Sprintf("chaos%d-%s@localhost", i+1, suffix), Port: freePort(t),
			distPort: freePort(t), dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1))}
		r.Nodes = append(r.Nodes, node)
		node.Start()
		if i > 0 {
			for _, args := range [][]string{{"stop_app"}, {"join_cluster", r.Nodes[0].Name}, {"start_app"}} {
				if out, err := node.Ctl(args...); err != nil {
					t.Fatalf("%s: rabbitmqctl %v: %v\n%s", node.Name, args, err, out)
				}
			}
		}
	}
	return r
}

// URL is the transport_url listing every node.
func (r *Rabbit) URL() string {
	var hosts []string
	for _, n := range r.Nodes {
		hosts = append(hosts, fmt.Sprintf("guest:guest@127.0.0.1:%d", n.Port))
	}
	return "rabbit://" + strings.Join(hosts, ",") + "/"
}

func (n *RabbitNode) env() []string {
	d := n.r.dir
	return append(os.Environ(),
		"HOME="+filepath.Join(d, "home"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(d, "rabbitmq-env.conf"),
		"RABBITMQ_NODENAME="+n.Name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.Port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(n.distPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(n.dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(d, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(d, "advanced.config"),
		"RABBITMQ_PID_FILE="+n.pidFile(),
		"ERL_EPMD_ADDRESS=127.0.0.1",
	)
}

func (n *RabbitNode) pidFile() string { return filepath.Join(n.dir, "pid") }

// Ctl runs rabbitmqctl against the node.
func (n *RabbitNode) Ctl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmqctl"), append([]string{"-n", n.Name, "-q"}, args...)...)
	cmd.Env = n.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Start starts the node (again, after Kill: with its data) and waits until
// it serves.
func (n *RabbitNode) Start() {
	t := n.r.t
	t.Helper()
	must(t, os.MkdirAll(n.dir, 0o755))
	_ = os.Remove(n.pidFile())
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmq-server"), "-detached")
	cmd.Env = n.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: rabbitmq-server -detached: %v\n%s", n.Name, err, out)
	}
	if out, err := n.Ctl("wait", n.pidFile(), "--timeout", "180"); err != nil {
		t.Fatalf("%s did not start: %v\n%s", n.Name, err, out)
	}
}

// Kill kills the node's Erlang VM with SIGKILL (kill -9) and waits until
// it is gone.
func (n *RabbitNode) Kill() {
	n.r.t.Helper()
	if !n.kill() {
		n.r.t.Fatalf("%s: no process to kill", n.Name)
	}
}

func (n *RabbitNode) kill() bool {
	b, err := os.ReadFile(n.pidFile())
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, syscall.SIGKILL) != nil {
		return false
	}
	waitGone(pid)
	return true
}

// waitGone waits until process pid has exited (a daemon: its parent is
// not this process, so there is no Wait).
func waitGone(pid int) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling another process's state
	}
}
