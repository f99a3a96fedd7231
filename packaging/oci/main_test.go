package oci_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openstack/magnum-conductor/packaging/internal/testbuild"
	"github.com/openstack/magnum-conductor/packaging/oci"
)

// Two builds of the checkout, and the image tarball of each, shared by the
// tests of this package.
var built [2]struct {
	testbuild.Built
	tarball string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "oci-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	for i := range built {
		dir, err := os.MkdirTemp(tmp, "build-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		b, err := testbuild.Build(context.Background(), dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		out := filepath.Join(dir, oci.FileName(b.Version, b.GOARCH))
		if err := oci.Build(context.Background(), oci.Options{Binaries: b.Binaries, Src: b.Src, Version: b.Version,
			GOARCH: b.GOARCH, Out: out}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		built[i].Built, built[i].tarball = b, out
	}
	return m.Run()
}
