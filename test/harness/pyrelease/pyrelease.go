// Package pyrelease describes the Python Magnum releases the
// interoperability tests run as live peers (Debian bookworm's 15.0.1 on the
// host, Debian sid's 23.0.0 in the chroot .ci/services builds), and runs
// their programs. It depends on the standard library only, so that any
// package's tests can use it.
package pyrelease

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Release is one Python Magnum release the interoperability tests run as a
// live peer: its magnum-api, its magnum-conductor (the reference the same
// scenario runs against) and its client code.
type Release struct {
	// Name is the python3-magnum version, e.g. "23.0.0".
	Name string
	// Series is the OpenStack series, e.g. "2026.2".
	Series string
	// Root is the chroot the release is installed in; "" for the host.
	Root string
	// Distro says where the packages come from, for messages.
	Distro string
}

// SidRoot is the chroot .ci/services builds with Debian sid's
// python3-magnum 23.0.0, python3-magnumclient 5.0.0 and
// python3-openstackclient, once per machine.
const SidRoot = "/srv/magnum-2026.2"

// Magnum15 is Debian bookworm's Magnum 15.0.1 (2023.1), on the host.
var Magnum15 = Release{Name: "15.0.1", Series: "2023.1", Distro: "Debian bookworm (the host)"}

// Magnum23 is Debian sid's Magnum 23.0.0 (2026.2), in SidRoot.
var Magnum23 = Release{Name: "23.0.0", Series: "2026.2", Root: SidRoot, Distro: "Debian sid (chroot " + SidRoot + ")"}

// All are the releases every live interoperability test runs
// against, oldest first.
func All() []Release { return []Release{Magnum15, Magnum23} }

// String is "magnum 23.0.0 (2026.2)".
func (r Release) String() string { return "magnum " + r.Name + " (" + r.Series + ")" }

// path is p as the host sees it.
func (r Release) path(p string) string { return filepath.Join("/", r.Root, p) }

// Require makes sure the release is installed and usable by a test: its
// python3-magnum at the expected version, and, for a chroot, /proc, /dev
// and the test's temporary directory mounted in it (make services does
// all of that). A missing peer skips the test, except in CI (CI=true),
// where it fails it: a CI run that silently tests less is a defect.
func (r Release) Require(t testing.TB) {
	t.Helper()
	if err := r.Check(); err != nil {
		msg := fmt.Sprintf("%s from %s is not usable: %v (run `make services`)", r, r.Distro, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Check says why the release is not usable by a test, or returns nil.
func (r Release) Check() error {
	info := "/usr/lib/python3/dist-packages/magnum-" + r.Name
	matches, _ := filepath.Glob(r.path(info) + "*-info")
	if len(matches) == 0 {
		return fmt.Errorf("no %s*-info", r.path(info))
	}
	if r.Root == "" {
		return nil
	}
	mounted, err := mountPoints()
	if err != nil {
		return err
	}
	for _, p := range []string{"/proc", "/dev", "/tmp"} {
		if !mounted[r.path(p)] {
			return fmt.Errorf("%s is not mounted", r.path(p))
		}
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return err
	}
	if tmp != "/tmp" && !strings.HasPrefix(tmp, "/tmp/") {
		return fmt.Errorf("the tests' temporary directory %s is not under /tmp, which is all the chroot sees", tmp)
	}
	return nil
}

// mountPoints lists the mount points of this mount namespace.
func mountPoints() (map[string]bool, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 1 {
			out[fields[1]] = true
		}
	}
	return out, sc.Err()
}

// Command runs the release's program name (an absolute path inside the
// release, such as /usr/bin/python3) with args, killed when ctx ends: on
// the host, or chrooted into the release's root (chroot(8) execs the
// program, so the process is the program itself).
func (r Release) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if r.Root == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "chroot", append([]string{r.Root, name}, args...)...)
}

// Python is Debian's interpreter, the one python3-magnum is installed for
// (on the host and in a release's chroot).
const Python = "/usr/bin/python3"

// Python runs the release's /usr/bin/python3 with args (23.0.0's eventlet
// and oslo warn on every start that they are deprecated: not shown).
func (r Release) Python(ctx context.Context, args ...string) *exec.Cmd {
	return r.Command(ctx, Python, append([]string{"-W", "ignore::DeprecationWarning"}, args...)...)
}

// pythonDirs are the repository's Python directories a release runs
// scripts from.
var pythonDirs = []string{"test/interop/python", "test/bench/python", "apihost"}

// Scripts returns the directory that holds the repository's Python
// directories (test/interop/python, test/bench/python, apihost) as the
// release sees them: the module root on the host; for a chroot, a copy in
// a temporary directory under /tmp (mounted into it), made for this test.
func (r Release) Scripts(t testing.TB) string {
	t.Helper()
	dir, err := r.ScriptsIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ScriptsIn is Scripts for a caller that is not a test: the copy for a
// chroot goes into tmp, which must be under /tmp.
func (r Release) ScriptsIn(tmp string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if r.Root == "" {
		return root, nil
	}
	for _, d := range pythonDirs {
		if err := copyTree(filepath.Join(root, d), filepath.Join(tmp, d)); err != nil {
			return "", err
		}
	}
	return tmp, nil
}

// copyTree copies the regular files of src into dst, keeping modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
}
