// Package certmanager creates, signs, stores and deletes the certificates of
// Magnum clusters: the Go twin of magnum.conductor.handlers.common.cert_manager
// over magnum.common.x509 and magnum.common.cert_manager.
//
// Each cluster has a Kubernetes CA (ca_cert_ref), an etcd CA
// (etcd_ca_cert_ref), a front-proxy CA (front_proxy_ca_cert_ref) and the
// conductor's client certificate CN=admin, O=system:masters signed by the
// Kubernetes CA (magnum_cert_ref). Keys are RSA, stored as encrypted PKCS#8
// with a 12-character short-id passphrase, in the backend chosen by
// [certificates]cert_manager_type, readable by the Python conductor and the
// other way round.
//
// Fixes over Magnum (reference §K.5–K.8): all four certificates are deleted;
// rotation returns the old references so the caller deletes them once the
// driver accepted the new ones; the client-file cache is written atomically
// and invalidated on rotation; dates are UTC; a CSR carrying an SKI is signed;
// a CSR asking for O=system:masters needs an admin caller.
package certmanager

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager/keypool"
	"github.com/openstack/magnum-conductor/certmanager/pkcs8"
	"github.com/openstack/magnum-conductor/certmanager/pki"
	"github.com/openstack/magnum-conductor/certmanager/store"
)

// Names and subjects Magnum uses.
const (
	// ClientCertName is the friendly name of the client certificate
	// (CONDUCTOR_CLIENT_NAME).
	ClientCertName = "Magnum-Conductor"
	// ClientCommonName and ClientOrganization are the client certificate's
	// subject, which Kubernetes maps to the cluster-admin group.
	ClientCommonName   = "admin"
	ClientOrganization = "system:masters"
)

// CA certificate types accepted by SignCSR and GetCACertificate ("" or any
// other value is the Kubernetes CA).
const (
	CATypeKubernetes    = ""
	CATypeEtcd          = "etcd"
	CATypeFrontProxy    = "front_proxy"
	CATypeFrontProxyAlt = "front-proxy"
)

// BarbicanOptions are the [keystone_auth] and [barbican_client] settings of
// the barbican backend.
type BarbicanOptions = store.BarbicanOptions

// Options configure the Manager. Zero values mean Magnum's defaults.
type Options struct {
	// CertManagerType is [certificates]cert_manager_type: "barbican"
	// (default when ""), "x509keypair" or "local".
	CertManagerType string
	// StoragePath is [certificates]storage_path for the local backend
	// (default /var/lib/magnum/certificates/).
	StoragePath string
	// Barbican holds [keystone_auth] and [barbican_client] for the barbican
	// backend.
	Barbican BarbicanOptions

	// AllowCA, AllowedExtensions, AllowedKeyUsage, TermOfValidity (days) and
	// RSAKeySize are the [x509] group. Nil lists mean the defaults
	// (pki.DefaultAllowedExtensions, pki.DefaultAllowedKeyUsage); 0 means
	// 1825 days and 2048 bits.
	AllowCA           bool
	AllowedExtensions []string
	AllowedKeyUsage   []string
	TermOfValidity    int
	RSAKeySize        int

	// AllowSystemMastersCSR turns off a protection that is ON by default
	// (reference §K.7): with false, SignCSR refuses a CSR whose subject has
	// O=system:masters (cluster-admin in Kubernetes) unless the caller is
	// admin (request.From(ctx).IsAdmin), with NotAuthorized. Set true for
	// Magnum's behaviour of signing any subject for anyone allowed
	// certificate:create.
	AllowSystemMastersCSR bool

	// TempCacheDir is [cluster]temp_cache_dir: when it names an existing
	// directory, ClientCredentials caches the CA, client certificate and
	// decrypted client key under <dir>/<cluster uuid>/ (mode 0600).
	TempCacheDir string

	// KeyPoolSize is the number of pre-generated RSA keys Run keeps ready
	// ([x509]key_pool_size, default 4: one cluster create). 0 or less
	// disables the pool: every key is generated when needed.
	KeyPoolSize int

	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
}

