package oci_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/openstack/magnum-conductor/packaging/oci"
)

func TestImageIsReproducible(t *testing.T) {
	a, err := os.ReadFile(built[0].tarball)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(built[1].tarball)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same tree give two different image tarballs")
	}
}

// images reads the tarball both ways it is meant to be read: as an OCI
// image layout, and as a `docker save` archive.
func images(t *testing.T) (fromLayout, fromDocker v1.Image) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(built[0].tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests", len(im.Manifests))
	}
	if got, want := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"], oci.Reference(built[0].Version); got != want {
		t.Errorf("index.json names the image %q, want %q", got, want)
	}
	fromLayout, err = idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	fromDocker, err = tarball.ImageFromPath(built[0].tarball, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fromLayout, fromDocker
}

// TestImageArchiveIsLayoutAndDockerArchive checks that both readings give
// one valid image (every digest and size checked by validate.Image).
func TestImageArchiveIsLayoutAndDockerArchive(t *testing.T) {
	l, d := images(t)
	for name, img := range map[string]v1.Image{"OCI layout": l, "docker archive": d} {
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ld, err := l.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	dd, err := d.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if ld != dd {
		t.Errorf("the OCI layout's configuration is %s, the docker archive's %s", ld, dd)
	}
	mt, err := l.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
}

func TestImageConfig(t *testing.T) {
	img, _ := images(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	b := built[0]
	if cf.OS != "linux" || cf.Architecture != b.GOARCH {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if !cf.Created.Time.Equal(b.Version.Time) {
		t.Errorf("created %v, want the commit's time %v", cf.Created.Time, b.Version.Time)
	}
	c := cf.Config
	if c.User != "42428" {
		t.Errorf("user %q, want Kolla's magnum, 42428 (the uid alone: runtimes then add its groups)", c.User)
	}
	if want := []string{"magnum-conductor", "--config-file", "/etc/magnum/magnum.conf"}; !reflect.DeepEqual(c.Cmd, want) || len(c.Entrypoint) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want no entrypoint and %q", c.Entrypoint, c.Cmd, want)
	}
	if !reflect.DeepEqual(c.Volumes, map[string]struct{}{"/var/lib/magnum": {}}) {
		t.Errorf("volumes %v", c.Volumes)
	}
	if len(c.Env) != 1 || !strings.HasPrefix(c.Env[0], "PATH=") || !strings.Contains(c.Env[0], ":/usr/bin:") {
		t.Errorf("env %q", c.Env)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  b.Version.Go,
		"org.opencontainers.image.revision": b.Version.Revision,
		"org.opencontainers.image.created":  b.Version.Time.Format(time.RFC3339),
		"org.opencontainers.image.title":    "magnum-conductor",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(b.Version.Time) {
		t.Errorf("history %+v", cf.History)
	}
}

// layerEntry is one file of the image's layer.
type layerEntry struct {
	hdr  *tar.Header
	data []byte
}

func layerFiles(t *testing.T) map[string]layerEntry {
	t.Helper()
	img, _ := images(t)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]layerEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = layerEntry{h, data}
	}
	return files
}

func TestImageFiles(t *testing.T) {
	b := built[0]
	files := layerFiles(t)
	sample, err := os.ReadFile(filepath.Join(b.Src, "etc/magnum/magnum.conf.sample"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		mode     int64
		uid, gid int
		data     []byte
	}{
		"/etc/magnum/magnum.conf.sample": {0o644, 0, 0, sample},
		"/tmp":                           {0o1777, 0, 0, nil},
		"/var/lib/magnum":                {0o750, 42428, 42428, nil},
		"/etc/passwd":                    {0o644, 0, 0, nil},
		"/etc/group":                     {0o644, 0, 0, nil},
		"/etc/nsswitch.conf":             {0o644, 0, 0, nil},
	}
	for _, name := range []string{"magnum-conductor", "magnum-db-manage", "magnumctl"} {
		data, err := os.ReadFile(b.Binaries[name])
		if err != nil {
			t.Fatal(err)
		}
		want["/usr/bin/"+name] = struct {
			mode     int64
			uid, gid int
			data     []byte
		}{0o755, 0, 0, data}
	}
	for path, w := range want {
		e, ok := files[path]
		if !ok {
			t.Errorf("%s is not in the image", path)
			continue
		}
		if e.hdr.Mode != w.mode || e.hdr.Uid != w.uid || e.hdr.Gid != w.gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", path, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, w.mode, w.uid, w.gid)
		}
		if w.data != nil && !bytes.Equal(e.data, w.data) {
			t.Errorf("%s differs from the checkout's build", path)
		}
	}
	for path, e := range files {
		if !e.hdr.ModTime.Equal(b.Version.Time) {
			t.Errorf("%s has time %v, want the commit's %v", path, e.hdr.ModTime, b.Version.Time)
		}
		if _, ok := want[path]; !ok && e.hdr.Typeflag != tar.TypeDir {
			t.Errorf("unexpected file %s in the image", path)
		}
	}
	if !strings.Contains(string(files["/etc/passwd"].data), "\nmagnum:x:42428:42428:magnum:/var/lib/magnum:") {
		t.Errorf("/etc/passwd:\n%s", files["/etc/passwd"].data)
	}
	for _, g := range []string{"root:x:0:magnum\n", "kolla:x:42400:magnum\n", "magnum:x:42428:\n"} {
		if !strings.Contains(string(files["/etc/group"].data), g) {
			t.Errorf("/etc/group lacks %q:\n%s", g, files["/etc/group"].data)
		}
	}
}

// TestImageBinaryRuns runs the conductor taken out of the image.
func TestImageBinaryRuns(t *testing.T) {
	files := layerFiles(t)
	bin := filepath.Join(t.TempDir(), "magnum-conductor")
	if err := os.WriteFile(bin, files["/usr/bin/magnum-conductor"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := "magnum-conductor version " + built[0].Version.Linked(); strings.TrimSpace(string(out)) != want {
		t.Errorf("--version: %q, want %q", out, want)
	}
	// A configuration file that is not there stops it, naming the file (the
	// image's command names /etc/magnum/magnum.conf, which a deployment
	// mounts).
	out, err = exec.Command(bin, "--config-file", "/nonexistent/magnum.conf").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "/nonexistent/magnum.conf") {
		t.Errorf("with a missing configuration file: %v\n%s", err, out)
	}
}
