package chaos

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Galera is a MariaDB Galera cluster of the test's own, from Debian's
// mariadb-server and galera-4 packages: each node a mariadbd with its own
// data directory and ports. The nodes run as nobody: a joining node takes
// the cluster's state by rsync (wsrep_sst_method = rsync), whose daemon
// drops to nobody and must be able to write the data directory.
//
// Clients reach it through Proxy, which forwards each new connection to the
// first node that is up and accepts it, in order, as HAProxy does for a
// Galera cluster with one writer and backups (the usual OpenStack
// deployment), its health check passing only on a synced node: a node is
// down from Kill until Start has seen it synced.
type Galera struct {
	t     testing.TB
	dir   string
	Nodes []*GaleraNode
	Proxy *Proxy
}

// GaleraNode is one mariadbd of a Galera.
type GaleraNode struct {
	g    *Galera
	i    int
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartGalera bootstraps node 1 and joins the others to it, then starts
// the proxy in front of them. Everything is killed when the test ends.
func StartGalera(t testing.TB, n int) *Galera {
	t.Helper()
	dir, err := os.MkdirTemp("", "chaos-galera-")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(dir, 0o755))
	g := &Galera{t: t, dir: dir}
	t.Cleanup(func() {
		for _, node := range g.Nodes {
			node.kill()
		}
		if t.Failed() {
			for _, node := range g.Nodes {
				if b, err := os.ReadFile(filepath.Join(node.dir, "err.log")); err == nil {
					t.Logf("galera node %d log (tail):\n%s", node.i, tail(string(b), 3000))
				}
			}
		}
		_ = os.RemoveAll(dir)
	})
	gports, istPorts, sstPorts := make([]int, n), make([]int, n), make([]int, n)
	var members []string
	for i := range n {
		gports[i], istPorts[i], sstPorts[i] = freePort(t), freePort(t), freePort(t)
		members = append(members, fmt.Sprintf("127.0.0.1:%d", gports[i]))
	}
	for i := range n {
		node := &GaleraNode{g: g, i: i + 1, Port: freePort(t), dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1))}
		must(t, os.MkdirAll(filepath.Join(node.dir, "data"), 0o755))
		cnf := fmt.Sprintf(`[mariadbd]
datadir=%[1]s/data
socket=%[1]s/sock
pid-file=%[1]s/pid
log-error=%[1]s/err.log
port=%[2]d
bind-address=127.0.0.1
user=nobody
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=2
max_connections=500
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=chaos
wsrep_cluster_address=gcomm://%[3]s
wsrep_node_name=node%[4]d
wsrep_node_address=127.0.0.1:%[5]d
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:%[5]d;ist.recv_addr=127.0.0.1:%[6]d;gcache.size=64M"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:%[7]d
`, node.dir, node.Port, strings.Join(members, ","), i+1, gports[i], istPorts[i], sstPorts[i])
		must(t, os.WriteFile(filepath.Join(node.dir, "my.cnf"), []byte(cnf), 0o644))
		g.Nodes = append(g.Nodes, node)
	}
	first := g.Nodes[0]
	if out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(first.dir, "data"),
		"--user=nobody", "--auth-root-authentication-method=normal").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	for _, node := range g.Nodes {
		must(t, exec.Command("chown", "-R", "nobody:nogroup", node.dir).Run())
	}
	first.start("--wsrep-new-cluster")
	// TCP clients come from 127.0.0.1, which does not match root@localhost
	// with every resolver.
	if out, err := first.SQL("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; " +
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION"); err != nil {
		t.Fatalf("root@127.0.0.1: %v\n%s", err, out)
	}
	for _, node := range g.Nodes[1:] {
		node.start()
	}
	var addrs []string
	for _, node := range g.Nodes {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", node.Port))
	}
	g.Proxy = StartProxy(t, addrs)
	return g
}

func (n *GaleraNode) start(args ...string) {
	t := n.g.t
	t.Helper()
	n.cmd = exec.Command("mariadbd", append([]string{"--defaults-file=" + filepath.Join(n.dir, "my.cnf")}, args...)...)
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	n.cmd.Stdout, n.cmd.Stderr = &out, &out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(n.cmd, n.done)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if state, err := n.SQL("SHOW STATUS LIKE 'wsrep_local_state_comment'"); err == nil && strings.Contains(state, "Synced") {
			return
		}
		select {
		case <-n.done:
			b, _ := os.ReadFile(filepath.Join(n.dir, "err.log"))
			t.Fatalf("galera node %d exited while starting: %s\n%s", n.i, out.String(), tail(string(b), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("galera node %d not synced after 3 minutes", n.i)
		}
		time.Sleep(200 * time.Millisecond) // polling another process's state
	}
}

// Start starts the node again (after Kill), which rejoins by IST or SST,
// and waits until it is synced; then the proxy uses it again.
func (n *GaleraNode) Start() {
	n.g.t.Helper()
	n.start()
	n.g.Proxy.setDown(n.addr(), false)
}

func (n *GaleraNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// Kill kills mariadbd with SIGKILL (kill -9) and waits for its exit.
func (n *GaleraNode) Kill() {
	n.g.t.Helper()
	n.g.Proxy.setDown(n.addr(), true)
	if !n.kill() {
		n.g.t.Fatalf("galera node %d is not running", n.i)
	}
}

func (n *GaleraNode) kill() bool {
	if n.cmd == nil || n.cmd.Process == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
	}
	_ = n.cmd.Process.Kill()
	<-n.done
	return true
}

// SQL runs statements with the mariadb client on the node's socket.
func (n *GaleraNode) SQL(stmts string) (string, error) {
	out, err := exec.Command("mariadb", "-uroot", "-S", filepath.Join(n.dir, "sock"), "-N", "-e", stmts).CombinedOutput()
	return string(out), err
}

// URL is a [database]/connection for database name through the proxy.
func (g *Galera) URL(name string) string {
	return "mysql+pymysql://root@" + g.Proxy.Addr + "/" + name + "?charset=utf8"
}

// Proxy forwards TCP connections to the first of its backends that accepts
// them, as HAProxy in front of a Galera cluster (one writer, the others as
// backups). A connection stays with its backend until either side closes.
type Proxy struct {
	Addr     string
	backends []string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	down  map[string]bool
	// Used counts the connections forwarded to each backend.
	used map[string]int
}

// StartProxy listens on a port of its own; it is closed when the test ends.
func StartProxy(t testing.TB, backends []string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), backends: backends, ln: ln, conns: map[net.Conn]bool{}, used: map[string]int{},
		down: map[string]bool{}}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	return p
}

func (p *Proxy) forward(c net.Conn) {
	var up net.Conn
	for _, b := range p.backends {
		p.mu.Lock()
		down := p.down[b]
		p.mu.Unlock()
		if down {
			continue
		}
		var err error
		if up, err = net.DialTimeout("tcp", b, 2*time.Second); err == nil {
			p.mu.Lock()
			p.used[b]++
			p.mu.Unlock()
			break
		}
	}
	if up == nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *Proxy) setDown(addr string, down bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.down[addr] = down
	p.mu.Unlock()
}

// Used returns how many connections went to each backend.
func (p *Proxy) Used() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.used {
		out[k] = v
	}
	return out
}

// Outage takes every backend away (new connections are closed at once)
// and cuts the open connections, as a database server that stops does;
// Restore brings them back.
func (p *Proxy) Outage() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.backends {
		p.down[b] = true
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore ends an Outage.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.backends {
		p.down[b] = false
	}
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}