// Manager implements certificate handling for the conductor and the health
// monitor. Its methods are safe for concurrent use.
type Manager struct {
	backend store.Backend
	pool    *keypool.Pool
	issuer  pki.Issuer
	policy  pki.Policy
	opts    Options
	log     *slog.Logger

	cacheMu sync.Mutex // serialises client-file cache writes
}

// New returns a Manager with the backend opts.CertManagerType names. db is
// needed by the x509keypair backend only (a *db.Store satisfies it).
func New(opts Options, db store.KeyPairDB, logger *slog.Logger) (*Manager, error) {
	var backend store.Backend
	switch opts.CertManagerType {
	case store.TypeX509KeyPair:
		if db == nil {
			return nil, errors.New("certmanager: cert_manager_type x509keypair needs a database")
		}
		backend = store.NewX509KeyPair(db)
	case store.TypeBarbican, "":
		backend = store.NewBarbican(opts.Barbican, logger)
	case store.TypeLocal:
		backend = store.NewLocal(opts.StoragePath, logger)
	default:
		return nil, fmt.Errorf("certmanager: unknown cert_manager_type %q (barbican, x509keypair or local)", opts.CertManagerType)
	}
	return NewWithBackend(opts, backend, logger), nil
}

// NewWithBackend returns a Manager over backend (opts.CertManagerType is
// ignored).
func NewWithBackend(opts Options, backend store.Backend, logger *slog.Logger) *Manager {
	if opts.RSAKeySize <= 0 {
		opts.RSAKeySize = pki.DefaultRSAKeySize
	}
	if opts.TermOfValidity <= 0 {
		opts.TermOfValidity = pki.DefaultTermOfValidityDays
	}
	return &Manager{
		backend: backend,
		pool:    keypool.New(opts.KeyPoolSize, opts.RSAKeySize, logger),
		issuer:  pki.Issuer{TermOfValidityDays: opts.TermOfValidity, Now: opts.Now},
		policy: pki.Policy{
			AllowCA: opts.AllowCA, AllowedExtensions: opts.AllowedExtensions, AllowedKeyUsage: opts.AllowedKeyUsage,
		},
		opts: opts,
		log:  logger,
	}
}

// Run keeps the key pool filled until ctx is done; run it on its own
// goroutine. Without Run, every key is generated when needed.
func (m *Manager) Run(ctx context.Context) error { return m.pool.Run(ctx) }

// Pool is the manager's key pool (for warm-up with Fill, and metrics).
func (m *Manager) Pool() *keypool.Pool { return m.pool }

// Backend is the storage backend in use.
func (m *Manager) Backend() store.Backend { return m.backend }

// Refs are the four certificate references of a cluster.
type Refs struct {
	CA, Etcd, FrontProxy, Client string
}

