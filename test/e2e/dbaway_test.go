package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/harness"
)

// dbProxy forwards TCP connections to MariaDB and can take the database
// away: "refuse" closes every connection and the listener (what a stopped
// server looks like), "blackhole" keeps accepting and holding connections
// but forwards nothing (a partitioned or hung server).
type dbProxy struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	mode  string // "up", "refuse", "blackhole"
}

func newDBProxy(t *testing.T, target string) *dbProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{t: t, addr: ln.Addr().String(), target: target, mode: "up"}
	p.serve(ln)
	t.Cleanup(func() { p.set("refuse") })
	return p
}

func (p *dbProxy) serve(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			mode := p.mode
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			if mode == "blackhole" {
				continue // held open, never answered
			}
			go p.forward(c)
		}
	}()
}

func (p *dbProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// set switches the mode; every open connection is closed ("refuse") or
// frozen ("blackhole": existing connections stay open and silent).
func (p *dbProxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch mode {
	case "refuse", "blackhole":
		for _, c := range p.conns {
			if mode == "refuse" {
				_ = c.Close()
			} else if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadDeadline(time.Now()) // io.Copy stops: nothing goes through any more
			}
		}
		if mode == "refuse" {
			p.conns = nil
			if p.ln != nil {
				_ = p.ln.Close()
				p.ln = nil
			}
		}
	case "up":
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
		if p.ln == nil {
			ln, err := net.Listen("tcp", p.addr)
			if err != nil {
				p.t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
			}
			p.mode = mode
			p.serve(ln)
			return
		}
	}
	p.mode = mode
}

// TestDatabaseGoesAway: while MariaDB is unreachable (refused, then a black
// hole), calls that need it get a clear error within the RPC timeout instead
// of hanging, the conductor stays up and logs the failures, calls that do
// not need the database go on, and once the database is back everything
// written before is there and new calls succeed.
func TestDatabaseGoesAway(t *testing.T) {
	_, url := dbtest.MySQL(t)
	p := newDBProxy(t, dbtest.MySQLAddr())
	url = strings.Replace(url, dbtest.MySQLAddr(), p.addr, 1)
	dir := t.TempDir()
	// A heartbeat every 2 s: the test checks it resumes after the outages.
	conf := (&harness.Config{Database: url, Extra: "[DEFAULT]\nperiodic_interval_max = 2\n"}).Write(t, dir)
	if out, err := exec.Command(bins.DBManage, "--config-file", conf, "upgrade").CombinedOutput(); err != nil {
		t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
	}
	proc := harness.Start(t, bins, conf)
	if _, err := harness.CTL(bins, conf, "template", "create", "--name", "kept", "--os", "simulated",
		"--image", "img", "--flavor", "m1.small", "--master-flavor", "m1.medium", "--driver", "simulated"); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"refuse", "blackhole"} {
		p.set(mode)
		start := time.Now()
		out, err := harness.CTL(bins, conf, "--timeout", "90s", "template", "list")
		took := time.Since(start)
		if err == nil {
			t.Fatalf("%s: template list succeeded without a database:\n%s", mode, out)
		}
		if took > 75*time.Second {
			t.Errorf("%s: the error took %s (the caller's RPC timeout is 60 s by default)", mode, took)
		}
		t.Logf("%s: template list failed after %s: %v", mode, took.Round(time.Millisecond), err)
		if want := map[string]string{"refuse": "connection refused", "blackhole": "did not answer in time"}[mode]; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: the error does not say %q: %v", mode, want, err)
		}
		if out, err := harness.CTL(bins, conf, "--timeout", "10s", "conductor", "ping"); err != nil || !strings.Contains(out, "true") {
			t.Fatalf("%s: ping_conductor needs no database and must still answer: %v %s", mode, err, out)
		}
		p.set("up")
		recovered, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = testkit.Await(recovered, time.Second, mode+": recovery after the database came back", func() (bool, string) {
			var lerr error
			out, lerr = harness.CTL(bins, conf, "--timeout", "20s", "template", "list")
			return lerr == nil, fmt.Sprint(lerr)
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "kept") {
			t.Fatalf("%s: the template written before is gone:\n%s", mode, out)
		}
	}
	// The heartbeat (a periodic job writing magnum_service) goes on after
	// the outages: its report count keeps growing.
	first := reportCount(t, conf)
	reported, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testkit.Await(reported, time.Second, "the heartbeat reporting again after the database came back", func() (bool, string) {
		n := reportCount(t, conf)
		return n > first, fmt.Sprintf("report_count %d", n)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("heartbeat: %d reports after the outages, then more", first)

	failed := 0
	for _, line := range strings.Split(proc.Log(), "\n") {
		if strings.Contains(line, " ERROR magnum.conductor.rpc [") && strings.Contains(line, "] RPC method failed ") &&
			strings.Contains(line, "list cluster templates") {
			failed++
		}
	}
	if failed < 2 {
		t.Errorf("want an error line for each failed template list, got %d:\n%s", failed, proc.Log())
	}
}

// reportCount is this conductor's REPORTS in magnumctl service list.
func reportCount(t *testing.T, conf string) int {
	t.Helper()
	out, err := harness.CTL(bins, conf, "--timeout", "20s", "service", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[2] == "magnum-conductor" {
			n, err := strconv.Atoi(f[5])
			if err != nil {
				t.Fatalf("REPORTS %q: %v", f[5], err)
			}
			return n
		}
	}
	t.Fatalf("no magnum-conductor row in:\n%s", out)
	return 0
}
