package gobuild_test

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/packaging/gobuild"
	"github.com/openstack/magnum-conductor/packaging/internal/testbuild"
)

// TestBuildIsReproducibleAndStatic builds the checkout twice into two
// directories and checks that the binaries are the same bytes, are static,
// and that the conductor reports the linked version.
func TestBuildIsReproducibleAndStatic(t *testing.T) {
	ctx := context.Background()
	a, err := testbuild.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := testbuild.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range gobuild.Binaries() {
		da, err := os.ReadFile(a.Binaries[name])
		if err != nil {
			t.Fatal(err)
		}
		db, err := os.ReadFile(b.Binaries[name])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(da, db) {
			t.Errorf("%s differs between two builds of the same tree", name)
		}
		f, err := elf.Open(a.Binaries[name])
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a dynamic loader: not static", name)
			}
		}
		if f.Section(".debug_info") != nil || f.Section(".symtab") != nil {
			t.Errorf("%s is not stripped", name)
		}
		_ = f.Close() // read only
	}
	out, err := exec.Command(a.Binaries["magnum-conductor"], "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("magnum-conductor --version: %v\n%s", err, out)
	}
	if want := "magnum-conductor version " + a.Version.Linked(); strings.TrimSpace(string(out)) != want {
		t.Errorf("--version says %q, want %q", out, want)
	}
}