// List returns the non-empty references.
func (r Refs) List() []string {
	var out []string
	for _, s := range []string{r.CA, r.Etcd, r.FrontProxy, r.Client} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ClusterRefs returns the references recorded on c.
func ClusterRefs(c *objects.Cluster) Refs {
	return Refs{
		CA: objects.Deref(c.CACertRef), Etcd: objects.Deref(c.EtcdCACertRef),
		FrontProxy: objects.Deref(c.FrontProxyCACertRef), Client: objects.Deref(c.MagnumCertRef),
	}
}

func setRefs(c *objects.Cluster, r Refs) {
	c.CACertRef = objects.Str(r.CA)
	c.EtcdCACertRef = objects.Str(r.Etcd)
	c.FrontProxyCACertRef = objects.Str(r.FrontProxy)
	c.MagnumCertRef = objects.Str(r.Client)
}

// issuerName is the cluster's name, or its uuid when it has none.
func issuerName(c *objects.Cluster) string {
	if c.Name != nil {
		return *c.Name
	}
	return objects.Deref(c.UUID)
}

func logAttrs(ctx context.Context, c *objects.Cluster, more ...any) []any {
	return append(append([]any{"cluster_uuid", objects.Deref(c.UUID)}, request.From(ctx).LogAttrs()...), more...)
}

// GenerateForCluster is generate_certificates_to_cluster: it creates the
// three CAs and the client certificate, stores them and sets the four *_ref
// fields of c (in memory; the caller saves c). On failure nothing stays
// stored, c is unchanged and the error is CertificatesToClusterFailed.
func (m *Manager) GenerateForCluster(ctx context.Context, c *objects.Cluster) error {
	refs, err := m.generate(ctx, c)
	if err != nil {
		m.log.ErrorContext(ctx, "failed to generate certificates for cluster", logAttrs(ctx, c, "error", err)...)
		e := exception.ClassCertificatesToClusterFailed.New(map[string]any{"cluster_uuid": objects.Deref(c.UUID)})
		e.Cause = err
		return e
	}
	setRefs(c, refs)
	return nil
}

// RotateForCluster generates and stores a new set of certificates for c
// (rotate_ca_certificate), sets the new references on c and returns the old
// ones. The caller hands c to the driver and then calls DeleteRefs with the
// old references once the driver accepted the new certificates (or with
// ClusterRefs(c) of the new set, after restoring the old, if it refused).
// The client-file cache of c is invalidated.
func (m *Manager) RotateForCluster(ctx context.Context, c *objects.Cluster) (old []string, err error) {
	oldRefs := ClusterRefs(c)
	if err := m.GenerateForCluster(ctx, c); err != nil {
		return nil, err
	}
	m.DeleteClientFiles(ctx, c)
	m.log.InfoContext(ctx, "rotated cluster certificates", logAttrs(ctx, c, "old_refs", oldRefs.List(), "new_refs", ClusterRefs(c).List())...)
	return oldRefs.List(), nil
}

// DeleteRefs deletes the certificates stored under refs. Errors are logged,
// not returned, as delete_certificates_from_cluster does.
func (m *Manager) DeleteRefs(ctx context.Context, clusterUUID string, refs []string) {
	for _, ref := range refs {
		if ref == "" {
			continue
		}
		if err := m.backend.Delete(ctx, ref, clusterUUID); err != nil {
			m.log.WarnContext(ctx, "deleting certificate failed", append([]any{"cluster_uuid", clusterUUID, "cert_ref", ref, "error", err},
				request.From(ctx).LogAttrs()...)...)
		}
	}
}

// DeleteForCluster is delete_certificates_from_cluster, but deletes all four
// certificates (Magnum leaks the etcd and front-proxy CAs) and the client
// files. Errors are logged; the error result is always nil.
func (m *Manager) DeleteForCluster(ctx context.Context, c *objects.Cluster) error {
	m.DeleteRefs(ctx, objects.Deref(c.UUID), ClusterRefs(c).List())
	m.DeleteClientFiles(ctx, c)
	return nil
}

func (m *Manager) generate(ctx context.Context, c *objects.Cluster) (Refs, error) {
	name := issuerName(c)
	m.log.DebugContext(ctx, "generating certificates", logAttrs(ctx, c, "issuer_name", name)...)
	keys, err := m.pool.GetN(ctx, 4)
	if err != nil {
		return Refs{}, err
	}
	// Each certificate is signed and its key encrypted on its own goroutine;
	// the client certificate waits for the Kubernetes CA.
	certs := make([]store.Cert, 4)
	errs := make([]error, 4)
	caReady := make(chan *x509.Certificate, 1)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			var der []byte
			var err error
			if i < 3 {
				der, err = m.issuer.NewCA(keys[i], name)
				if i == 0 {
					var ca *x509.Certificate
					if err == nil {
						ca, err = x509.ParseCertificate(der)
					}
					caReady <- ca // nil when the CA failed
				}
			} else if ca := <-caReady; ca == nil {
				err = errors.New("no Kubernetes CA to sign with")
			} else {
				der, err = m.issuer.NewClient(keys[3].Public(), ClientCommonName, ClientOrganization, ca, keys[0])
			}
			if err != nil {
				errs[i] = fmt.Errorf("create certificate %d: %w", i, err)
				return
			}
			pw := ShortID()
			keyPEM, err := pkcs8.Encrypt(keys[i], []byte(pw))
			if err != nil {
				errs[i] = fmt.Errorf("encrypt private key: %w", err)
				return
			}
			certs[i] = store.Cert{Certificate: pki.EncodeCertificate(der), PrivateKey: string(keyPEM), Passphrase: pw}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Refs{}, err
	}

	names := []string{name, name, name, ClientCertName}
	refs := make([]string, 4)
	for i := range certs {
		wg.Go(func() { refs[i], errs[i] = m.backend.Store(ctx, certs[i], names[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		m.DeleteRefs(context.WithoutCancel(ctx), objects.Deref(c.UUID), refs)
		return Refs{}, err
	}
	m.log.DebugContext(ctx, "certificates stored", logAttrs(ctx, c, "refs", refs)...)
	return Refs{CA: refs[0], Etcd: refs[1], FrontProxy: refs[2], Client: refs[3]}, nil
}

// caRef picks the CA reference for ca_cert_type as Magnum does.
func caRef(c *objects.Cluster, caCertType string) (ref, label string) {
	switch caCertType {
	case CATypeEtcd:
		return objects.Deref(c.EtcdCACertRef), "etcd CA"
	case CATypeFrontProxy, CATypeFrontProxyAlt:
		return objects.Deref(c.FrontProxyCACertRef), "front-proxy CA"
	}
	return objects.Deref(c.CACertRef), "CA"
}

func noCert(c *objects.Cluster, label string) error {
	return exception.ClassCertificateStorageException.New(map[string]any{
		"msg": fmt.Sprintf("cluster %s has no %s certificate", objects.Deref(c.UUID), label),
	})
}

// GetCACertificate is get_cluster_ca_certificate(...).get_certificate():
// the PEM of the Kubernetes CA, or of the etcd CA (caCertType "etcd") or the
// front-proxy CA ("front_proxy" or "front-proxy").
func (m *Manager) GetCACertificate(ctx context.Context, c *objects.Cluster, caCertType string) (string, error) {
	ref, label := caRef(c, caCertType)
	if ref == "" {
		return "", noCert(c, label)
	}
	cert, err := m.backend.Get(ctx, ref, objects.Deref(c.UUID))
	if err != nil {
		return "", err
	}
	return cert.Certificate, nil
}

// SignCSR is sign_node_certificate: it signs the PEM CSR with the CA
// caCertType selects and returns the certificate PEM (no trailing newline).
// Errors: InvalidCsr (does not parse, bad signature), CertificateValidationError
// (a forbidden critical extension or key usage), NotAuthorized (O=system:masters
// from a non-admin, see Options.AllowSystemMastersCSR), CertificateStorageException
// (CA missing, unreadable or its key does not decrypt).
func (m *Manager) SignCSR(ctx context.Context, c *objects.Cluster, csrPEM, caCertType string) (string, error) {
	ref, label := caRef(c, caCertType)
	if ref == "" {
		return "", noCert(c, label)
	}
	csr, err := pki.ParseCSR(csrPEM)
	if err != nil {
		m.log.WarnContext(ctx, "received invalid CSR", logAttrs(ctx, c, "error", errors.Unwrap(err))...)
		return "", err
	}
	if !m.opts.AllowSystemMastersCSR && pki.HasOrganization(csr, ClientOrganization) && !request.From(ctx).IsAdmin {
		m.log.WarnContext(ctx, "refused CSR for O=system:masters from a non-admin caller", logAttrs(ctx, c)...)
		return "", exception.ClassNotAuthorized.WithMessage(
			"Only an administrator may have a certificate signed for organization system:masters.", nil)
	}
	caPEM, caKey, err := m.loadCA(ctx, c, ref, label)
	if err != nil {
		return "", err
	}
	der, err := m.issuer.SignCSR(csr, caPEM, caKey, m.policy)
	if err != nil {
		var e *exception.Error
		if errors.As(err, &e) {
			return "", err
		}
		return "", fmt.Errorf("sign certificate: %w", err)
	}
	m.log.InfoContext(ctx, "signed certificate", logAttrs(ctx, c, "ca_cert_type", caCertType, "cert_ref", ref)...)
	return pki.EncodeCertificate(der), nil
}

func (m *Manager) loadCA(ctx context.Context, c *objects.Cluster, ref, label string) (*x509.Certificate, crypto.Signer, error) {
	stored, err := m.backend.Get(ctx, ref, objects.Deref(c.UUID))
	if err != nil {
		return nil, nil, err
	}
	cert, err := pki.ParseCertificate(stored.Certificate)
	if err != nil {
		return nil, nil, corrupt(c, label, "certificate does not parse", err)
	}
	key, err := pkcs8.Decrypt([]byte(stored.PrivateKey), []byte(stored.Passphrase))
	if err != nil {
		return nil, nil, corrupt(c, label, "private key cannot be decrypted", err)
	}
	return cert, key, nil
}

func corrupt(c *objects.Cluster, label, what string, cause error) error {
	e := exception.ClassCertificateStorageException.New(map[string]any{
		"msg": fmt.Sprintf("the %s of cluster %s is unusable: %s", label, objects.Deref(c.UUID), what),
	})
	e.Cause = cause
	return e
}

// ShortID returns a random 12-character id of [a-z2-7], as
// magnum.common.short_id.generate_id (60 random bits, base32).
func ShortID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [8]byte
	_, _ = rand.Read(b[:])
	v := binary.BigEndian.Uint64(b[:])
	out := make([]byte, 12)
	for i := range out {
		out[i] = alphabet[v>>(59-5*i)&31]
	}
	return string(out)
}

// CAKeyPair returns a cluster CA's certificate and its decrypted private key
// (unencrypted PKCS#8 PEM) for caCertType "" (Kubernetes, ca_cert_ref),
// "etcd" or "front_proxy"/"front-proxy". The Cluster API driver pushes these
// to the management cluster so CAPI signs with Magnum's CAs. Errors:
// CertificateStorageException (reference missing, unreadable, or the key
// does not decrypt or does not belong to the certificate). The key is never
// logged.
func (m *Manager) CAKeyPair(ctx context.Context, c *objects.Cluster, caCertType string) (certPEM, keyPEM []byte, err error) {
	ref, label := caRef(c, caCertType)
	if ref == "" {
		return nil, nil, noCert(c, label)
	}
	stored, err := m.backend.Get(ctx, ref, objects.Deref(c.UUID))
	if err != nil {
		return nil, nil, err
	}
	cert, err := pki.ParseCertificate(stored.Certificate)
	if err != nil {
		return nil, nil, corrupt(c, label, "certificate does not parse", err)
	}
	key, err := pkcs8.Decrypt([]byte(stored.PrivateKey), []byte(stored.Passphrase))
	if err != nil {
		return nil, nil, corrupt(c, label, "private key cannot be decrypted", err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, corrupt(c, label, "private key does not match the certificate", nil)
	}
	keyPEM, err = pkcs8.MarshalPlain(key)
	if err != nil {
		return nil, nil, corrupt(c, label, "private key cannot be encoded", err)
	}
	m.log.DebugContext(ctx, "read CA key pair", logAttrs(ctx, c, "ca_cert_type", caCertType, "cert_ref", ref)...)
	return []byte(stored.Certificate), keyPEM, nil
}
