package store

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"

	"github.com/openstack/magnum-conductor/internal/osredact"
	"github.com/openstack/magnum-conductor/internal/tlschain"
)

// BarbicanOptions are the service credentials ([keystone_auth]) and the
// Barbican client settings ([barbican_client]) the barbican backend uses.
// Magnum talks to Barbican with an admin context, i.e. these credentials,
// whoever the request comes from.
type BarbicanOptions struct {
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

	// RegionName and EndpointType select Barbican in the catalog
	// (endpoint_type "publicURL", "internalURL", "adminURL" or the bare
	// interface name; "" is public).
	RegionName   string
	EndpointType string

	// Timeout bounds every HTTP request (Keystone and Barbican); 0 is 60 s.
	Timeout time.Duration
	// CAFile and Insecure configure TLS towards Keystone and Barbican.
	CAFile   string
	Insecure bool
}

// Secret and container names as Magnum's barbican_cert_manager writes them.
const (
	secretCertificate   = "Certificate"
	secretPrivateKey    = "Private Key"
	secretIntermediates = "Intermediates"
	secretPassphrase    = "Private Key Passphrase"

	refCertificate   = "certificate"
	refPrivateKey    = "private_key"
	refIntermediates = "intermediates"
	refPassphrase    = "private_key_passphrase"
)

// Barbican is the "barbican" backend: secrets "Certificate", "Private Key",
// optionally "Intermediates" and "Private Key Passphrase" (text/plain), and
// one certificate container named after the certificate whose URL is the
// reference. Reading is a plain GET of the container and its secrets, as
// Magnum master does (no consumer registration).
type Barbican struct {
	opts BarbicanOptions
	log  *slog.Logger

	mu     sync.Mutex
	client *gophercloud.ServiceClient
}

// NewBarbican returns the barbican backend. It authenticates on first use.
func NewBarbican(opts BarbicanOptions, logger *slog.Logger) *Barbican {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	return &Barbican{opts: opts, log: logger}
}

// Type implements Backend.
func (b *Barbican) Type() string { return TypeBarbican }

func (b *Barbican) serviceClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client != nil {
		return b.client, nil
	}
	o := b.opts
	provider, err := openstack.NewClient(o.AuthURL)
	if err != nil {
		return nil, storageError("invalid Keystone auth_url", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" || o.Insecure {
		tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure} //nolint:gosec // operator's choice ([*]insecure)
		if o.CAFile != "" {
			pool, err := tlschain.LoadCAFile(o.CAFile)
			if err != nil {
				return nil, storageError("Barbican: "+err.Error(), err)
			}
			tlsConf.RootCAs = pool
		}
		transport.TLSClientConfig = tlsConf
	}
	provider.HTTPClient = http.Client{Transport: transport, Timeout: o.Timeout}
	auth := gophercloud.AuthOptions{
		IdentityEndpoint: o.AuthURL,
		Username:         o.Username, UserID: o.UserID, Password: o.Password,
		DomainName: o.UserDomainName, DomainID: o.UserDomainID,
		AllowReauth: true,
		Scope: &gophercloud.AuthScope{
			ProjectName: o.ProjectName, ProjectID: o.ProjectID,
			DomainName: o.ProjectDomainName, DomainID: o.ProjectDomainID,
		},
	}
	if auth.Scope.ProjectID != "" {
		auth.Scope.DomainName, auth.Scope.DomainID = "", ""
	}
	if err := openstack.AuthenticateV3(ctx, provider, &auth, gophercloud.EndpointOpts{}); err != nil {
		return nil, storageError("Keystone authentication for Barbican failed: "+osredact.Describe(err), err)
	}
	client, err := openstack.NewKeyManagerV1(provider, gophercloud.EndpointOpts{
		Region: o.RegionName, Availability: availability(o.EndpointType),
	})
	if err != nil {
		return nil, storageError("no Barbican endpoint in the catalog: "+err.Error(), err)
	}
	b.client = client
	return client, nil
}

