package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDefaultFilesAsOsloConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, p := range []string{".magnum/magnum.conf", "magnum.conf", "magnum-conductor.conf"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "magnum-conductor.conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The first directory holding each of <project>.conf and <prog>.conf:
	// ~/.magnum/magnum.conf wins over ~/magnum.conf.
	want := []string{filepath.Join(home, ".magnum/magnum.conf"), filepath.Join(home, "magnum-conductor.conf")}
	if got := DefaultFiles("magnum", "magnum-conductor"); !reflect.DeepEqual(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if got := DefaultDirs("magnum", "magnum-conductor"); len(got) < 1 || got[len(got)-1] != filepath.Join(home, "magnum-conductor.conf.d") {
		t.Errorf("dirs %q", got)
	}
	if got := DefaultFiles("magnum-none-here", "magnum-none-here-either"); len(got) != 0 {
		t.Errorf("nothing to find, got %q", got)
	}
}
