// Package oci builds the conductor's container image without a container
// daemon: one layer on an empty base holding the three static binaries, the
// sample configuration and the few files a Go program expects (/etc/passwd
// and /etc/group naming the magnum user, /etc/nsswitch.conf, /tmp), with an
// OCI manifest and configuration, written as one tarball that is both an
// OCI image layout and a `docker save` archive, so that `podman load`,
// `docker load`, `skopeo copy oci-archive:…` and `skopeo copy
// docker-archive:…` all read it. Every timestamp is the commit's, so the
// same commit and binaries give the same bytes.
//
// The user is Kolla's magnum (uid and gid 42428, non-root), a member of
// group root (gid 0), so that it reads the 0660 root:root files deployment
// tools write (kolla-ansible's /etc/kolla/magnum-conductor/magnum.conf), and
// of Kolla's group kolla (42400), as in Kolla's images; the
// command is `magnum-conductor --config-file /etc/magnum/magnum.conf`, as
// Kolla's config.json runs it; /var/lib/magnum, the magnum user's home, is a
// volume, as Kolla mounts one there.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openstack/magnum-conductor/packaging/version"
)

// The image's user: Kolla's magnum (kolla/common/users.py). User names the
// uid alone, so that runtimes take the primary group from /etc/passwd and
// the supplementary groups (root) from /etc/group: with "uid:gid" runc,
// podman and Docker set no supplementary group.
const (
	UID  = 42428
	GID  = 42428
	User = "42428"
	// KollaGID is Kolla's group kolla, of which Kolla's users are members.
	KollaGID = 42400
)

// Paths in the image.
const (
	ConfigFile   = "/etc/magnum/magnum.conf"
	SampleConfig = "/etc/magnum/magnum.conf.sample"
	StateDir     = "/var/lib/magnum"
	BinDir       = "/usr/bin"
)

// Repository is the image's name in the archive (docker load:
// magnum-conductor:<tag>; podman load: localhost/magnum-conductor:<tag>).
const Repository = "magnum-conductor"

// Options say what to put in the image.
type Options struct {
	// Binaries are the static binaries by name (gobuild.Build).
	Binaries map[string]string
	// Src is the checkout, for etc/magnum/magnum.conf.sample.
	Src string
	// Version is the commit the binaries were built from.
	Version version.Info
	// GOARCH is the architecture the binaries were built for.
	GOARCH string
	// Out is the tarball written.
	Out string
}

// FileName is the tarball's conventional name.
func FileName(info version.Info, goarch string) string {
	return fmt.Sprintf("%s-image_%s_%s.tar", Repository, info.ImageTag(), goarch)
}

// Reference is the image's name and tag in the archive.
func Reference(info version.Info) string { return Repository + ":" + info.ImageTag() }

// Image assembles the image.
func Image(opts Options) (v1.Image, error) {
	layerTar, err := rootfs(opts)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression))
	if err != nil {
		return nil, fmt.Errorf("oci: layer: %w", err)
	}
	created := v1.Time{Time: opts.Version.Time}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "mkpkg image (packaging/oci): magnum-conductor, magnum-db-manage, magnumctl, " + SampleConfig,
			Comment:   "magnum-conductor in Go " + opts.Version.Go,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = opts.GOARCH
	cf.OS = "linux"
	cf.Created = created
	cf.Config = v1.Config{
		User:       User,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Cmd:        []string{"magnum-conductor", "--config-file", ConfigFile},
		Volumes:    map[string]struct{}{StateDir: {}},
		StopSignal: "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "magnum-conductor",
			"org.opencontainers.image.description": "OpenStack Magnum's conductor in Go, a drop-in replacement for the Python magnum-conductor",
			"org.opencontainers.image.version":     opts.Version.Go,
			"org.opencontainers.image.revision":    opts.Version.Revision,
			"org.opencontainers.image.created":     opts.Version.Time.Format(time.RFC3339),
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	return img, nil
}

