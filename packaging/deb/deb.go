// Package deb builds the Debian packages with dpkg-deb:
//
//   - magnum-conductor-go: /usr/bin/magnum-conductor (taking python3-magnum's
//     name by a diversion, so that Debian's magnum-conductor unit and init
//     script start it unchanged), magnum-db-manage-go, magnumctl, a drop-in
//     for Debian's unit, and the documentation;
//   - magnum-db-manage-go: /usr/bin/magnum-db-manage as the Go one (by a
//     diversion as well), for operators who ask for it by installing it.
//
// The maintainer scripts are in debian/ beside this file. Every timestamp is
// the commit's and every owner root, so the same commit and binaries give
// the same bytes.
package deb

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5" //nolint:gosec // DEBIAN/md5sums (see below)
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/packaging/version"
)

//go:embed debian
var debianFiles embed.FS

// Options say what to package.
type Options struct {
	// Binaries are the built binaries by name (gobuild.Build).
	Binaries map[string]string
	// Src is the checkout, for the sample configuration and the example unit.
	Src string
	// Version is the commit the binaries were built from.
	Version version.Info
	// GOARCH is the architecture the binaries were built for.
	GOARCH string
	// Maintainer is the Maintainer field, "Name <email>".
	Maintainer string
	// Out is the directory the .deb files are written to.
	Out string
	// Compression is dpkg-deb's -Z: xz (the default, as dpkg-deb's own),
	// gzip or none. The tests build throw-away variants with none.
	Compression string
}

// Names of the binary packages.
const (
	ConductorPackage = "magnum-conductor-go"
	DBManagePackage  = "magnum-db-manage-go"
)

// Arch is the Debian architecture of a Go one.
func Arch(goarch string) (string, error) {
	switch goarch {
	case "amd64", "arm64", "s390x", "riscv64":
		return goarch, nil
	case "ppc64le":
		return "ppc64el", nil
	case "386":
		return "i386", nil
	}
	return "", fmt.Errorf("deb: no Debian architecture for GOARCH=%s", goarch)
}

// file is one entry of a package's data.
type file struct {
	path string // without the leading /
	mode fs.FileMode
	data []byte // regular file
	link string // symlink target
}

type pkg struct {
	name    string
	control string // the fields after Package, Version, Architecture, Maintainer, Installed-Size
	files   []file
	scripts map[string][]byte // preinst, postinst, postrm ...
}

// Build writes the packages into opts.Out and returns their paths.
func Build(ctx context.Context, opts Options) ([]string, error) {
	arch, err := Arch(opts.GOARCH)
	if err != nil {
		return nil, err
	}
	if opts.Maintainer == "" {
		return nil, fmt.Errorf("deb: no maintainer")
	}
	pkgs, err := packages(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("deb: %w", err)
	}
	var out []string
	for _, p := range pkgs {
		path, err := build(ctx, p, opts, arch)
		if err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

func packages(opts Options) ([]pkg, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("deb: %w", err)
		}
		return b, nil
	}
	embedded := func(name string) []byte {
		b, err := debianFiles.ReadFile("debian/" + name)
		if err != nil {
			panic(err) // the embedded tree is fixed at compile time
		}
		return b
	}
	restart := embedded("restart.sh")
	script := func(name string) []byte {
		return bytes.Replace(embedded(name), []byte("#RESTART#\n"), restart, 1)
	}

	bins := map[string][]byte{}
	for _, b := range []string{"magnum-conductor", "magnum-db-manage", "magnumctl"} {
		path, ok := opts.Binaries[b]
		if !ok {
			return nil, fmt.Errorf("deb: binary %s not built", b)
		}
		data, err := read(path)
		if err != nil {
			return nil, err
		}
		bins[b] = data
	}
	sample, err := read(filepath.Join(opts.Src, "etc/magnum/magnum.conf.sample"))
	if err != nil {
		return nil, err
	}
	unit, err := read(filepath.Join(opts.Src, "etc/systemd/magnum-conductor.service"))
	if err != nil {
		return nil, err
	}

	docs := func(name string) ([]file, error) {
		cl, err := changelog(name, opts)
		if err != nil {
			return nil, err
		}
		d := "usr/share/doc/" + name + "/"
		return []file{
			{path: d + "copyright", mode: 0o644, data: embedded("copyright")},
			{path: d + "changelog.gz", mode: 0o644, data: cl},
		}, nil
	}
	condDocs, err := docs(ConductorPackage)
	if err != nil {
		return nil, err
	}
	dbDocs, err := docs(DBManagePackage)
	if err != nil {
		return nil, err
	}
	doc := "usr/share/doc/" + ConductorPackage + "/"
	conductor := pkg{
		name: ConductorPackage,
		control: `Section: net
Priority: optional
Enhances: magnum-conductor
Description: OpenStack Magnum's conductor, in Go
 A drop-in replacement for python3-magnum's magnum-conductor: the same
 magnum.conf, the same RabbitMQ wire protocol and the same database; the
 Python magnum-api keeps working. It takes /usr/bin/magnum-conductor by a
 diversion (the Python one moves to /usr/bin/magnum-conductor.python), so
 that Debian's magnum-conductor service starts it; removing this package
 gives the Python conductor back.
 .
 Also installs magnumctl, an operator's command line over the conductor's
 RPC, and the Go magnum-db-manage as magnum-db-manage-go (install
 magnum-db-manage-go to have it as magnum-db-manage).
`,
		files: append([]file{
			{path: "usr/bin/magnum-conductor", mode: 0o755, data: bins["magnum-conductor"]},
			{path: "usr/bin/magnum-db-manage-go", mode: 0o755, data: bins["magnum-db-manage"]},
			{path: "usr/bin/magnumctl", mode: 0o755, data: bins["magnumctl"]},
			{path: "lib/systemd/system/magnum-conductor.service.d/magnum-conductor-go.conf", mode: 0o644,
				data: embedded("magnum-conductor-go.service.conf")},
			{path: doc + "README.Debian", mode: 0o644, data: embedded("README.Debian")},
			{path: doc + "examples/magnum.conf.sample", mode: 0o644, data: sample},
			{path: doc + "examples/magnum-conductor.service", mode: 0o644, data: unit},
		}, condDocs...),
		scripts: map[string][]byte{
			"preinst":  script("magnum-conductor-go.preinst"),
			"postinst": script("magnum-conductor-go.postinst"),
			"postrm":   script("magnum-conductor-go.postrm"),
		},
	}
	dbmanage := pkg{
		name: DBManagePackage,
		control: `Section: net
Priority: optional
Depends: ` + ConductorPackage + ` (= ` + opts.Version.Debian() + `)
Description: OpenStack Magnum's magnum-db-manage, in Go, as magnum-db-manage
 Makes /usr/bin/magnum-db-manage the Go magnum-db-manage of
 magnum-conductor-go, which brings the database to the schema head the Go
 conductor needs. python3-magnum's magnum-db-manage moves to
 /usr/bin/magnum-db-manage.python by a diversion; removing this package
 gives it its name back.
`,
		files: append([]file{
			{path: "usr/bin/magnum-db-manage", mode: fs.ModeSymlink | 0o777, link: "magnum-db-manage-go"},
		}, dbDocs...),
		scripts: map[string][]byte{
			"preinst": script("magnum-db-manage-go.preinst"),
			"postrm":  script("magnum-db-manage-go.postrm"),
		},
	}
	return []pkg{conductor, dbmanage}, nil
}

