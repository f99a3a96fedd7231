package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/internal/tlschain"
)

// DriverFactory builds one cluster driver from what the conductor gives it
// (DriverEnv). It runs once, at start-up, before the conductor serves. It
// returns a nil driver (and no error) when the driver is not configured: it
// is then not registered. An error stops the conductor: return one for a
// configuration an operator must fix, not for a back end that does not
// answer yet (report that through drivers.Runner's Ready, and errors
// wrapping drivers.ErrNotReady).
type DriverFactory func(ctx context.Context, env DriverEnv) (drivers.Driver, error)

// DriverEnv is what a driver factory receives.
type DriverEnv struct {
	// Config is the conductor's configuration, as loaded from magnum.conf.
	// The bundled drivers read their own groups from it ([capi_driver],
	// [simulated_driver]); an outside driver reads its own with Options.
	Config *config.Config
	// Options reads the option group named group from the conductor's
	// configuration files into into, a pointer to a struct whose fields
	// carry the tags config.Config's groups carry (ini, default, type, unit,
	// min, max, choices, secret, deprecated), with oslo.config's rules
	// (OS_<GROUP>__<OPTION> environment variables included). Every bad value
	// is reported at once.
	Options func(group string, into any) error
	// Log is the conductor's logger, for the driver to log with; a driver
	// adds its own attributes (component=<its name>).
	Log *slog.Logger
	// Certs gives the clusters' certificate authorities (Magnum's
	// cert_manager: x509keypair, local or Barbican).
	Certs Certificates
	// Keystone holds the conductor's service credentials ([keystone_auth])
	// and opens sessions with them.
	Keystone Keystone
	// Lookup reads records a driver may need beyond its request (templates,
	// a cluster's nodegroups). Drivers normally need none: every request
	// carries its cluster, template and nodegroups. It cannot write: a
	// driver holds no database handle.
	Lookup Lookup
}

// Certificates is the certificate access a driver gets.
type Certificates interface {
	// CAKeyPair returns the PEM certificate and private key of the
	// cluster's CA of caCertType: "" or "kubernetes", "etcd", "front_proxy".
	CAKeyPair(ctx context.Context, c *objects.Cluster, caCertType string) (certPEM, keyPEM []byte, err error)
	// GetCACertificate returns the PEM certificate of the cluster's CA of
	// caCertType.
	GetCACertificate(ctx context.Context, c *objects.Cluster, caCertType string) (string, error)
	// SignCSR signs a PEM certificate request with the cluster's CA of
	// caCertType and returns the PEM certificate.
	SignCSR(ctx context.Context, c *objects.Cluster, csrPEM, caCertType string) (string, error)
}

// Lookup is the read-only database access a driver may get.
type Lookup interface {
	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*objects.ClusterTemplate, error)
	ListNodeGroups(ctx context.Context, clusterUUID string, opts db.ListOpts, f db.NodeGroupFilters) ([]*objects.NodeGroup, error)
}

// Keystone is the conductor's service identity, from [keystone_auth]:
// Client opens an authenticated session with it.
type Keystone struct {
	AuthURL           string
	Username, UserID  string
	Password          string `json:"-"`
	UserDomainName    string
	UserDomainID      string
	ProjectName       string
	ProjectID         string
	ProjectDomainName string
	ProjectDomainID   string
	// CAFile and Insecure configure TLS towards Keystone and the services
	// it lists; Timeout bounds each HTTP request (default 30 s).
	CAFile   string
	Insecure bool
	Timeout  time.Duration
}

// LogValue keeps the password out of logs.
func (k Keystone) LogValue() slog.Value {
	return slog.GroupValue(slog.String("auth_url", k.AuthURL), slog.String("username", k.Username),
		slog.String("user_id", k.UserID), slog.String("project_name", k.ProjectName), slog.String("project_id", k.ProjectID))
}

// ErrNoServiceCredentials is matched by Client's error when [keystone_auth]
// holds no service credentials.
var ErrNoServiceCredentials = errors.New("no service credentials in [keystone_auth]")

// Client returns a gophercloud provider client authenticated with the
// service credentials (a token, re-authenticated when it expires), for the
// driver to reach OpenStack services (openstack.NewComputeV2 and the
// like).
func (k Keystone) Client(ctx context.Context) (*gophercloud.ProviderClient, error) {
	if k.AuthURL == "" || (k.Username == "" && k.UserID == "") || k.Password == "" {
		return nil, ErrNoServiceCredentials
	}
	pc, err := openstack.NewClient(identityURL(k.AuthURL))
	if err != nil {
		return nil, fmt.Errorf("keystone %s: %w", k.AuthURL, err)
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: k.Insecure} //nolint:gosec // [keystone_auth] insecure, as keystoneauth honours it
	if k.CAFile != "" {
		pool, err := tlschain.LoadCAFile(k.CAFile)
		if err != nil {
			return nil, fmt.Errorf("[keystone_auth] cafile: %w", err)
		}
		tlsCfg.RootCAs = pool
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	pc.HTTPClient = http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}}
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: identityURL(k.AuthURL), Username: k.Username, UserID: k.UserID, Password: k.Password,
		DomainName: k.UserDomainName, DomainID: k.UserDomainID, AllowReauth: true,
		Scope: &gophercloud.AuthScope{ProjectName: k.ProjectName, ProjectID: k.ProjectID,
			DomainName: k.ProjectDomainName, DomainID: k.ProjectDomainID},
	}
	if opts.Scope.ProjectName == "" && opts.Scope.ProjectID == "" {
		opts.Scope = nil
	}
	if err := openstack.Authenticate(ctx, pc, opts); err != nil {
		return nil, fmt.Errorf("keystone %s: authenticating the service user: %w", k.AuthURL, err)
	}
	return pc, nil
}

// identityURL is auth_url with /v3 (keystoneauth's discovery, for the
// usual forms).
func identityURL(u string) string {
	u = strings.TrimSuffix(u, "/")
	if !strings.HasSuffix(u, "/v3") {
		u += "/v3"
	}
	return u + "/"
}

// keystoneOf is the service identity of cfg.
func keystoneOf(cfg *config.Config) Keystone {
	k := cfg.KeystoneAuth
	return Keystone{
		AuthURL: k.AuthURL, Username: k.Username, UserID: k.UserID, Password: k.Password,
		UserDomainName: k.UserDomainName, UserDomainID: k.UserDomainID, ProjectName: k.ProjectName, ProjectID: k.ProjectID,
		ProjectDomainName: k.ProjectDomainName, ProjectDomainID: k.ProjectDomainID,
		CAFile: k.Cafile, Insecure: k.Insecure, Timeout: k.Timeout,
	}
}