// Build assembles the image and writes its tarball to opts.Out.
func Build(ctx context.Context, opts Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	img, err := Image(opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(opts.Out), 0o755); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	tmp := opts.Out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	defer os.Remove(tmp)
	if err := WriteArchive(f, img, opts.Version.ImageTag(), opts.Version.Time); err != nil {
		_ = f.Close() // the archive's error is the one to report
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	if err := os.Rename(tmp, opts.Out); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}

// entry is one file of the layer.
type entry struct {
	name     string // without the leading /
	mode     int64
	uid, gid int
	data     []byte
	dir      bool
}

// rootfs is the layer's uncompressed tar.
func rootfs(opts Options) ([]byte, error) {
	sample, err := os.ReadFile(filepath.Join(opts.Src, "etc/magnum/magnum.conf.sample"))
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	entries := []entry{
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nmagnum:x:%d:%d:magnum:%s:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
			UID, GID, StateDir))},
		// magnum is in group root, to read the 0660 root:root
		// configuration files deployment tools write, and in Kolla's group
		// kolla, as in Kolla's images (/var/log/kolla is fluentd:kolla 2775).
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:magnum\nkolla:x:%d:magnum\nmagnum:x:%d:\nnogroup:x:65534:\n", KollaGID, GID))},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: strings.TrimPrefix(SampleConfig, "/"), mode: 0o644, data: sample},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: strings.TrimPrefix(StateDir, "/"), mode: 0o750, uid: UID, gid: GID, dir: true},
	}
	for _, b := range []string{"magnum-conductor", "magnum-db-manage", "magnumctl"} {
		p, ok := opts.Binaries[b]
		if !ok {
			return nil, fmt.Errorf("oci: binary %s not built", b)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
		entries = append(entries, entry{name: strings.TrimPrefix(BinDir, "/") + "/" + b, mode: 0o755, data: data})
	}
	// Parent directories, 0755 root, unless listed.
	have := map[string]bool{}
	for _, e := range entries {
		have[e.name] = true
	}
	for _, e := range entries {
		for d := path.Dir(e.name); d != "."; d = path.Dir(d) {
			if !have[d] {
				have[d] = true
				entries = append(entries, entry{name: d, mode: 0o755, dir: true})
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			Uname: name(e.uid), Gname: name(e.gid),
			ModTime: opts.Version.Time,
		}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	return b.Bytes(), nil
}

func name(id int) string {
	if id == 0 {
		return "root"
	}
	return "magnum"
}

// WriteArchive writes img as one tarball that is an OCI image layout
// (oci-layout, index.json, blobs/sha256/…) and a `docker save` archive
// (manifest.json naming the same blobs), as `docker save` itself writes
// since Docker 25. tag is the image's tag; every entry has time t.
func WriteArchive(w io.Writer, img v1.Image, tag string, t time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	mdig, err := img.Digest()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	mt, err := img.MediaType()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	cdig, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	blobs := map[string][]byte{blobPath(mdig): manifest, blobPath(cdig): config}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return fmt.Errorf("oci: %w", err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return fmt.Errorf("oci: %w", err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("oci: %w", err)
		}
		blobs[blobPath(d)] = data
		layerPaths = append(layerPaths, blobPath(d))
	}

	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   mt,
			Size:        int64(len(manifest)),
			Digest:      mdig,
			Annotations: map[string]string{"org.opencontainers.image.ref.name": Repository + ":" + tag},
		}},
	})
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	dockerManifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blobPath(cdig), RepoTags: []string{Repository + ":" + tag}, Layers: layerPaths}})
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}

	tw := tar.NewWriter(w)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: t})
	}
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)),
			ModTime: t}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	names := make([]string, 0, len(blobs))
	for n := range blobs {
		names = append(names, n)
	}
	sort.Strings(names)
	if err := dir("blobs/"); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	if err := dir("blobs/sha256/"); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	for _, n := range names {
		if err := file(n, blobs[n]); err != nil {
			return fmt.Errorf("oci: %w", err)
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"index.json", index},
		{"manifest.json", dockerManifest},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	} {
		if err := file(f.name, f.data); err != nil {
			return fmt.Errorf("oci: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
