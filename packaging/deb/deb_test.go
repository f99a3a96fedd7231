package deb_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/packaging/deb"
	"github.com/openstack/magnum-conductor/packaging/internal/testbuild"
	"github.com/openstack/magnum-conductor/packaging/version"
)

const maintainer = "Packaging Test <packaging-test@example.org>"

// buildDebs builds the packages of b's binaries, as version v, into out,
// compressed as dpkg-deb -Z says ("" is the packaging's default), and
// returns their paths by package name.
func buildDebs(b testbuild.Built, v version.Info, out, compression string) (map[string]string, error) {
	paths, err := deb.Build(context.Background(), deb.Options{Binaries: b.Binaries, Src: b.Src, Version: v,
		GOARCH: b.GOARCH, Maintainer: maintainer, Out: out, Compression: compression})
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for _, p := range paths {
		byName[strings.SplitN(filepath.Base(p), "_", 2)[0]] = p
	}
	if len(byName) != 2 || byName[deb.ConductorPackage] == "" || byName[deb.DBManagePackage] == "" {
		return nil, fmt.Errorf("packages built: %v", paths)
	}
	return byName, nil
}

func dpkgDeb(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPackagesAreReproducible checks that two builds of the checkout, and of
// each build's packages, are the same bytes.
func TestPackagesAreReproducible(t *testing.T) {
	pa, pb := built[0].debs, built[1].debs
	for name := range pa {
		da, err := os.ReadFile(pa[name])
		if err != nil {
			t.Fatal(err)
		}
		db, err := os.ReadFile(pb[name])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(da, db) {
			t.Errorf("%s: two builds of the same tree differ", name)
		}
	}
}

// TestPackageContents checks what dpkg reads from the packages: fields,
// files with their modes and owners, checksums, maintainer scripts.
func TestPackageContents(t *testing.T) {
	b, debs := built[0].Built, built[0].debs
	arch, err := deb.Arch(b.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]string{
		deb.ConductorPackage: {"Package": deb.ConductorPackage, "Version": b.Version.Debian(), "Architecture": arch,
			"Maintainer": maintainer, "Enhances": "magnum-conductor", "Depends": ""},
		deb.DBManagePackage: {"Package": deb.DBManagePackage, "Version": b.Version.Debian(), "Architecture": arch,
			"Depends": deb.ConductorPackage + " (= " + b.Version.Debian() + ")"},
	} {
		for field, value := range want {
			if got := strings.TrimSpace(dpkgDeb(t, "--field", debs[name], field)); got != value {
				t.Errorf("%s: %s is %q, want %q", name, field, got, value)
			}
		}
	}

	// Files, modes, owners (dpkg-deb -c: "mode owner/group size date time path").
	listing := map[string]string{}
	for name, p := range debs {
		for _, line := range strings.Split(strings.TrimSpace(dpkgDeb(t, "--contents", p)), "\n") {
			f := strings.Fields(line)
			path := strings.TrimPrefix(f[5], ".")
			if f[0][0] == 'l' {
				path += " -> " + f[7]
			}
			listing[name+":"+path] = f[0] + " " + f[1]
		}
	}
	for entry, modeOwner := range map[string]string{
		deb.ConductorPackage + ":/usr/bin/magnum-conductor":                                               "-rwxr-xr-x root/root",
		deb.ConductorPackage + ":/usr/bin/magnum-db-manage-go":                                            "-rwxr-xr-x root/root",
		deb.ConductorPackage + ":/usr/bin/magnumctl":                                                      "-rwxr-xr-x root/root",
		deb.ConductorPackage + ":/lib/systemd/system/magnum-conductor.service.d/magnum-conductor-go.conf": "-rw-r--r-- root/root",
		deb.ConductorPackage + ":/usr/share/doc/magnum-conductor-go/copyright":                            "-rw-r--r-- root/root",
		deb.ConductorPackage + ":/usr/share/doc/magnum-conductor-go/changelog.gz":                         "-rw-r--r-- root/root",
		deb.ConductorPackage + ":/usr/share/doc/magnum-conductor-go/README.Debian":                        "-rw-r--r-- root/root",
		deb.ConductorPackage + ":/usr/share/doc/magnum-conductor-go/examples/magnum.conf.sample":          "-rw-r--r-- root/root",
		deb.ConductorPackage + ":/usr/share/doc/magnum-conductor-go/examples/magnum-conductor.service":    "-rw-r--r-- root/root",
		deb.DBManagePackage + ":/usr/bin/magnum-db-manage -> magnum-db-manage-go":                         "lrwxrwxrwx root/root",
		deb.DBManagePackage + ":/usr/share/doc/magnum-db-manage-go/copyright":                             "-rw-r--r-- root/root",
		deb.DBManagePackage + ":/usr/share/doc/magnum-db-manage-go/changelog.gz":                          "-rw-r--r-- root/root",
	} {
		if got, ok := listing[entry]; !ok {
			t.Errorf("%s missing", entry)
		} else if got != modeOwner {
			t.Errorf("%s is %s, want %s", entry, got, modeOwner)
		}
	}
	for entry, modeOwner := range listing {
		if !strings.HasSuffix(modeOwner, " root/root") {
			t.Errorf("%s is owned by %s", entry, modeOwner)
		}
		// The Python conductor's and magnum-db-manage's names are taken by
		// diversion, never shipped under a name python3-magnum owns
		// except these two.
		if strings.HasPrefix(entry, deb.ConductorPackage+":/usr/bin/magnum-db-manage ") {
			t.Errorf("%s would clobber python3-magnum's magnum-db-manage", entry)
		}
	}

	// md5sums match the data, and the maintainer scripts parse.
	for name, p := range debs {
		dir := t.TempDir()
		dpkgDeb(t, "--raw-extract", p, dir)
		sums, err := os.ReadFile(filepath.Join(dir, "DEBIAN/md5sums"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(sums))
		for sc.Scan() {
			sum, path, ok := strings.Cut(sc.Text(), "  ")
			if !ok {
				t.Fatalf("%s: md5sums line %q", name, sc.Text())
			}
			data, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			if got := md5.Sum(data); hex.EncodeToString(got[:]) != sum {
				t.Errorf("%s: md5sum of %s is wrong", name, path)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: empty md5sums", name)
		}
		scripts, _ := filepath.Glob(filepath.Join(dir, "DEBIAN/*"))
		for _, s := range scripts {
			base := filepath.Base(s)
			if base == "control" || base == "md5sums" {
				continue
			}
			if out, err := exec.Command("sh", "-n", s).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", name, base, err, out)
			}
			body, _ := os.ReadFile(s)
			if bytes.Contains(body, []byte("#RESTART#")) {
				t.Errorf("%s %s: placeholder left in", name, base)
			}
		}
	}
}
