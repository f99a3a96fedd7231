// Package cloudsweep removes, when a cluster is deleted, the OpenStack
// resources that the cluster's own controllers created and that Cluster API
// Provider OpenStack does not know about:
//
//   - the Octavia load balancers the OpenStack cloud controller manager
//     creates for Services of type LoadBalancer (named
//     kube_service_<cluster-name>_<namespace>_<service>), with the floating
//     IPs on their VIP ports. Left behind, their ports keep the cluster's
//     subnet in use, so CAPO cannot delete the network and the cluster's
//     delete never ends (vexxhost/magnum-cluster-api #6, #188);
//   - the Cinder volumes the Cinder CSI plugin creates for
//     PersistentVolumes (metadata cinder.csi.openstack.org/cluster =
//     <cluster-name>), which outlive the servers and are billed for ever;
//   - the Nova server groups the driver itself created for the cluster's
//     machines (EnsureServerGroups), by name prefix.
//
// <cluster-name> is what the driver passes to both add-ons (the cloud
// controller manager's --cluster-name, the CSI plugin's --cluster): the
// Cluster API Cluster's name.
//
// Every call goes through gophercloud with the cluster's own application
// credential, so a sweep sees and deletes only the cluster's project's
// resources. Each sweep is idempotent: what is already gone is not an error,
// and what cannot go yet (a load balancer in a PENDING_* state, a volume
// still attached) is counted as remaining so that the caller sweeps again.
package cloudsweep

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
)

// VolumeClusterKey is the volume metadata key the Cinder CSI plugin sets to
// its --cluster value.
const VolumeClusterKey = "cinder.csi.openstack.org/cluster"

// LoadBalancerPrefix is the name prefix of the load balancers the OpenStack
// cloud controller manager creates for a cluster's Services.
func LoadBalancerPrefix(clusterName string) string { return "kube_service_" + clusterName + "_" }

// Cloud says how to reach the cluster's cloud: what the cluster's
// clouds.yaml holds.
type Cloud struct {
	AuthURL                     string
	ApplicationCredentialID     string
	ApplicationCredentialSecret string
	Region                      string
	// Interface is the endpoint interface (public, internal, admin).
	Interface string
	// CACert is PEM, for a cloud whose endpoints use a private CA.
	CACert []byte
}

// What selects the resources a sweep deletes.
type What struct {
	LoadBalancers bool
	Volumes       bool
	// ServerGroupPrefix, when set, selects the Nova server groups whose
	// names start with it (the ones the driver created for the cluster).
	ServerGroupPrefix string
}

// Result is what a sweep did and what it left.
type Result struct {
	DeletedLoadBalancers, DeletedFloatingIPs, DeletedVolumes, DeletedServerGroups int
	// Remaining names what could not be deleted yet and why (a load
	// balancer in a PENDING_* state, a volume still attached); the caller
	// sweeps again later.
	Remaining []string
}

// Done reports whether nothing was left.
func (r Result) Done() bool { return len(r.Remaining) == 0 }

// Sweeper deletes a cluster's cloud resources. The zero value is not
// usable: use New.
type Sweeper struct {
	timeout time.Duration
}

// New returns a Sweeper whose every HTTP request is bounded by timeout
// (30 s when zero).
func New(timeout time.Duration) *Sweeper {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Sweeper{timeout: timeout}
}

// Sweep deletes what w selects for clusterName with cloud's credential.
func (s *Sweeper) Sweep(ctx context.Context, cloud Cloud, clusterName string, w What) (Result, error) {
	if clusterName == "" {
		return Result{}, errors.New("cloudsweep: no cluster name")
	}
	provider, err := s.authenticate(ctx, cloud)
	if err != nil {
		return Result{}, err
	}
	eo := gophercloud.EndpointOpts{Region: cloud.Region, Availability: availability(cloud.Interface)}
	var res Result
	var errs []error
	if w.LoadBalancers {
		errs = append(errs, s.sweepLoadBalancers(ctx, provider, eo, clusterName, &res))
	}
	if w.Volumes {
		errs = append(errs, s.sweepVolumes(ctx, provider, eo, clusterName, &res))
	}
	if w.ServerGroupPrefix != "" {
		errs = append(errs, s.sweepServerGroups(ctx, provider, eo, w.ServerGroupPrefix, &res))
	}
	return res, errors.Join(errs...)
}

