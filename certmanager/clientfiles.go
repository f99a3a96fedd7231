package certmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/certmanager/pkcs8"
	"github.com/openstack/magnum-conductor/certmanager/store"
)

// Names of the cached client files (create_client_files).
const (
	CacheCAFile   = "ca.crt"
	CacheKeyFile  = "client.key"
	CacheCertFile = "client.crt"
	// cacheRefsFile records which references the cached files come from;
	// files whose references differ from the cluster's are stale.
	cacheRefsFile = "refs"
)

var uuidLike = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// ClientCredentials returns what the Kubernetes monitor presents to the
// cluster's API: the Kubernetes CA, the client certificate and its
// decrypted key (unencrypted PKCS#8 PEM, get_decrypted_private_key).
//
// When Options.TempCacheDir is an existing directory the three are cached in
// <dir>/<cluster uuid>/{ca.crt,client.crt,client.key} (0600, each written to
// a temporary file and renamed) together with the references they came from,
// so a rotation (new references) never serves the old client certificate.
func (m *Manager) ClientCredentials(ctx context.Context, c *objects.Cluster) (caPEM, certPEM, keyPEM []byte, err error) {
	refs := ClusterRefs(c)
	if refs.CA == "" || refs.Client == "" {
		return nil, nil, nil, noCert(c, "CA or client")
	}
	marker := []byte(refs.CA + "\n" + refs.Client + "\n")
	dir, cached := m.cacheDir(c)
	if cached {
		if ca, cert, key, ok := readCache(dir, marker); ok {
			return ca, cert, key, nil
		}
	}
	ca, err := m.backend.Get(ctx, refs.CA, objects.Deref(c.UUID))
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := m.backend.Get(ctx, refs.Client, objects.Deref(c.UUID))
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := pkcs8.Decrypt([]byte(client.PrivateKey), []byte(client.Passphrase))
	if err != nil {
		return nil, nil, nil, corrupt(c, "client certificate", "private key cannot be decrypted", err)
	}
	keyPEM, err = pkcs8.MarshalPlain(key)
	if err != nil {
		return nil, nil, nil, err
	}
	caPEM, certPEM = []byte(ca.Certificate), []byte(client.Certificate)
	if cached {
		if err := m.writeCache(dir, marker, caPEM, certPEM, keyPEM); err != nil {
			m.log.WarnContext(ctx, "cannot cache client certificate files", logAttrs(ctx, c, "dir", dir, "error", err)...)
		}
	}
	return caPEM, certPEM, keyPEM, nil
}

// DeleteClientFiles removes the cluster's client-file cache
// (delete_client_files). Errors are logged.
func (m *Manager) DeleteClientFiles(ctx context.Context, c *objects.Cluster) {
	dir, ok := m.cacheDir(c)
	if !ok {
		return
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		m.log.WarnContext(ctx, "deleting client files failed", logAttrs(ctx, c, "dir", dir, "error", err)...)
	}
}

// cacheDir returns <TempCacheDir>/<uuid> and whether caching is on: the
// top directory must exist, as in Magnum.
func (m *Manager) cacheDir(c *objects.Cluster) (string, bool) {
	uuid := objects.Deref(c.UUID)
	if m.opts.TempCacheDir == "" || !uuidLike.MatchString(uuid) {
		return "", false
	}
	if fi, err := os.Stat(m.opts.TempCacheDir); err != nil || !fi.IsDir() {
		return "", false
	}
	return filepath.Join(m.opts.TempCacheDir, uuid), true
}

// readCache returns the cached files if they exist and were written for the
// references in marker; the marker is read before and after the files so
// that a concurrent rewrite is never returned half-old.
func readCache(dir string, marker []byte) (ca, cert, key []byte, ok bool) {
	check := func() bool {
		got, err := os.ReadFile(filepath.Join(dir, cacheRefsFile))
		return err == nil && bytes.Equal(got, marker)
	}
	if !check() {
		return nil, nil, nil, false
	}
	var err error
	if ca, err = os.ReadFile(filepath.Join(dir, CacheCAFile)); err != nil {
		return nil, nil, nil, false
	}
	if cert, err = os.ReadFile(filepath.Join(dir, CacheCertFile)); err != nil {
		return nil, nil, nil, false
	}
	if key, err = os.ReadFile(filepath.Join(dir, CacheKeyFile)); err != nil {
		return nil, nil, nil, false
	}
	if !check() {
		return nil, nil, nil, false
	}
	return ca, cert, key, true
}

func (m *Manager) writeCache(dir string, marker, ca, cert, key []byte) error {
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Invalidate first: a reader never pairs the new marker with old files.
	if err := os.Remove(filepath.Join(dir, cacheRefsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{CacheCAFile, ca}, {CacheCertFile, cert}, {CacheKeyFile, key}, {cacheRefsFile, marker}} {
		if err := store.WriteFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}
