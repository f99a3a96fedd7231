package apitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A target is one binary built from a test module.
type target struct {
	name    string // file name of the binary
	pkg     string // package path, "." for the module's own main
	ldflags string
}

// moduleRoot is the directory of the main module around the working
// directory (magnum-conductor's root).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("apitest: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("apitest: not inside the magnum-conductor module")
	}
	return filepath.Dir(gomod), nil
}

// moduleKey hashes what a build of module dir depends on: every file of the
// module (go.mod, go.sum, sources), the Go toolchain, and the targets (their
// flags). The module cache is content-addressed by go.sum, so this is all.
func moduleKey(ctx context.Context, dir string, targets []target) (string, error) {
	goenv, err := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("apitest: go env: %w", err)
	}
	h := sha256.New()
	h.Write(goenv)
	for _, t := range targets {
		_, _ = fmt.Fprintf(h, "target %s %s %s\n", t.name, t.pkg, t.ldflags) // a hash's Write never fails
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("apitest: hash %s: %w", dir, err)
	}
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, f)
		_, _ = fmt.Fprintf(h, "file %s %d\n", rel, len(data)) // a hash's Write never fails
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// buildModule builds the targets named in need (all of them when need is
// empty) of the Go module in dir (relative to the
// magnum-conductor root) into a directory under os.TempDir() named after
// the module's content (moduleKey), and returns that directory. A binary
// already there is used as it is, without running the go command: a
// checkout elsewhere on the machine with the same module (another
// worktree, a CI clone) reuses it, and the binaries are rebuilt only when
// the module changes. A lock file serialises concurrent builds (go test
// runs packages in parallel); a binary is renamed into place only once
// complete.
func buildModule(ctx context.Context, logf Logger, dir, prefix string, targets []target, need ...string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, dir)
	key, err := moduleKey(ctx, src, targets)
	if err != nil {
		return "", err
	}
	out := filepath.Join(os.TempDir(), "magnum-conductor-"+prefix+"-"+key)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	var missing []target
	for _, t := range targets {
		if len(need) > 0 && !slices.Contains(need, t.name) {
			continue
		}
		if _, err := os.Stat(filepath.Join(out, t.name)); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	lock, err := os.OpenFile(filepath.Join(out, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("apitest: lock %s: %w", lock.Name(), err)
	}
	for _, t := range missing {
		bin := filepath.Join(out, t.name)
		if _, err := os.Stat(bin); err == nil {
			continue // built by another process while this one waited
		}
		begin := time.Now()
		logf("apitest: building %s from %s (minutes on a cold build cache)", t.name, dir)
		tmp := bin + ".tmp"
		args := []string{"build", "-o", tmp}
		if t.ldflags != "" {
			args = append(args, "-ldflags", t.ldflags)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, t.pkg)...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOWORK=off") // its own go.mod, whatever the caller's workspace
		var output bytes.Buffer
		cmd.Stdout, cmd.Stderr = &output, &output
		if err := cmd.Run(); err != nil {
			_ = os.Remove(tmp) // best effort: the build's error is the one to report
			return "", fmt.Errorf("apitest: go build %s in %s: %w\n%s", t.pkg, src, err, output.String())
		}
		if err := os.Rename(tmp, bin); err != nil {
			return "", err
		}
		logf("apitest: built %s in %s", t.name, time.Since(begin).Round(time.Second))
	}
	return out, nil
}

// moduleVersion is the version of module mod that the Go module in dir
// (relative to the magnum-conductor root) requires.
func moduleVersion(ctx context.Context, dir, mod string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", mod)
	cmd.Dir = filepath.Join(root, dir)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("apitest: go list -m %s in %s: %w", mod, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// versionLDFlags links the Kubernetes version into a k8s.io/kubernetes
// binary (kube-apiserver reports it at /version; Cluster API refuses a
// management cluster that reports v0.0.0).
func versionLDFlags(version string) (string, error) {
	v := strings.TrimPrefix(version, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("apitest: unexpected Kubernetes version %q", version)
	}
	const p = "k8s.io/component-base/version"
	return fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean",
		p, version, p, parts[0], p, parts[1], p), nil
}
