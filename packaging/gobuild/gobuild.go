// Package gobuild builds the project's binaries the way the packages and the
// image ship them: static (CGO_ENABLED=0), stripped, without build paths
// (-trimpath), with the version linked in rather than read from the VCS, so
// that one commit built twice, in a clone or a worktree, gives the same
// bytes with the same Go toolchain.
package gobuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/packaging/version"
)

// linkedVersionVar is the variable magnum-conductor --version prints when
// it is set (the conductor's command line lives in package service).
const linkedVersionVar = "github.com/openstack/magnum-conductor/service.linkedVersion"

// Binaries are the commands under cmd/ that are shipped.
func Binaries() []string { return []string{"magnum-conductor", "magnum-db-manage", "magnumctl"} }

// Options say what to build.
type Options struct {
	// Src is the checkout: the module root of github.com/openstack/magnum-conductor.
	Src string
	// Out is the directory the binaries are written to.
	Out string
	// GOARCH is the target architecture (linux only); empty is the host's.
	GOARCH string
	// Version is linked into magnum-conductor (--version).
	Version version.Info
	// Timeout bounds the build (a cold build cache takes minutes).
	Timeout time.Duration
}

// Build compiles Binaries() into opts.Out and returns their paths by name.
func Build(ctx context.Context, opts Options) (map[string]string, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("gobuild: %w", err)
	}
	out, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, fmt.Errorf("gobuild: %w", err)
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags=-s -w -X '" + linkedVersionVar + "=" + opts.Version.Linked() + "'",
		"-o", out + string(filepath.Separator)}
	for _, b := range Binaries() {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = opts.Src
	// GOFLAGS from the environment (-race, -cover, -buildvcs) would change
	// the bytes: the flags above are the whole build.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if opts.GOARCH != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+opts.GOARCH)
	}
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gobuild: go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	paths := make(map[string]string, len(Binaries()))
	for _, b := range Binaries() {
		p := filepath.Join(out, b)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("gobuild: %w", err)
		}
		paths[b] = p
	}
	return paths, nil
}

// HostGOARCH is the architecture `go` builds for by default here.
func HostGOARCH(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("gobuild: go env GOARCH: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
