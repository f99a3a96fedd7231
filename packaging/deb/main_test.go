package deb_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/openstack/magnum-conductor/packaging/internal/testbuild"
)

// Two builds of the checkout, and the packages of each, shared by the
// tests of this package (a build takes a minute or more: each test making
// its own would double the time).
var built [2]struct {
	testbuild.Built
	debs map[string]string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "deb-test-")
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
		debs, err := buildDebs(b, b.Version, dir, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		built[i].Built, built[i].debs = b, debs
	}
	return m.Run()
}
