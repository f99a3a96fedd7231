package deb_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/packaging/deb"
	"github.com/openstack/magnum-conductor/packaging/internal/debroot"
)

// TestDebianChroot installs Debian bookworm's magnum-conductor and ours in
// a throw-away chroot and checks, at each step an operator takes, which
// conductor Debian's service runs:
//
//   - ours installed over Debian's: the init script's command line runs
//     ours, the running service is restarted on it, systemd's ExecStart runs
//     it (with our drop-in, which systemd-analyze accepts), and SIGTERM
//     stops it cleanly;
//   - python3-magnum reinstalled (as an upgrade would) while ours is
//     installed: ours stays, the Python file goes to the diverted name;
//   - ours upgraded and reinstalled: still ours, the service restarted;
//   - magnum-db-manage-go installed and removed: the Python
//     magnum-db-manage is replaced only while it is installed;
//   - ours removed, and purged: python3-magnum's files are back intact, the
//     service runs the Python conductor again, no diversion is left;
//   - ours installed before Debian's magnum-conductor: the Python files land
//     at the diverted names, the service runs ours;
//   - under systemd (simulated: none runs here), the scripts reload the
//     units and try-restart the service.
//
// The conductors talk to the shared RabbitMQ (an exchange and topic of the
// test's own) and MariaDB (a database of its own).
func TestDebianChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the chroot test needs root (debootstrap, chroot, mounts): run `make package-test` as root")
	}
	for _, tool := range []string{"debootstrap", "unshare", "chroot", "tar", "mysql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (`make services` installs what the packaging tests need): %v", tool, err)
		}
	}
	ctx := context.Background()
	b := built[0]
	base, err := debroot.Base(ctx, debroot.Options{CacheDir: debroot.CacheDir(), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := debroot.Unpack(ctx, base, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unpacked %s in %s", base, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})

	id := fmt.Sprintf("pkgtest_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	mysql(t, "CREATE DATABASE "+id)
	t.Cleanup(func() { mysql(t, "DROP DATABASE IF EXISTS "+id) })
	conf := fmt.Sprintf(`[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:5672/
control_exchange = %[1]s
host = %[2]s
[conductor]
topic = %[1]s
[database]
connection = mysql+pymysql://root@127.0.0.1:3306/%[1]s
`, id, strings.ReplaceAll(id, "_", "-"))
	hostConf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(hostConf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	upgradeVersion := b.Version
	upgradeVersion.Go += "+upgrade"
	// Uncompressed: only the maintainer scripts' handling of an upgrade is
	// tested with it (built[0] holds the packages as shipped).
	upgrade, err := buildDebs(b.Built, upgradeVersion, t.TempDir(), "none")
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"ours.deb": b.debs[deb.ConductorPackage],
		"ours-upgrade.deb": upgrade[deb.ConductorPackage], "db-manage.deb": b.debs[deb.DBManagePackage],
		"db-manage-upgrade.deb": upgrade[deb.DBManagePackage]} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteFile("srv/debs/"+name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ourConductor, err := os.ReadFile(b.Binaries["magnum-conductor"])
	if err != nil {
		t.Fatal(err)
	}
	c := &chroot{t: t, r: r, hostConf: hostConf, ctl: b.Binaries["magnumctl"], ours: md5hex(ourConductor),
		ourVersion: "magnum-conductor version " + b.Version.Linked()}

	steps := []struct {
		name string
		run  func()
	}{
		{"Debian's magnum-conductor runs the Python conductor", func() {
			c.sh("apt-get install -y -q magnum-conductor")
			if err := r.WriteFile("etc/magnum/magnum.conf", []byte(conf), 0o640); err != nil {
				t.Fatal(err)
			}
			c.sh("chgrp magnum /etc/magnum/magnum.conf")
			if v := c.serviceVersion(); v != "15.0.1" {
				t.Fatalf("the service's command says %q, want Magnum's 15.0.1", v)
			}
			c.checkPython("magnum-conductor")
			// Magnum 15.0.1's schema, by its own tool, then started by
			// the init script as Debian starts it.
			c.sh("su -s /bin/sh -c 'magnum-db-manage --config-file /etc/magnum/magnum.conf upgrade' magnum")
			c.allowServices(true)
			c.sh("/etc/init.d/magnum-conductor start")
			c.waitPython()
		}},
		{"ours installed: the service is restarted on ours", func() {
			// The schema head ours needs, by ours (the host's copy of the
			// binary the package holds), as README.Debian says to.
			out, err := exec.Command(b.Binaries["magnum-db-manage"], "--config-file", hostConf, "upgrade").CombinedOutput()
			if err != nil {
				t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
			}
			old := c.pid()
			c.sh("dpkg -i /srv/debs/ours.deb")
			c.checkOurs()
			if pid := c.waitOurs(); pid == old {
				t.Fatalf("the service was not restarted (pid %d)", pid)
			}
			// The running process's command line is the init script's.
			args := c.showArgs()
			if got := c.cmdline(c.pid()); strings.Join(got, " ") != strings.Join(args, " ") {
				t.Errorf("the service runs %q, the init script says %q", got, args)
			}
		}},
		{"systemd: our drop-in is valid and ExecStart runs ours", func() {
			c.sh("/etc/init.d/magnum-conductor stop")
			if out := c.sh("systemd-analyze verify --man=no magnum-conductor.service 2>&1"); strings.TrimSpace(out) != "" {
				t.Errorf("systemd-analyze verify: %s", out)
			}
			unit := c.unit()
			if unit["ExecStart"] != "/etc/init.d/magnum-conductor systemd-start" || unit["User"] != "magnum" ||
				unit["TimeoutStopSec"] != "60" || unit["ExecReload"] != "/bin/kill -HUP $MAINPID" {
				t.Fatalf("unit with drop-in: %v", unit)
			}
			// As systemd runs it: ExecStart as User:Group from the home
			// directory (WorkingDirectory=~); SIGTERM stops it.
			cmd := r.Command(ctx, unit["User"]+":"+unit["Group"], "cd /var/lib/magnum && exec "+unit["ExecStart"])
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			c.waitPing(done)
			if !c.isOurs(cmd.Process.Pid) {
				t.Fatalf("ExecStart runs %v, not ours", c.cmdline(cmd.Process.Pid))
			}
			stopped := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("after SIGTERM: %v\n%s", err, out.Bytes())
				}
			case <-time.After(60 * time.Second): // TimeoutStopSec
				t.Fatalf("still running 60 s after SIGTERM\n%s", out.Bytes())
			}
			t.Logf("stopped %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
			if log := c.sh("cat /var/log/magnum/magnum-conductor.log"); !strings.Contains(log, "magnum.conductor") {
				t.Errorf("no oslo.log line of ours in /var/log/magnum/magnum-conductor.log:\n%s", log)
			}
		}},
		{"python3-magnum reinstalled: ours stays", func() {
			c.sh("apt-get install -y -q --reinstall python3-magnum")
			c.checkOurs()
		}},
		{"ours upgraded and reinstalled: still ours, restarted", func() {
			c.sh("/etc/init.d/magnum-conductor start")
			first := c.waitOurs()
			out := c.sh("dpkg -i /srv/debs/ours-upgrade.deb; dpkg-query -W -f '${Version}' " + deb.ConductorPackage)
			if !strings.HasSuffix(out, upgradeVersion.Debian()) {
				t.Fatalf("after the upgrade dpkg says %q, want %s", out, upgradeVersion.Debian())
			}
			c.checkOurs()
			second := c.waitOurs()
			if second == first {
				t.Errorf("the upgrade did not restart the service (pid %d)", first)
			}
			c.sh("dpkg -i /srv/debs/ours-upgrade.deb")
			c.checkOurs()
			if third := c.waitOurs(); third == second {
				t.Errorf("the reinstall did not restart the service (pid %d)", second)
			}
			// Back to the version under test: a downgrade is an upgrade to dpkg.
			c.sh("dpkg -i /srv/debs/ours.deb")
			c.checkOurs()
			if v := c.serviceVersion(); v != c.ourVersion {
				t.Errorf("the service's command says %q, want %q", v, c.ourVersion)
			}
		}},
		{"magnum-db-manage-go takes magnum-db-manage only while installed", func() {
			c.checkPython("magnum-db-manage")
			if out := c.sh("magnum-db-manage-go --config-file /etc/magnum/magnum.conf version"); !strings.Contains(out, "b3e1cf4a2d5e") {
				t.Errorf("magnum-db-manage-go version: %q", out)
			}
			c.sh("dpkg -i /srv/debs/db-manage.deb")
			if out := c.sh("readlink -f /usr/bin/magnum-db-manage; magnum-db-manage --config-file /etc/magnum/magnum.conf version"); !strings.Contains(out, "/usr/bin/magnum-db-manage-go") || !strings.Contains(out, "b3e1cf4a2d5e") {
				t.Errorf("with magnum-db-manage-go installed, magnum-db-manage is not ours: %q", out)
			}
			if md5hex(c.read("usr/bin/magnum-db-manage.python")) != c.packageMD5("python3-magnum", "usr/bin/magnum-db-manage") {
				t.Error("python3-magnum's magnum-db-manage is not at /usr/bin/magnum-db-manage.python")
			}
			// A magnum-db-manage-go of another version than ours is refused.
			if out, err := c.r.Run(context.Background(), "dpkg -i /srv/debs/db-manage-upgrade.deb"); err == nil ||
				!strings.Contains(out, "dependency problems") {
				t.Errorf("magnum-db-manage-go of another version than magnum-conductor-go: %v\n%s", err, out)
			}
			c.sh("dpkg -r " + deb.DBManagePackage)
			c.checkPython("magnum-db-manage")
			c.noDiversion("/usr/bin/magnum-db-manage")
		}},
		{"ours removed: the service is restarted on the Python conductor", func() {
			old := c.waitOurs()
			c.sh("dpkg -r " + deb.ConductorPackage)
			c.checkPython("magnum-conductor")
			c.noDiversion("/usr/bin/magnum-conductor")
			if c.exists("lib/systemd/system/magnum-conductor.service.d/magnum-conductor-go.conf") {
				t.Error("our drop-in is left")
			}
			if v := c.serviceVersion(); v != "15.0.1" {
				t.Errorf("the service's command says %q, want Magnum's 15.0.1", v)
			}
			if pid := c.waitPython(); pid == old {
				t.Errorf("the service was not restarted (pid %d)", pid)
			}
			c.sh("/etc/init.d/magnum-conductor stop")
			c.sh("dpkg --purge " + deb.ConductorPackage)
		}},
		{"ours purged straight from installed: nothing left", func() {
			c.allowServices(false)
			c.sh("dpkg -i /srv/debs/ours.deb")
			c.checkOurs()
			c.sh("dpkg --purge " + deb.ConductorPackage)
			c.checkPython("magnum-conductor")
			c.noDiversion("/usr/bin/magnum-conductor")
			if out := c.sh("dpkg-query -W -f '${db:Status-Status}' " + deb.ConductorPackage + " 2>&1 || true"); strings.Contains(out, "installed") && !strings.Contains(out, "not-installed") {
				t.Errorf("after purge dpkg says %q", out)
			}
			for _, p := range []string{"usr/share/doc/magnum-conductor-go", "usr/bin/magnumctl", "usr/bin/magnum-db-manage-go",
				"lib/systemd/system/magnum-conductor.service.d", "usr/bin/magnum-conductor.python"} {
				if c.exists(p) {
					t.Errorf("/%s is left after purge", p)
				}
			}
		}},
		{"ours installed before Debian's magnum-conductor", func() {
			c.sh("apt-get purge -y -q magnum-conductor magnum-common python3-magnum")
			if c.exists("usr/bin/magnum-conductor") {
				t.Fatal("/usr/bin/magnum-conductor is left after purging Debian's packages")
			}
			c.sh("dpkg -i /srv/debs/ours.deb")
			c.sh("apt-get install -y -q magnum-conductor")
			c.checkOurs()
			if v := c.serviceVersion(); v != c.ourVersion {
				t.Errorf("the service's command says %q, want %q", v, c.ourVersion)
			}
			c.sh("dpkg -r " + deb.ConductorPackage)
			c.checkPython("magnum-conductor")
			c.noDiversion("/usr/bin/magnum-conductor")
		}},
		{"under systemd: our scripts reload units and try-restart the service", func() {
			// No systemd runs in the chroot: recording stand-ins for
			// systemctl and deb-systemd-invoke, first in PATH, show what
			// the scripts ask of it when /run/systemd/system says it runs.
			c.sh(`mkdir -p /run/systemd/system
for t in systemctl deb-systemd-invoke; do
	printf '#!/bin/sh\necho "%s $*" >> /srv/systemd-calls\n' $t > /usr/local/bin/$t
	chmod 755 /usr/local/bin/$t
done`)
			// (The init script, too, turns to systemctl then: checkInstalled
			// does not run it.)
			c.sh("dpkg -i /srv/debs/ours.deb")
			c.checkInstalled()
			c.sh("dpkg -r " + deb.ConductorPackage)
			c.checkPython("magnum-conductor")
			calls := strings.TrimSpace(c.sh("cat /srv/systemd-calls; rm -r /srv/systemd-calls /run/systemd/system /usr/local/bin/systemctl /usr/local/bin/deb-systemd-invoke"))
			want := strings.Repeat("systemctl --system daemon-reload\ndeb-systemd-invoke try-restart magnum-conductor.service\n", 2)
			if calls != strings.TrimSpace(want) {
				t.Errorf("install and remove under systemd called:\n%s\nwant:\n%s", calls, want)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) {
			c.t = t
			s.run()
		}) {
			t.Logf("conductor log:\n%s", c.logTail())
			return
		}
	}
}

// chroot holds the helpers of TestDebianChroot.
type chroot struct {
	t          *testing.T
	r          *debroot.Root
	hostConf   string // the chroot's magnum.conf, for magnumctl on the host
	ctl        string // magnumctl
	ours       string // md5 of our magnum-conductor
	ourVersion string // what ours says to --version
}

func (c *chroot) sh(script string) string {
	c.t.Helper()
	out, err := c.r.Run(context.Background(), "set -e\n"+script)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *chroot) read(p string) []byte {
	c.t.Helper()
	b, err := os.ReadFile(c.r.Path(p))
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func (c *chroot) exists(p string) bool {
	_, err := os.Lstat(c.r.Path(p))
	return err == nil
}

// allowServices lets invoke-rc.d act on magnum-conductor, or refuses all.
func (c *chroot) allowServices(allow bool) {
	c.t.Helper()
	policy := debroot.DenyServices
	if allow {
		policy = debroot.AllowConductor
	}
	if err := c.r.WriteFile("usr/sbin/policy-rc.d", []byte(policy), 0o755); err != nil {
		c.t.Fatal(err)
	}
}

// showArgs is the command line Debian's init script runs.
func (c *chroot) showArgs() []string {
	c.t.Helper()
	return strings.Fields(c.sh("/etc/init.d/magnum-conductor show-args"))
}

// serviceVersion runs the service's command line with --version.
func (c *chroot) serviceVersion() string {
	c.t.Helper()
	return strings.TrimSpace(c.sh("$(/etc/init.d/magnum-conductor show-args) --version 2>&1"))
}

// packageMD5 is the checksum dpkg recorded for a package's file.
func (c *chroot) packageMD5(pkg, path string) string {
	c.t.Helper()
	for _, line := range strings.Split(string(c.read("var/lib/dpkg/info/"+pkg+".md5sums")), "\n") {
		if sum, p, ok := strings.Cut(line, "  "); ok && p == path {
			return sum
		}
	}
	c.t.Fatalf("%s has no %s", pkg, path)
	return ""
}

// checkPython checks that /usr/bin/<name> is python3-magnum's file, and
// that nothing is at the diverted name.
func (c *chroot) checkPython(name string) {
	c.t.Helper()
	if got, want := md5hex(c.read("usr/bin/"+name)), c.packageMD5("python3-magnum", "usr/bin/"+name); got != want {
		c.t.Fatalf("/usr/bin/%s is not python3-magnum's (md5 %s, want %s)", name, got, want)
	}
	if c.exists("usr/bin/" + name + ".python") {
		c.t.Errorf("/usr/bin/%s.python is left", name)
	}
}

// checkOurs checks that /usr/bin/magnum-conductor is ours, diverted once
// by our package, python3-magnum's file (if installed) at the diverted name,
// and that the init script's command line runs ours.
func (c *chroot) checkOurs() {
	c.t.Helper()
	c.checkInstalled()
	if v := c.serviceVersion(); v != c.ourVersion {
		c.t.Errorf("the service's command says %q, want %q", v, c.ourVersion)
	}
}

// checkInstalled is checkOurs without running the service's command.
func (c *chroot) checkInstalled() {
	c.t.Helper()
	if md5hex(c.read("usr/bin/magnum-conductor")) != c.ours {
		c.t.Fatal("/usr/bin/magnum-conductor is not ours")
	}
	want := "diversion of /usr/bin/magnum-conductor to /usr/bin/magnum-conductor.python by " + deb.ConductorPackage
	if got := strings.TrimSpace(c.sh("dpkg-divert --list /usr/bin/magnum-conductor")); got != want {
		c.t.Errorf("dpkg-divert --list: %q, want %q", got, want)
	}
	if c.exists("var/lib/dpkg/info/python3-magnum.md5sums") {
		if md5hex(c.read("usr/bin/magnum-conductor.python")) != c.packageMD5("python3-magnum", "usr/bin/magnum-conductor") {
			c.t.Error("/usr/bin/magnum-conductor.python is not python3-magnum's magnum-conductor")
		}
		c.sh("dpkg --verify python3-magnum")
	}
}

func (c *chroot) noDiversion(path string) {
	c.t.Helper()
	if out := strings.TrimSpace(c.sh("dpkg-divert --list " + path)); out != "" {
		c.t.Errorf("a diversion is left: %s", out)
	}
}

// pid is the service's pid (the init script's pid file), 0 if none.
func (c *chroot) pid() int {
	c.t.Helper()
	b, err := os.ReadFile(c.r.Path("run/magnum/magnum-conductor.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		c.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		c.t.Fatalf("pid file: %v", err)
	}
	return pid
}

func (c *chroot) cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// isOurs says whether the process runs our binary of the chroot.
func (c *chroot) isOurs(pid int) bool {
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	bin, err := os.Stat(c.r.Path("usr/bin/magnum-conductor"))
	return err == nil && os.SameFile(exe, bin)
}

// isPython says whether the process is the Python conductor of the chroot.
func (c *chroot) isPython(pid int) bool {
	args := c.cmdline(pid)
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "python3") || args[1] != "/usr/bin/magnum-conductor" {
		return false
	}
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	py, err := os.Stat(c.r.Path("usr/bin/python3"))
	return err == nil && os.SameFile(exe, py)
}

// waitOurs waits until the service's process is ours and answers a ping.
func (c *chroot) waitOurs() int { return c.waitService(c.isOurs, "ours") }

// waitPython waits until the service's process is the Python conductor
// and answers a ping.
func (c *chroot) waitPython() int { return c.waitService(c.isPython, "the Python conductor") }

func (c *chroot) waitService(is func(int) bool, what string) int {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pid := c.pid()
		if pid != 0 && is(pid) && c.ping() == nil {
			return pid
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the service is not %s answering a ping after 90 s (pid %d: %q; ping: %v)",
				what, pid, c.cmdline(pid), c.ping())
		}
		time.Sleep(500 * time.Millisecond) // polling a condition, with a deadline
	}
}

// waitPing waits until a conductor answers on the test's topic, or the
// process behind done ends.
func (c *chroot) waitPing(done <-chan error) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for c.ping() != nil {
		select {
		case err := <-done:
			c.t.Fatalf("the conductor ended: %v", err)
		case <-time.After(500 * time.Millisecond): // polling, with a deadline
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no answer to a ping after 60 s: %v", c.ping())
		}
	}
}

// ping asks the test's topic for ping_conductor with our magnumctl.
func (c *chroot) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.ctl, "--config-file", c.hostConf, "--timeout", "5s", "conductor", "ping").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// unit is Debian's magnum-conductor.service with the drop-ins, as
// key=value (later wins).
func (c *chroot) unit() map[string]string {
	c.t.Helper()
	kv := map[string]string{}
	files := []string{"lib/systemd/system/magnum-conductor.service"}
	drop, _ := filepath.Glob(c.r.Path("lib/systemd/system/magnum-conductor.service.d/*.conf"))
	for _, d := range drop {
		rel, _ := filepath.Rel(c.r.Dir, d)
		files = append(files, rel)
	}
	for _, f := range files {
		for _, line := range strings.Split(string(c.read(f)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return kv
}

func (c *chroot) logTail() string {
	b, err := os.ReadFile(c.r.Path("var/log/magnum/magnum-conductor.log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func mysql(t *testing.T, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "mysql", "-uroot", "-h127.0.0.1", "-e", stmt).CombinedOutput(); err != nil {
		t.Fatalf("mysql %q: %v\n%s", stmt, err, out)
	}
}

// logWriter sends the base's build progress to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
