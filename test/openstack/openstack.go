// Package openstack gives tests a real OpenStack control plane: Keystone,
// Nova (fake virt driver), Placement, Neutron (ML2 without agents), Glance,
// Octavia (noop amphorae) and Cinder (the fake logging volume driver), from
// Debian's packages in a chroot, on 127.0.0.1. The scripts beside this file
// build the chroot (build) and start (up) and stop (down) the services;
// docs/openstack-testing.md says what runs and why.
//
// A test calls Need, which brings the plane up once per test binary (up is
// idempotent and serialised across processes), then NewProject for a
// project of its own with a user holding the roles a Magnum user has. The
// project's leftovers are deleted when the test ends, after its own
// assertions and cleanups.
package openstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

// DefaultRoot is the chroot the build script makes; OSTEST_ROOT moves it
// (the scripts read the same variable).
const DefaultRoot = "/srv/openstack-zed"

// UpTimeout bounds the up script: a cold start (databases, migrations,
// thirteen services) takes about three minutes on two cores.
const UpTimeout = 15 * time.Minute

// Cloud is the running control plane, as the up script's state file
// describes it.
type Cloud struct {
	// AuthURL is Keystone's v3 URL (http://127.0.0.1:…/v3).
	AuthURL string `json:"auth_url"`
	Region  string `json:"region"`
	// Endpoints are the catalogue's public URLs by service type (identity,
	// compute, placement, network, image, volumev3, load-balancer), as
	// Keystone lists them ("%(project_id)s" left in Cinder's).
	Endpoints map[string]string `json:"endpoints"`
	// Admin is the cloud admin (project admin in domain Default).
	Admin struct {
		Username          string `json:"username"`
		Password          string `json:"password"`
		ProjectName       string `json:"project_name"`
		UserDomainName    string `json:"user_domain_name"`
		ProjectDomainName string `json:"project_domain_name"`
	} `json:"admin"`
	// ExternalNetworkID is the router:external network "public", whose
	// subnet is a loopback range: every floating IP is on 127.0.0.0/8.
	ExternalNetworkID   string `json:"external_network_id"`
	ExternalNetworkName string `json:"external_network_name"`
	ExternalSubnetCIDR  string `json:"external_subnet_cidr"`
	// ImageName is a public 1 MiB raw image.
	ImageName string `json:"image_name"`
	ImageID   string `json:"image_id"`
	// Flavors are public flavors, smallest first.
	Flavors []string `json:"flavors"`
	// VolumeType is a public Cinder volume type on the fake backend.
	VolumeType string `json:"volume_type"`
	// MemberRoles are the roles NewProject gives its user: those a Magnum
	// user holds on a cloud with Octavia.
	MemberRoles []string `json:"member_roles"`
	// LogDir holds every service's log (on the host).
	LogDir string `json:"log_dir"`
	// Release names the OpenStack release the chroot carries.
	Release string `json:"release"`

	admin     *gophercloud.ProviderClient
	adminOnce sync.Once
	adminErr  error
}

var (
	upOnce  sync.Once
	upCloud *Cloud
	upErr   error
)

// Root is the chroot the scripts use.
func Root() string {
	if r := os.Getenv("OSTEST_ROOT"); r != "" {
		return r
	}
	return DefaultRoot
}

// StateFile is where up writes the Cloud.
func StateFile() string { return filepath.Join(Root(), "ostest", "state.json") }

// scriptDir is this package's source directory, where build, up and down
// are.
func scriptDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Need returns the running control plane, bringing it up once per test
// binary. Under -short it skips t. When the plane cannot be brought up it
// fails t under CI=true (a CI run that silently tests less is a defect)
// and skips it elsewhere (a developer's machine without root or room).
func Need(t testing.TB) *Cloud {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the OpenStack control plane (test/openstack): not run with -short")
	}
	upOnce.Do(func() { upCloud, upErr = bringUp() })
	if upErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the OpenStack control plane is not available: %v", upErr)
		}
		t.Skipf("the OpenStack control plane is not available (CI=true would fail): %v", upErr)
	}
	return upCloud
}

func bringUp() (*Cloud, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("test/openstack/up needs root (chroot, mounts)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), UpTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(scriptDir(), "up"))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", cmd.Path, err, lastLines(string(out), 40))
	}
	return Load(StateFile())
}

// Load reads a state file written by up.
func Load(path string) (*Cloud, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := new(Cloud)
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.AuthURL == "" || c.Admin.Password == "" || c.ExternalNetworkID == "" {
		return nil, fmt.Errorf("%s: incomplete state (auth_url, admin password, external network)", path)
	}
	return c, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// AdminAuthOptions are the cloud admin's password credentials, scoped to
// the admin project.
func (c *Cloud) AdminAuthOptions() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: c.AuthURL,
		Username:         c.Admin.Username,
		Password:         c.Admin.Password,
		DomainName:       c.Admin.UserDomainName,
		Scope: &gophercloud.AuthScope{
			ProjectName: c.Admin.ProjectName,
			DomainName:  c.Admin.ProjectDomainName,
		},
		AllowReauth: true,
	}
}

// AdminProvider returns an authenticated client as the cloud admin,
// shared by the test binary.
func (c *Cloud) AdminProvider(t testing.TB) *gophercloud.ProviderClient {
	t.Helper()
	if err := c.authenticateAdmin(); err != nil {
		t.Fatalf("authenticate as the cloud admin: %v", err)
	}
	return c.admin
}

// authenticateAdmin authenticates the shared admin client once.
func (c *Cloud) authenticateAdmin() error {
	c.adminOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.admin, c.adminErr = openstack.AuthenticatedClient(ctx, c.AdminAuthOptions())
	})
	return c.adminErr
}

// EndpointOpts selects the plane's public endpoints.
func (c *Cloud) EndpointOpts() gophercloud.EndpointOpts {
	return gophercloud.EndpointOpts{Region: c.Region, Availability: gophercloud.AvailabilityPublic}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
