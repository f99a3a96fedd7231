// Package testbuild gives the packaging tests the checkout they belong to
// and its binaries, built as the packages build them.
package testbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openstack/magnum-conductor/packaging/gobuild"
	"github.com/openstack/magnum-conductor/packaging/version"
)

// Checkout is the repository root: the nearest directory above the working
// directory whose go.mod is github.com/openstack/magnum-conductor's.
func Checkout() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbuild: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/openstack/magnum-conductor\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("testbuild: no checkout of github.com/openstack/magnum-conductor above %s", dir)
		}
	}
}

// Built is one build of the checkout.
type Built struct {
	Src      string
	Version  version.Info
	GOARCH   string
	Binaries map[string]string
}

// Build builds the checkout's binaries into out.
func Build(ctx context.Context, out string) (Built, error) {
	src, err := Checkout()
	if err != nil {
		return Built{}, err
	}
	info, err := version.FromGit(ctx, src)
	if err != nil {
		return Built{}, err
	}
	arch, err := gobuild.HostGOARCH(ctx)
	if err != nil {
		return Built{}, err
	}
	bins, err := gobuild.Build(ctx, gobuild.Options{Src: src, Out: out, GOARCH: arch, Version: info})
	if err != nil {
		return Built{}, err
	}
	return Built{Src: src, Version: info, GOARCH: arch, Binaries: bins}, nil
}
