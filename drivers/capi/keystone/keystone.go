// Package keystone implements capi.CredentialIssuer with Keystone v3
// application credentials (gophercloud v2): one restricted, non-expiring
// credential per cluster, created for the requesting user, checked by
// authenticating with it, and deleted when the cluster goes or the credential
// is rotated.
//
// Calls used (Keystone v3 API reference):
//
//	POST   /v3/users/{user_id}/application_credentials       → 201 {application_credential: {id, secret, …}}
//	POST   /v3/auth/tokens (application_credential or password) → 201, X-Subject-Token
//	DELETE /v3/users/{user_id}/application_credentials/{id}   → 204
//
// No version discovery and no service catalog are needed: the identity
// endpoint is the configured auth URL with /v3 appended when missing.
package keystone

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/internal/osredact"
	"github.com/openstack/magnum-conductor/internal/tlschain"
)

// Options configure the Issuer.
type Options struct {
	// AuthURL is the Keystone URL used when the request context carries no
	// auth_url (and always for service-credential calls). main fills it from
	// [keystone_authtoken]www_authenticate_uri, else [keystone_auth]auth_url.
	AuthURL string
	// Timeout bounds every HTTP request to Keystone. Default 30 s.
	Timeout time.Duration
	// CAFile and Insecure configure TLS towards Keystone.
	CAFile   string
	Insecure bool
	// Service holds the [keystone_auth] password credentials used to revoke a
	// credential when the request has no token (periodic tasks run with an
	// admin context, as Magnum's admin context does).
	Service ServiceCredentials
}

// ServiceCredentials are the [keystone_auth] password plugin settings.
type ServiceCredentials struct {
	AuthURL           string
	Username          string
	UserID            string
	Password          string
	UserDomainName    string
	UserDomainID      string
	ProjectName       string
	ProjectID         string
	ProjectDomainName string
	ProjectDomainID   string
}

func (s ServiceCredentials) configured() bool {
	return s.AuthURL != "" && (s.Username != "" || s.UserID != "") && s.Password != ""
}

// Issuer is the Keystone application-credential capi.CredentialIssuer.
type Issuer struct {
	opts Options
	http http.Client
	log  *slog.Logger
}

var _ capi.CredentialIssuer = (*Issuer)(nil)

// New returns an Issuer. It makes no request.
func New(opts Options, log *slog.Logger) (*Issuer, error) {
	if log == nil {
		return nil, errors.New("keystone: a logger is required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if opts.CAFile != "" || opts.Insecure {
		tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.Insecure} //nolint:gosec // operator's choice ([keystone_auth]insecure)
		if opts.CAFile != "" {
			pool, err := tlschain.LoadCAFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("keystone: %w", err)
			}
			tlsConf.RootCAs = pool
		}
		transport.TLSClientConfig = tlsConf
	}
	return &Issuer{opts: opts, http: http.Client{Transport: transport, Timeout: opts.Timeout}, log: log}, nil
}

// identityEndpoint turns an auth URL into the v3 base URL ("…/v3/").
func identityEndpoint(authURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(authURL))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("invalid Keystone URL")
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/v3") {
		p += "/v3"
	}
	u.Path = p + "/"
	return u.String(), nil
}

// client returns an identity v3 client; token may be "" (authentication
// requests carry no token).
func (i *Issuer) client(authURL, token string) (*gophercloud.ServiceClient, error) {
	endpoint, err := identityEndpoint(authURL)
	if err != nil {
		return nil, err
	}
	pc := &gophercloud.ProviderClient{IdentityBase: endpoint, IdentityEndpoint: endpoint, HTTPClient: i.http}
	pc.UseTokenLock()
	if token != "" {
		pc.SetToken(token)
	}
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: endpoint, ResourceBase: endpoint}, nil
}

// authURL is the Keystone URL of the request, else the configured one.
func (i *Issuer) authURL(rc *request.Context) string {
	if rc.AuthURL != "" {
		return rc.AuthURL
	}
	return i.opts.AuthURL
}

