// Package debroot gives the packaging tests a throw-away Debian bookworm
// tree to install packages into: a base tarball, built once per machine with
// debootstrap from the Debian mirror apt uses here and kept at a fixed path
// (the cache), unpacked afresh for each test and removed after it.
//
// The base holds a minimal bookworm with every dependency of Debian's
// magnum-conductor installed, but not magnum-conductor, magnum-common and
// python3-magnum themselves: their .debs wait in apt's cache, so that a test
// installs (and reinstalls, and purges) Debian's conductor for real, in
// seconds and without the network. systemd is installed too, for
// systemd-analyze; nothing runs it. Services are refused by a policy-rc.d
// unless a test allows them.
//
// Commands run in the tree through chroot(8), inside a private mount
// namespace with its own /proc and /dev/shm, so nothing is mounted on the
// host and nothing needs unmounting: the namespace goes with the last
// process in it. The tree shares the host's network, so its programs reach
// MariaDB and RabbitMQ on 127.0.0.1.
package debroot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Suite is the Debian release of the tree.
const Suite = "bookworm"

// DefaultCacheDir is where base tarballs are kept unless
// $MAGNUM_PACKAGING_CACHE names another directory.
const DefaultCacheDir = "/var/cache/magnum-conductor-packaging"

// conductorPackages are Debian's packages of the Python conductor: left out
// of the base, their .debs cached in it.
const conductorPackages = "magnum-conductor magnum-common python3-magnum"

// recipe names the way the base is built: change it when the steps below
// change, and a new tarball is built beside the old.
const recipe = "debootstrap minbase + systemd + magnum-conductor's dependencies, v1"

// Options say where the base comes from and goes.
type Options struct {
	// CacheDir holds the base tarballs.
	CacheDir string
	// Mirror is the Debian mirror; empty finds the one apt uses here.
	Mirror string
	// Log receives progress while a base is built.
	Log io.Writer
}

// CacheDir is $MAGNUM_PACKAGING_CACHE, or DefaultCacheDir.
func CacheDir() string {
	if d := os.Getenv("MAGNUM_PACKAGING_CACHE"); d != "" {
		return d
	}
	return DefaultCacheDir
}

// Base returns the base tarball's path, building it if it is not in the
// cache yet (several minutes, mostly downloads). Concurrent callers on the
// machine wait for one build.
func Base(ctx context.Context, opts Options) (string, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Mirror == "" {
		m, err := AptMirror("/etc/apt")
		if err != nil {
			return "", err
		}
		opts.Mirror = m
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return "", fmt.Errorf("debroot: %w", err)
	}
	key := sha256.Sum256([]byte(strings.Join([]string{recipe, Suite, opts.Mirror}, "\n")))
	name := fmt.Sprintf("debian-%s-magnum-%s.tar.gz", Suite, hex.EncodeToString(key[:6]))
	path := filepath.Join(opts.CacheDir, name)

	lock, err := os.OpenFile(filepath.Join(opts.CacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("debroot: %w", err)
	}
	defer func() { _ = lock.Close() }() // releases the flock; nothing was written
	if err := flock(ctx, lock); err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	start := time.Now()
	_, _ = fmt.Fprintf(opts.Log, "debroot: building %s from %s (debootstrap %s, then magnum-conductor's dependencies)\n",
		path, opts.Mirror, Suite) // progress for the reader: a failed write does not stop the build
	if err := build(ctx, opts, path); err != nil {
		return "", err
	}
	_, _ = fmt.Fprintf(opts.Log, "debroot: built %s in %s\n", path, time.Since(start).Round(time.Second)) // progress, as above
	return path, nil
}

// flock takes an exclusive lock on f, giving up when ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("debroot: lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("debroot: waiting for another build of the base: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func build(ctx context.Context, opts Options, out string) error {
	dir, err := os.MkdirTemp(opts.CacheDir, "build-")
	if err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	logPath := filepath.Join(dir, "build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	defer func() { _ = logf.Close() }() // the build log, read back by fail; removed with dir
	fail := func(step string, err error) error {
		tail, _ := os.ReadFile(logPath)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("debroot: building the base: %s: %w\n...%s", step, err, tail)
	}

	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", Suite, root, opts.Mirror)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return fail("debootstrap", err)
	}
	r := &Root{Dir: root}
	// No service starts unless a test allows it; dpkg does not fsync (a
	// throw-away tree); no Recommends, as the tests install exactly what
	// they name.
	for _, f := range []struct {
		name, body string
		mode       os.FileMode
	}{
		{"usr/sbin/policy-rc.d", DenyServices, 0o755},
		{"etc/dpkg/dpkg.cfg.d/unsafe-io", "force-unsafe-io\n", 0o644},
		{"etc/apt/apt.conf.d/90magnum-packaging", "APT::Install-Recommends \"false\";\n", 0o644},
	} {
		if err := r.WriteFile(f.name, []byte(f.body), f.mode); err != nil {
			return err
		}
	}
	script := `set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
deps=$(apt-get install -s magnum-conductor | awk '$1 == "Inst" {print $2}' | grep -v -x -e ` +
		strings.ReplaceAll(conductorPackages, " ", " -e ") + `)
apt-get install -y -q systemd $deps
apt-get clean
apt-get install -y -q --download-only magnum-conductor
for p in ` + conductorPackages + `; do
	ls /var/cache/apt/archives/"$p"_*.deb >/dev/null
	if dpkg -s "$p" >/dev/null 2>&1; then echo "$p is installed in the base" >&2; exit 1; fi
done
`
	out1, err := r.Run(ctx, script)
	_, logErr := logf.WriteString(out1)
	if err != nil {
		// The install's failure first: a log that could not be written
		// must not hide it.
		if logErr != nil {
			logErr = fmt.Errorf("debroot: writing the log: %w", logErr)
		}
		return errors.Join(fail("installing magnum-conductor's dependencies", err), logErr)
	}
	if logErr != nil {
		return fmt.Errorf("debroot: %w", logErr)
	}
	tmp := out + ".tmp"
	cmd = exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", root, "-czf", tmp, ".")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp) // best effort: tar's error is the one to report
		return fail("tar", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	return nil
}

// DenyServices is a policy-rc.d that refuses every init script action.
const DenyServices = "#!/bin/sh\nexit 101\n"

// AllowConductor is a policy-rc.d that lets invoke-rc.d act on
// magnum-conductor only (in a chroot it refuses everything without one).
const AllowConductor = "#!/bin/sh\n[ \"$1\" = magnum-conductor ] && exit 0\nexit 101\n"

// AptMirror finds the Debian mirror apt uses: the first URI of a deb822
// .sources file or of a "deb" line in a .list file that ends in /debian and
// is not the security archive.
func AptMirror(etcApt string) (string, error) {
	var files []string
	if m, _ := filepath.Glob(filepath.Join(etcApt, "sources.list.d", "*.sources")); m != nil {
		files = append(files, m...)
	}
	files = append(files, filepath.Join(etcApt, "sources.list"))
	if m, _ := filepath.Glob(filepath.Join(etcApt, "sources.list.d", "*.list")); m != nil {
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			var uris []string
			switch {
			case len(fields) > 1 && fields[0] == "URIs:":
				uris = fields[1:]
			case len(fields) > 2 && fields[0] == "deb":
				u := fields[1]
				if strings.HasPrefix(u, "[") { // deb [options] uri suite
					for i := 1; i < len(fields); i++ {
						if strings.HasSuffix(fields[i], "]") && i+1 < len(fields) {
							u = fields[i+1]
							break
						}
					}
				}
				uris = []string{u}
			}
			for _, u := range uris {
				u = strings.TrimSuffix(u, "/")
				if strings.HasSuffix(u, "/debian") && !strings.Contains(u, "security") {
					return u, nil
				}
			}
		}
	}
	return "", fmt.Errorf("debroot: no Debian mirror in %s/sources.list{,.d}", etcApt)
}

