package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
)

// DefaultStoragePath is the default of [certificates]storage_path.
const DefaultStoragePath = "/var/lib/magnum/certificates/"

// Local is the "local" backend (testing only, as in Magnum): files
// <dir>/<uuid>.crt, .key, .int and .pass, each written atomically with mode
// 0600.
type Local struct {
	dir string
	log *slog.Logger
}

// NewLocal returns the local backend storing under dir.
func NewLocal(dir string, logger *slog.Logger) *Local {
	if dir == "" {
		dir = DefaultStoragePath
	}
	return &Local{dir: dir, log: logger}
}

// Type implements Backend.
func (b *Local) Type() string { return TypeLocal }

var refPattern = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

func (b *Local) paths(ref string) (crt, key, inter, pass string, err error) {
	if !refPattern.MatchString(ref) {
		return "", "", "", "", storageError(fmt.Sprintf("invalid certificate reference %q", ref), nil)
	}
	base := filepath.Join(b.dir, ref)
	return base + ".crt", base + ".key", base + ".int", base + ".pass", nil
}

// Store implements Backend.
func (b *Local) Store(ctx context.Context, c Cert, _ string) (string, error) {
	b.log.WarnContext(ctx, "storing certificate data on the local filesystem; cert_manager_type 'local' is for testing")
	ref := newUUID()
	crt, key, inter, pass, err := b.paths(ref)
	if err != nil {
		return "", err
	}
	files := []struct{ path, data string }{{crt, c.Certificate}, {key, c.PrivateKey}}
	if c.Intermediates != "" {
		files = append(files, struct{ path, data string }{inter, c.Intermediates})
	}
	if c.Passphrase != "" {
		files = append(files, struct{ path, data string }{pass, c.Passphrase})
	}
	for i, f := range files {
		if err := WriteFileAtomic(f.path, []byte(f.data)); err != nil {
			for _, done := range files[:i] {
				_ = os.Remove(done.path)
			}
			return "", storageError(err.Error(), err)
		}
	}
	return ref, nil
}

// Get implements Backend. A missing .crt or .key is CertificateStorageException.
func (b *Local) Get(ctx context.Context, ref, _ string) (*Cert, error) {
	crt, key, inter, pass, err := b.paths(ref)
	if err != nil {
		return nil, err
	}
	var c Cert
	data, err := os.ReadFile(crt)
	if err != nil {
		return nil, storageError("Certificate could not be read.", err)
	}
	c.Certificate = string(data)
	if data, err = os.ReadFile(key); err != nil {
		return nil, storageError("Private Key could not be read.", err)
	}
	c.PrivateKey = string(data)
	for _, opt := range []struct {
		path string
		dst  *string
	}{{inter, &c.Intermediates}, {pass, &c.Passphrase}} {
		data, err := os.ReadFile(opt.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, storageError(err.Error(), err)
		default:
			*opt.dst = string(data)
		}
	}
	return &c, nil
}

// Delete implements Backend. Files already gone are not an error.
func (b *Local) Delete(ctx context.Context, ref, _ string) error {
	crt, key, inter, pass, err := b.paths(ref)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range []string{crt, key, inter, pass} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return storageError(err.Error(), err)
	}
	return nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory (mode 0600, synced) and a rename, so that a reader never sees a
// half-written file.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	return nil
}