func availability(iface string) gophercloud.Availability {
	switch strings.TrimSuffix(strings.ToLower(iface), "url") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

func (s *Sweeper) authenticate(ctx context.Context, cloud Cloud) (*gophercloud.ProviderClient, error) {
	if cloud.AuthURL == "" || cloud.ApplicationCredentialID == "" || cloud.ApplicationCredentialSecret == "" {
		return nil, errors.New("cloudsweep: the cluster's cloud credential is incomplete (auth_url, application_credential_id and _secret are required)")
	}
	provider, err := openstack.NewClient(identityEndpoint(cloud.AuthURL))
	if err != nil {
		return nil, fmt.Errorf("cloudsweep: auth_url: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(cloud.CACert) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cloud.CACert) {
			return nil, errors.New("cloudsweep: the cluster's cacert holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	provider.HTTPClient = http.Client{Transport: transport, Timeout: s.timeout}
	err = openstack.Authenticate(ctx, provider, gophercloud.AuthOptions{
		IdentityEndpoint:            identityEndpoint(cloud.AuthURL),
		ApplicationCredentialID:     cloud.ApplicationCredentialID,
		ApplicationCredentialSecret: cloud.ApplicationCredentialSecret,
	})
	if err != nil {
		// gophercloud's errors carry the URL and the status, never the secret.
		return nil, fmt.Errorf("cloudsweep: authenticate with the cluster's application credential %s: %w", cloud.ApplicationCredentialID, err)
	}
	return provider, nil
}

// identityEndpoint is the auth URL with /v3 (gophercloud needs the
// versioned endpoint to skip version discovery).
func identityEndpoint(authURL string) string {
	u := strings.TrimRight(authURL, "/")
	if !strings.HasSuffix(u, "/v3") {
		u += "/v3"
	}
	return u + "/"
}

func notFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

func conflict(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusConflict) }

func (s *Sweeper) sweepLoadBalancers(ctx context.Context, provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts, clusterName string, res *Result) error {
	lbc, err := openstack.NewLoadBalancerV2(provider, eo)
	if err != nil {
		var nf *gophercloud.ErrEndpointNotFound
		if errors.As(err, &nf) {
			return nil // no Octavia in this cloud: the cloud provider made no load balancers
		}
		return fmt.Errorf("cloudsweep: load-balancer endpoint: %w", err)
	}
	pages, err := loadbalancers.List(lbc, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("cloudsweep: list load balancers: %w", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return fmt.Errorf("cloudsweep: list load balancers: %w", err)
	}
	prefix := LoadBalancerPrefix(clusterName)
	var netc *gophercloud.ServiceClient
	var errs []error
	for _, lb := range lbs {
		if !strings.HasPrefix(lb.Name, prefix) {
			continue
		}
		if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
			res.Remaining = append(res.Remaining, fmt.Sprintf("load balancer %s is %s", lb.Name, lb.ProvisioningStatus))
			continue
		}
		// The floating IP on the VIP port first: deleting the load
		// balancer deletes the port but only disassociates the address.
		if lb.VipPortID != "" {
			if netc == nil {
				if netc, err = openstack.NewNetworkV2(provider, eo); err != nil {
					return fmt.Errorf("cloudsweep: network endpoint: %w", err)
				}
			}
			n, err := deleteFloatingIPs(ctx, netc, lb.VipPortID)
			res.DeletedFloatingIPs += n
			if err != nil {
				errs = append(errs, fmt.Errorf("cloudsweep: floating IPs of load balancer %s: %w", lb.Name, err))
				continue
			}
		}
		err := loadbalancers.Delete(ctx, lbc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		switch {
		case err == nil:
			res.DeletedLoadBalancers++
		case notFound(err):
		case conflict(err): // became PENDING_* meanwhile
			res.Remaining = append(res.Remaining, fmt.Sprintf("load balancer %s is busy", lb.Name))
		default:
			errs = append(errs, fmt.Errorf("cloudsweep: delete load balancer %s: %w", lb.Name, err))
		}
	}
	return errors.Join(errs...)
}

func deleteFloatingIPs(ctx context.Context, netc *gophercloud.ServiceClient, portID string) (int, error) {
	pages, err := floatingips.List(netc, floatingips.ListOpts{PortID: portID}).AllPages(ctx)
	if err != nil {
		return 0, err
	}
	fips, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, fip := range fips {
		if fip.PortID != portID {
			continue // a server that ignores the filter must not cost another address
		}
		if err := floatingips.Delete(ctx, netc, fip.ID).ExtractErr(); err != nil && !notFound(err) {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Sweeper) sweepVolumes(ctx context.Context, provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts, clusterName string, res *Result) error {
	bsc, err := openstack.NewBlockStorageV3(provider, eo)
	if err != nil {
		var nf *gophercloud.ErrEndpointNotFound
		if errors.As(err, &nf) {
			return nil // no Cinder: the CSI plugin made no volumes
		}
		return fmt.Errorf("cloudsweep: block-storage endpoint: %w", err)
	}
	pages, err := volumes.List(bsc, volumes.ListOpts{Metadata: map[string]string{VolumeClusterKey: clusterName}}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("cloudsweep: list volumes: %w", err)
	}
	vols, err := volumes.ExtractVolumes(pages)
	if err != nil {
		return fmt.Errorf("cloudsweep: list volumes: %w", err)
	}
	var errs []error
	for _, v := range vols {
		if v.Metadata[VolumeClusterKey] != clusterName {
			continue // never trust a filter with another cluster's data
		}
		switch v.Status {
		case "available", "error", "error_restoring", "error_extending":
		case "deleting":
			continue
		default: // in-use, attaching, detaching, creating, …: its server goes first
			res.Remaining = append(res.Remaining, fmt.Sprintf("volume %s is %s", v.ID, v.Status))
			continue
		}
		err := volumes.Delete(ctx, bsc, v.ID, volumes.DeleteOpts{}).ExtractErr()
		switch {
		case err == nil:
			res.DeletedVolumes++
		case notFound(err):
		case conflict(err) || gophercloud.ResponseCodeIs(err, http.StatusBadRequest): // state changed meanwhile
			res.Remaining = append(res.Remaining, fmt.Sprintf("volume %s cannot be deleted yet", v.ID))
		default:
			errs = append(errs, fmt.Errorf("cloudsweep: delete volume %s: %w", v.ID, err))
		}
	}
	return errors.Join(errs...)
}