// changelog is a native package's usr/share/doc/<name>/changelog.gz: one
// entry naming the commit.
func changelog(name string, opts Options) ([]byte, error) {
	text := fmt.Sprintf(`%s (%s) unstable; urgency=medium

  * Built from commit %s (%s).

 -- %s  %s
`, name, opts.Version.Debian(), opts.Version.Revision, opts.Version.Go, opts.Maintainer,
		opts.Version.Time.Format(time.RFC1123Z))
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression) // no name, no time: as gzip -9n
	if err != nil {
		return nil, fmt.Errorf("deb: %w", err)
	}
	if _, err := zw.Write([]byte(text)); err != nil {
		return nil, fmt.Errorf("deb: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("deb: %w", err)
	}
	return b.Bytes(), nil
}

// build stages p in a temporary tree and runs dpkg-deb on it.
func build(ctx context.Context, p pkg, opts Options, arch string) (string, error) {
	stage, err := os.MkdirTemp("", "magnum-deb-")
	if err != nil {
		return "", fmt.Errorf("deb: %w", err)
	}
	defer os.RemoveAll(stage)

	dirs := map[string]bool{}
	var sums []string
	installedKiB := int64(0)
	for _, f := range p.files {
		for d := filepath.Dir(f.path); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
		dst := filepath.Join(stage, f.path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("deb: %w", err)
		}
		if f.mode&fs.ModeSymlink != 0 {
			if err := os.Symlink(f.link, dst); err != nil {
				return "", fmt.Errorf("deb: %w", err)
			}
			installedKiB++
			continue
		}
		if err := writeFile(dst, f.data, f.mode); err != nil {
			return "", err
		}
		sum := md5.Sum(f.data) //nolint:gosec // DEBIAN/md5sums is MD5 by Debian policy, a check against corruption, not a signature
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+f.path+"\n")
		installedKiB += (int64(len(f.data)) + 1023) / 1024
	}
	installedKiB += int64(len(dirs)) // as dpkg-gencontrol counts: 1 KiB a directory or symlink
	sort.Strings(sums)

	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\nInstalled-Size: %d\n%s",
		p.name, opts.Version.Debian(), arch, opts.Maintainer, installedKiB, p.control)
	if err := os.Mkdir(filepath.Join(stage, "DEBIAN"), 0o755); err != nil {
		return "", fmt.Errorf("deb: %w", err)
	}
	if err := writeFile(filepath.Join(stage, "DEBIAN/control"), []byte(control), 0o644); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(stage, "DEBIAN/md5sums"), []byte(strings.Join(sums, "")), 0o644); err != nil {
		return "", err
	}
	for name, body := range p.scripts {
		if err := writeFile(filepath.Join(stage, "DEBIAN", name), body, 0o755); err != nil {
			return "", err
		}
	}

	// Every directory is 0755 and every entry gets the commit's time,
	// directories and symlinks included (lchtimes: the symlink itself),
	// children before parents.
	var paths []string
	if err := filepath.WalkDir(stage, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, path)
		return nil
	}); err != nil {
		return "", fmt.Errorf("deb: %w", err)
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if fi, err := os.Lstat(paths[i]); err == nil && fi.IsDir() {
			if err := os.Chmod(paths[i], 0o755); err != nil { // whatever the umask
				return "", fmt.Errorf("deb: %w", err)
			}
		}
		if err := lchtimes(paths[i], opts.Version.Time); err != nil {
			return "", err
		}
	}

	out := filepath.Join(opts.Out, fmt.Sprintf("%s_%s_%s.deb", p.name, opts.Version.Debian(), arch))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	z := opts.Compression
	if z == "" {
		z = "xz"
	}
	// One compressor thread: xz's output with several depends on how many.
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--root-owner-group", "-Z"+z, "--threads-max=1", "--build", stage, out)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+opts.Version.SourceDateEpoch())
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("deb: dpkg-deb --build %s: %w\n%s", p.name, err, b)
	}
	return out, nil
}

// writeFile writes data with exactly mode, whatever the umask.
func writeFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	return nil
}