func availability(endpointType string) gophercloud.Availability {
	switch strings.TrimSuffix(strings.ToLower(endpointType), "url") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

// refID returns the uuid at the end of a Barbican secret or container URL
// (a bare uuid is accepted too).
func refID(ref string) string {
	if u, err := url.Parse(ref); err == nil && u.Path != "" {
		return path.Base(strings.TrimSuffix(u.Path, "/"))
	}
	return ref
}

// Store implements Backend. Secrets already created are deleted again when
// a later step fails.
func (b *Barbican) Store(ctx context.Context, c Cert, name string) (ref string, err error) {
	client, err := b.serviceClient(ctx)
	if err != nil {
		return "", err
	}
	b.log.InfoContext(ctx, "storing certificate container in Barbican", "name", name)
	var created []string
	defer func() {
		if err == nil {
			return
		}
		for _, s := range created {
			if derr := secrets.Delete(context.WithoutCancel(ctx), client, refID(s)).ExtractErr(); derr != nil {
				b.log.WarnContext(ctx, "failed to delete secret during rollback", "secret_ref", s, "error", osredact.Describe(derr))
			} else {
				b.log.InfoContext(ctx, "deleted secret during rollback", "secret_ref", s)
			}
		}
	}()
	parts := []struct{ secretName, refName, payload string }{
		{secretCertificate, refCertificate, c.Certificate},
		{secretPrivateKey, refPrivateKey, c.PrivateKey},
		{secretIntermediates, refIntermediates, c.Intermediates},
		{secretPassphrase, refPassphrase, c.Passphrase},
	}
	var refs []containers.SecretRef
	for _, p := range parts {
		if p.payload == "" {
			continue
		}
		s, err := secrets.Create(ctx, client, secrets.CreateOpts{
			Name: p.secretName, Payload: p.payload, PayloadContentType: "text/plain",
		}).Extract()
		if err != nil {
			return "", storageError(fmt.Sprintf("Barbican secret %q: %s", p.secretName, osredact.Describe(err)), err)
		}
		created = append(created, s.SecretRef)
		refs = append(refs, containers.SecretRef{Name: p.refName, SecretRef: s.SecretRef})
	}
	ctr, err := containers.Create(ctx, client, containers.CreateOpts{
		Type: containers.CertificateContainer, Name: name, SecretRefs: refs,
	}).Extract()
	if err != nil {
		return "", storageError("Barbican certificate container: "+osredact.Describe(err), err)
	}
	if ctr.ContainerRef == "" {
		return "", storageError("Barbican returned no container_ref", nil)
	}
	return ctr.ContainerRef, nil
}

// Get implements Backend.
func (b *Barbican) Get(ctx context.Context, ref, _ string) (*Cert, error) {
	client, err := b.serviceClient(ctx)
	if err != nil {
		return nil, err
	}
	ctr, err := containers.Get(ctx, client, refID(ref)).Extract()
	if err != nil {
		return nil, storageError("Barbican container "+ref+": "+osredact.Describe(err), err)
	}
	var c Cert
	for _, s := range ctr.SecretRefs {
		var dst *string
		switch s.Name {
		case refCertificate:
			dst = &c.Certificate
		case refPrivateKey:
			dst = &c.PrivateKey
		case refIntermediates:
			dst = &c.Intermediates
		case refPassphrase:
			dst = &c.Passphrase
		default:
			continue
		}
		payload, err := b.payload(ctx, client, s.SecretRef)
		if err != nil {
			return nil, storageError(fmt.Sprintf("Barbican secret %s of container %s: %s", s.Name, ref, osredact.Describe(err)), err)
		}
		*dst = payload
	}
	if c.Certificate == "" || c.PrivateKey == "" {
		return nil, storageError("Barbican container "+ref+" has no certificate or private key", nil)
	}
	return &c, nil
}

// payload reads a secret as text/plain; a secret stored as bytes by
// Python's barbicanclient (application/octet-stream) is read with its own
// content type.
func (b *Barbican) payload(ctx context.Context, client *gophercloud.ServiceClient, secretRef string) (string, error) {
	id := refID(secretRef)
	data, err := secrets.GetPayload(ctx, client, id, secrets.GetPayloadOpts{PayloadContentType: "text/plain"}).Extract()
	if err == nil {
		return string(data), nil
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusNotAcceptable) {
		return "", err
	}
	meta, err := secrets.Get(ctx, client, id).Extract()
	if err != nil {
		return "", err
	}
	ct := meta.ContentTypes["default"]
	if ct == "" {
		ct = "application/octet-stream"
	}
	data, err = secrets.GetPayload(ctx, client, id, secrets.GetPayloadOpts{PayloadContentType: ct}).Extract()
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// Delete implements Backend: the secrets (certificate, intermediates,
// passphrase, private key), then the container. A container or secret
// already gone is not an error.
func (b *Barbican) Delete(ctx context.Context, ref, _ string) error {
	client, err := b.serviceClient(ctx)
	if err != nil {
		return err
	}
	b.log.InfoContext(ctx, "recursively deleting certificate container from Barbican", "container_ref", ref)
	ctr, err := containers.Get(ctx, client, refID(ref)).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return storageError("Barbican container "+ref+": "+osredact.Describe(err), err)
	}
	order := map[string]int{refCertificate: 0, refIntermediates: 1, refPassphrase: 2, refPrivateKey: 3}
	ordered := make([]string, 4)
	for _, s := range ctr.SecretRefs {
		if i, ok := order[s.Name]; ok {
			ordered[i] = s.SecretRef
		}
	}
	for _, s := range ordered {
		if s == "" {
			continue
		}
		if err := secrets.Delete(ctx, client, refID(s)).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return storageError("Barbican secret "+s+": "+osredact.Describe(err), err)
		}
	}
	if err := containers.Delete(ctx, client, refID(ref)).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return storageError("Barbican container "+ref+": "+osredact.Describe(err), err)
	}
	return nil
}