func (i *Issuer) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, i.opts.Timeout)
}

// credentialName is magnum-<cluster uuid>-<8 hex>: unique per issue, so a
// rotation can create the new credential while the old one still exists
// (Keystone refuses two credentials of one user with the same name).
func credentialName(c *objects.Cluster) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "magnum-" + objects.Deref(c.UUID) + "-" + hex.EncodeToString(b[:])
}

func clusterLabel(c *objects.Cluster) string {
	if n := objects.Deref(c.Name); n != "" {
		return fmt.Sprintf("%s (%s)", n, objects.Deref(c.UUID))
	}
	return objects.Deref(c.UUID)
}

// Issue implements capi.CredentialIssuer: a restricted application
// credential without expiry for the requesting user, created with the
// request's token.
func (i *Issuer) Issue(ctx context.Context, c *objects.Cluster) (capi.Credential, error) {
	rc := request.From(ctx)
	if rc.AuthToken == "" || rc.UserID == "" {
		return capi.Credential{}, failure("cannot create an application credential: the request carries no user token", nil)
	}
	authURL := i.authURL(rc)
	sc, err := i.client(authURL, rc.AuthToken)
	if err != nil {
		return capi.Credential{}, failure("cannot create an application credential: "+err.Error(), nil)
	}
	ctx, cancel := i.withTimeout(ctx)
	defer cancel()
	name := credentialName(c)
	ac, err := applicationcredentials.Create(ctx, sc, rc.UserID, applicationcredentials.CreateOpts{
		Name:         name,
		Description:  "Cluster API credential of Magnum cluster " + clusterLabel(c),
		Unrestricted: false,
	}).Extract()
	if err != nil {
		return capi.Credential{}, failure("cannot create application credential "+name+": "+osredact.Describe(err), err)
	}
	if ac.ID == "" || ac.Secret == "" {
		return capi.Credential{}, failure("Keystone returned an application credential without id or secret", nil)
	}
	i.log.InfoContext(ctx, "created application credential", append(rc.LogAttrs(),
		"cluster_uuid", objects.Deref(c.UUID), "application_credential_id", ac.ID, "application_credential_name", name)...)
	return capi.Credential{ID: ac.ID, Secret: ac.Secret, AuthURL: authURL, UserID: rc.UserID}, nil
}

// Verify implements capi.CredentialIssuer: it authenticates with the
// application credential (POST /v3/auth/tokens).
func (i *Issuer) Verify(ctx context.Context, cred capi.Credential) error {
	authURL := cred.AuthURL
	if authURL == "" {
		authURL = i.opts.AuthURL
	}
	sc, err := i.client(authURL, "")
	if err != nil {
		return failure("cannot verify the application credential: "+err.Error(), nil)
	}
	ctx, cancel := i.withTimeout(ctx)
	defer cancel()
	r := tokens.Create(ctx, sc, &tokens.AuthOptions{ApplicationCredentialID: cred.ID, ApplicationCredentialSecret: cred.Secret})
	if r.Err != nil {
		return failure("application credential "+cred.ID+" does not authenticate: "+osredact.Describe(r.Err), r.Err)
	}
	if tok, _ := r.ExtractTokenID(); tok == "" {
		return failure("application credential "+cred.ID+" does not authenticate: Keystone returned no token", nil)
	}
	return nil
}