// Root is an unpacked tree.
type Root struct {
	// Dir is the tree's directory on the host.
	Dir string
}

// Unpack extracts the base tarball into a new directory under parent.
func Unpack(ctx context.Context, tarball, parent string) (*Root, error) {
	dir, err := os.MkdirTemp(parent, "debroot-")
	if err != nil {
		return nil, fmt.Errorf("debroot: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-xzf", tarball).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir) // best effort: the unpacking's error is the one to report
		return nil, fmt.Errorf("debroot: unpacking %s: %w\n%s", tarball, err, out)
	}
	return &Root{Dir: dir}, nil
}

// Path is a path of the tree as seen from the host.
func (r *Root) Path(p string) string { return filepath.Join(r.Dir, p) }

// WriteFile writes a file in the tree.
func (r *Root) WriteFile(p string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(r.Path(p)), 0o755); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	if err := os.WriteFile(r.Path(p), data, mode); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	if err := os.Chmod(r.Path(p), mode); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	return nil
}

// Command is a shell script run in the tree by chroot(8) as userspec
// ("" for root, else "user:group"), in a private mount namespace with /proc
// and a /dev/shm of its own. unshare, sh and chroot exec one another, so the
// returned command's process is the script's (signals reach it).
func (r *Root) Command(ctx context.Context, userspec, script string) *exec.Cmd {
	chroot := `exec chroot "$0" /bin/sh -c "$1"`
	if userspec != "" {
		chroot = `exec chroot --userspec="$2" "$0" /bin/sh -c "$1"`
	}
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`set -e; mount -t proc proc "$0/proc"; mount -t tmpfs -o mode=1777 shm "$0/dev/shm"; `+chroot,
		r.Dir, script, userspec)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
		"DEBIAN_FRONTEND=noninteractive", "HOME=/root"}
	return cmd
}

// Run runs a shell script in the tree as root and returns its output
// (stdout and stderr), within a timeout of 10 minutes.
func (r *Root) Run(ctx context.Context, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	out, err := r.Command(ctx, "", script).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("debroot: %q: %w\n%s", firstLine(script), err, out)
	}
	return string(out), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Processes are the pids of the processes whose root is the tree.
func (r *Root) Processes() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("debroot: %w", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if root, err := os.Readlink(filepath.Join("/proc", e.Name(), "root")); err == nil && root == r.Dir {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Close kills what still runs in the tree (only processes whose root is
// the tree) and removes it.
func (r *Root) Close() error {
	for i := 0; i < 50; i++ {
		pids, err := r.Processes()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // gone already is as good; the loop looks again
		}
		time.Sleep(100 * time.Millisecond) // waiting for the kernel to reap them, not for a test condition
	}
	if err := os.RemoveAll(r.Dir); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	return nil
}