// Revoke implements capi.CredentialIssuer: it deletes the application
// credential with the request's token when there is one (the requesting
// user's credential), else, or when that user does not own it, with the
// [keystone_auth] service credentials for the user it belongs to (cred's
// user, or the cluster's owner when cred names none). An unknown id is not
// an error.
func (i *Issuer) Revoke(ctx context.Context, c *objects.Cluster, cred capi.CredentialRef) error {
	id := cred.ID
	if id == "" {
		return nil
	}
	rc := request.From(ctx)
	owner := cred.UserID
	if owner == "" {
		owner = objects.Deref(c.UserID)
	}
	attrs := append(rc.LogAttrs(), "cluster_uuid", objects.Deref(c.UUID), "application_credential_id", id)
	if rc.AuthToken != "" && rc.UserID != "" {
		gone, err := i.delete(ctx, i.authURL(rc), rc.AuthToken, rc.UserID, id)
		switch {
		case err == nil && (gone || rc.UserID == owner || owner == ""):
			i.log.InfoContext(ctx, "deleted application credential", attrs...)
			return nil
		case err != nil && !gophercloud.ResponseCodeIs(err, http.StatusForbidden) && !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized):
			return failure("cannot delete application credential "+id+": "+osredact.Describe(err), err)
		case !i.opts.Service.configured():
			if err != nil {
				return failure("cannot delete application credential "+id+": "+osredact.Describe(err), err)
			}
			i.log.WarnContext(ctx, "application credential not found under the requesting user and no [keystone_auth] "+
				"service credentials to delete it as its owner; it may remain", append(attrs, "owner_user_id", owner)...)
			return nil
		}
		// Not the caller's (404), not allowed (403) or an expired token
		// (401): the owner's, with the service credentials below.
	}
	if owner == "" {
		return failure("cannot delete application credential "+id+": neither it nor the cluster names a user", nil)
	}
	if !i.opts.Service.configured() {
		return failure("cannot delete application credential "+id+": no user token and no [keystone_auth] service credentials", nil)
	}
	token, err := i.serviceToken(ctx)
	if err != nil {
		return err
	}
	if _, err := i.delete(ctx, i.opts.Service.AuthURL, token, owner, id); err != nil {
		return failure("cannot delete application credential "+id+": "+osredact.Describe(err), err)
	}
	i.log.InfoContext(ctx, "deleted application credential", append(attrs, "with", "service credentials")...)
	return nil
}

// delete deletes users/{user}/application_credentials/{id}; a 404 is
// success with gone=false (the user has no such credential).
func (i *Issuer) delete(ctx context.Context, authURL, token, userID, id string) (deleted bool, err error) {
	sc, err := i.client(authURL, token)
	if err != nil {
		return false, err
	}
	ctx, cancel := i.withTimeout(ctx)
	defer cancel()
	err = applicationcredentials.Delete(ctx, sc, userID, id).ExtractErr()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return false, nil
	}
	return err == nil, err
}

// serviceToken authenticates with the [keystone_auth] password credentials,
// project scoped.
func (i *Issuer) serviceToken(ctx context.Context) (string, error) {
	s := i.opts.Service
	sc, err := i.client(s.AuthURL, "")
	if err != nil {
		return "", failure("[keystone_auth]auth_url: "+err.Error(), nil)
	}
	scope := tokens.Scope{ProjectID: s.ProjectID}
	if s.ProjectID == "" {
		scope = tokens.Scope{ProjectName: s.ProjectName, DomainName: s.ProjectDomainName, DomainID: s.ProjectDomainID}
	}
	ctx, cancel := i.withTimeout(ctx)
	defer cancel()
	r := tokens.Create(ctx, sc, &tokens.AuthOptions{
		Username: s.Username, UserID: s.UserID, Password: s.Password,
		DomainName: s.UserDomainName, DomainID: s.UserDomainID, Scope: scope,
	})
	tok, err := r.ExtractTokenID()
	if err != nil {
		return "", failure("service authentication ([keystone_auth]) failed: "+osredact.Describe(err), err)
	}
	if tok == "" {
		return "", failure("service authentication ([keystone_auth]) failed: Keystone returned no token", nil)
	}
	return tok, nil
}

// failure is AuthorizationFailure(client=keystone, message=msg). msg must
// hold no secret; cause is kept for errors.Is/As, not for the message.
func failure(msg string, cause error) error {
	e := exception.ClassAuthorizationFailure.New(map[string]any{"client": "keystone", "message": msg})
	e.Cause = cause
	return e
}
