package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// PurgeTimeout bounds the deletion of a project's leftovers at the end of
// a test (servers and load balancers go in seconds here).
const PurgeTimeout = 3 * time.Minute

// Project is a fresh project with one user, made for one test.
type Project struct {
	ID, Name string
	// UserID, Username and Password are the project's user's, in domain
	// Default, holding Cloud.MemberRoles on the project.
	UserID, Username, Password string
	// Provider is authenticated as the user, scoped to the project.
	Provider *gophercloud.ProviderClient

	cloud *Cloud
}

// NewProject creates a project named prefix-<random> and a user of the
// same name holding the roles a Magnum user has (Cloud.MemberRoles), and
// returns it authenticated as that user. When the test ends, after its own
// cleanups (registered later, so run earlier) and so after its assertions
// on what it left, every resource left in the project is deleted, then the
// user and the project.
func (c *Cloud) NewProject(t testing.TB, prefix string) *Project {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	idc := c.identity(t)
	name := prefix + "-" + randomHex(4)
	proj, err := projects.Create(ctx, idc, projects.CreateOpts{
		Name: name, DomainID: "default", Description: "test " + t.Name(),
	}).Extract()
	if err != nil {
		t.Fatalf("create project %s: %v", name, err)
	}
	p := &Project{ID: proj.ID, Name: name, Username: name, Password: randomHex(16), cloud: c}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), PurgeTimeout)
		defer cancel()
		if err := c.Purge(ctx, p.ID, p.UserID); err != nil {
			t.Errorf("delete the leftovers of project %s: %v", name, err)
		}
		if p.UserID != "" {
			if err := users.Delete(ctx, idc, p.UserID).ExtractErr(); err != nil && !notFound(err) {
				t.Errorf("delete user %s: %v", name, err)
			}
		}
		if err := projects.Delete(ctx, idc, p.ID).ExtractErr(); err != nil && !notFound(err) {
			t.Errorf("delete project %s: %v", name, err)
		}
	})
	u, err := users.Create(ctx, idc, users.CreateOpts{
		Name: name, DomainID: "default", DefaultProjectID: proj.ID, Password: p.Password,
	}).Extract()
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	p.UserID = u.ID
	all, err := roles.List(idc, roles.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list roles: %v", err)
	}
	rs, err := roles.ExtractRoles(all)
	if err != nil {
		t.Fatalf("list roles: %v", err)
	}
	for _, want := range c.MemberRoles {
		i := slices.IndexFunc(rs, func(r roles.Role) bool { return r.Name == want })
		if i < 0 {
			t.Fatalf("role %s does not exist", want)
		}
		err := roles.Assign(ctx, idc, rs[i].ID, roles.AssignOpts{UserID: u.ID, ProjectID: proj.ID}).ExtractErr()
		if err != nil {
			t.Fatalf("give %s role %s on %s: %v", name, want, name, err)
		}
	}
	p.Provider, err = openstack.AuthenticatedClient(ctx, p.AuthOptions())
	if err != nil {
		t.Fatalf("authenticate as %s: %v", name, err)
	}
	return p
}

// AuthOptions are the user's password credentials scoped to the project.
func (p *Project) AuthOptions() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: p.cloud.AuthURL,
		Username:         p.Username,
		Password:         p.Password,
		DomainID:         "default",
		Scope:            &gophercloud.AuthScope{ProjectID: p.ID},
		AllowReauth:      true,
	}
}

// Cloud returns the plane the project is in.
func (p *Project) Cloud() *Cloud { return p.cloud }

func (c *Cloud) identity(t testing.TB) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := openstack.NewIdentityV3(c.AdminProvider(t), c.EndpointOpts())
	if err != nil {
		t.Fatalf("identity endpoint: %v", err)
	}
	return sc
}

func notFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// adminClients are the admin's service clients the purge and the
// leftovers listing use.
type adminClients struct {
	compute, network, volume, lb, image *gophercloud.ServiceClient
}

func (c *Cloud) adminClients(ctx context.Context) (*adminClients, error) {
	if err := c.authenticateAdmin(); err != nil {
		return nil, err
	}
	eo := c.EndpointOpts()
	var a adminClients
	var errs [5]error
	a.compute, errs[0] = openstack.NewComputeV2(c.admin, eo)
	a.network, errs[1] = openstack.NewNetworkV2(c.admin, eo)
	a.volume, errs[2] = openstack.NewBlockStorageV3(c.admin, eo)
	a.lb, errs[3] = openstack.NewLoadBalancerV2(c.admin, eo)
	a.image, errs[4] = openstack.NewImageV2(c.admin, eo)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	a.compute.Microversion = "2.15" // keypairs of another user (2.10), server group policies (2.15)
	return &a, nil
}

// Leftovers lists, as the admin, what project projectID still holds, one
// "kind name (id)" line each: servers, server groups, keypairs of userID,
// volumes, load balancers, floating IPs, routers, ports, networks,
// security groups other than "default", images it owns. Empty means the
// project is clean.
func (c *Cloud) Leftovers(ctx context.Context, projectID, userID string) ([]string, error) {
	a, err := c.adminClients(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(kind, name, id string) { out = append(out, fmt.Sprintf("%s %s (%s)", kind, name, id)) }
	var errs []error
	if pg, err := servers.List(a.compute, servers.ListOpts{AllTenants: true, TenantID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("servers: %w", err))
	} else if ss, err := servers.ExtractServers(pg); err == nil {
		for _, s := range ss {
			add("server", s.Name, s.ID)
		}
	}
	if pg, err := servergroups.List(a.compute, servergroups.ListOpts{AllProjects: true}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("server groups: %w", err))
	} else if gs, err := servergroups.ExtractServerGroups(pg); err == nil {
		for _, g := range gs {
			if g.ProjectID == projectID {
				add("server group", g.Name, g.ID)
			}
		}
	}
	if userID != "" {
		if pg, err := keypairs.List(a.compute, keypairs.ListOpts{UserID: userID}).AllPages(ctx); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("keypairs: %w", err))
		} else if err == nil {
			ks, _ := keypairs.ExtractKeyPairs(pg)
			for _, k := range ks {
				add("keypair", k.Name, k.Name)
			}
		}
	}
	if pg, err := volumes.List(a.volume, volumes.ListOpts{AllTenants: true, TenantID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("volumes: %w", err))
	} else if vs, err := volumes.ExtractVolumes(pg); err == nil {
		for _, v := range vs {
			add("volume", v.Name, v.ID)
		}
	}
	if pg, err := loadbalancers.List(a.lb, loadbalancers.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("load balancers: %w", err))
	} else if ls, err := loadbalancers.ExtractLoadBalancers(pg); err == nil {
		for _, l := range ls {
			add("load balancer", l.Name, l.ID)
		}
	}
	if pg, err := floatingips.List(a.network, floatingips.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("floating IPs: %w", err))
	} else if fs, err := floatingips.ExtractFloatingIPs(pg); err == nil {
		for _, f := range fs {
			add("floating IP", f.FloatingIP, f.ID)
		}
	}
	if pg, err := routers.List(a.network, routers.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("routers: %w", err))
	} else if rs, err := routers.ExtractRouters(pg); err == nil {
		for _, r := range rs {
			add("router", r.Name, r.ID)
		}
	}
	if pg, err := ports.List(a.network, ports.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("ports: %w", err))
	} else if ps, err := ports.ExtractPorts(pg); err == nil {
		for _, p := range ps {
			add("port", p.Name+" "+p.DeviceOwner, p.ID)
		}
	}
	if pg, err := networks.List(a.network, networks.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("networks: %w", err))
	} else if ns, err := networks.ExtractNetworks(pg); err == nil {
		for _, n := range ns {
			add("network", n.Name, n.ID)
		}
	}
	if pg, err := groups.List(a.network, groups.ListOpts{ProjectID: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("security groups: %w", err))
	} else if gs, err := groups.ExtractGroups(pg); err == nil {
		for _, g := range gs {
			if g.Name != "default" {
				add("security group", g.Name, g.ID)
			}
		}
	}
	if pg, err := images.List(a.image, images.ListOpts{Owner: projectID}).AllPages(ctx); err != nil {
		errs = append(errs, fmt.Errorf("images: %w", err))
	} else if is, err := images.ExtractImages(pg); err == nil {
		for _, i := range is {
			add("image", i.Name, i.ID)
		}
	}
	return out, errors.Join(errs...)
}

// Purge deletes, as the admin, everything project projectID holds (and
// userID's keypairs), dependants first, and waits until Leftovers is
// empty. The project and the user stay.
func (c *Cloud) Purge(ctx context.Context, projectID, userID string) error {
	a, err := c.adminClients(ctx)
	if err != nil {
		return err
	}
	// Most tests leave nothing: one listing instead of a delete pass.
	if left, err := c.Leftovers(ctx, projectID, userID); err == nil && len(left) == 0 {
		return nil
	}
	var errs []error
	keep := func(what string, err error) {
		if err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	// Load balancers (with their listeners, pools, members) and the
	// floating IPs: they hold ports on the project's subnets.
	if pg, err := loadbalancers.List(a.lb, loadbalancers.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		ls, _ := loadbalancers.ExtractLoadBalancers(pg)
		for _, l := range ls {
			if strings.HasPrefix(l.ProvisioningStatus, "PENDING_DELETE") {
				continue
			}
			keep("delete load balancer "+l.ID, loadbalancers.Delete(ctx, a.lb, l.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
		}
	}
	if pg, err := floatingips.List(a.network, floatingips.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		fs, _ := floatingips.ExtractFloatingIPs(pg)
		for _, f := range fs {
			keep("delete floating IP "+f.ID, floatingips.Delete(ctx, a.network, f.ID).ExtractErr())
		}
	}
	if pg, err := servers.List(a.compute, servers.ListOpts{AllTenants: true, TenantID: projectID}).AllPages(ctx); err == nil {
		ss, _ := servers.ExtractServers(pg)
		for _, s := range ss {
			keep("delete server "+s.ID, servers.ForceDelete(ctx, a.compute, s.ID).ExtractErr())
		}
	}
	if userID != "" {
		if pg, err := keypairs.List(a.compute, keypairs.ListOpts{UserID: userID}).AllPages(ctx); err == nil {
			ks, _ := keypairs.ExtractKeyPairs(pg)
			for _, k := range ks {
				keep("delete keypair "+k.Name, keypairs.Delete(ctx, a.compute, k.Name, keypairs.DeleteOpts{UserID: userID}).ExtractErr())
			}
		}
	}
	if pg, err := servergroups.List(a.compute, servergroups.ListOpts{AllProjects: true}).AllPages(ctx); err == nil {
		gs, _ := servergroups.ExtractServerGroups(pg)
		for _, g := range gs {
			if g.ProjectID == projectID {
				keep("delete server group "+g.ID, servergroups.Delete(ctx, a.compute, g.ID).ExtractErr())
			}
		}
	}
	if pg, err := images.List(a.image, images.ListOpts{Owner: projectID}).AllPages(ctx); err == nil {
		is, _ := images.ExtractImages(pg)
		for _, i := range is {
			keep("delete image "+i.ID, images.Delete(ctx, a.image, i.ID).ExtractErr())
		}
	}
	// Servers and load balancers go asynchronously: wait for them before
	// their volumes and ports.
	if err := c.await(ctx, projectID, userID, func(l string) bool {
		return strings.HasPrefix(l, "server ") || strings.HasPrefix(l, "load balancer ")
	}); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if pg, err := volumes.List(a.volume, volumes.ListOpts{AllTenants: true, TenantID: projectID}).AllPages(ctx); err == nil {
		vs, _ := volumes.ExtractVolumes(pg)
		for _, v := range vs {
			keep("delete volume "+v.ID, volumes.ForceDelete(ctx, a.volume, v.ID).ExtractErr())
		}
	}
	if pg, err := routers.List(a.network, routers.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		rs, _ := routers.ExtractRouters(pg)
		for _, r := range rs {
			if pg, err := ports.List(a.network, ports.ListOpts{DeviceID: r.ID, DeviceOwner: "network:router_interface"}).AllPages(ctx); err == nil {
				ps, _ := ports.ExtractPorts(pg)
				for _, p := range ps {
					_, err := routers.RemoveInterface(ctx, a.network, r.ID, routers.RemoveInterfaceOpts{PortID: p.ID}).Extract()
					keep("remove interface "+p.ID+" of router "+r.ID, err)
				}
			}
			keep("delete router "+r.ID, routers.Delete(ctx, a.network, r.ID).ExtractErr())
		}
	}
	if pg, err := ports.List(a.network, ports.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		ps, _ := ports.ExtractPorts(pg)
		for _, p := range ps {
			keep("delete port "+p.ID, ports.Delete(ctx, a.network, p.ID).ExtractErr())
		}
	}
	if pg, err := networks.List(a.network, networks.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		ns, _ := networks.ExtractNetworks(pg)
		for _, n := range ns {
			keep("delete network "+n.ID, networks.Delete(ctx, a.network, n.ID).ExtractErr())
		}
	}
	if pg, err := groups.List(a.network, groups.ListOpts{ProjectID: projectID}).AllPages(ctx); err == nil {
		gs, _ := groups.ExtractGroups(pg)
		for _, g := range gs {
			keep("delete security group "+g.ID, groups.Delete(ctx, a.network, g.ID).ExtractErr())
		}
	}
	if err := c.await(ctx, projectID, userID, func(string) bool { return true }); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// await polls Leftovers until none of the lines match.
func (c *Cloud) await(ctx context.Context, projectID, userID string, match func(string) bool) error {
	var last []string
	for {
		left, err := c.Leftovers(ctx, projectID, userID)
		last = slices.DeleteFunc(left, func(l string) bool { return !match(l) })
		if err == nil && len(last) == 0 {
			return nil
		}
		if err != nil {
			last = append(last, "listing: "+err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there: %s", strings.Join(last, "; "))
		case <-time.After(time.Second):
		}
	}
}

// User is one more user of a project.
type User struct {
	ID, Name, Password string
	// Provider is authenticated as the user, scoped to the project.
	Provider *gophercloud.ProviderClient
}

// AddUser creates another user in the project holding Cloud.MemberRoles
// (another member of the same team), deleted when the test ends.
func (p *Project) AddUser(t testing.TB) *User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	idc := p.cloud.identity(t)
	u := &User{Name: p.Name + "-" + randomHex(3), Password: randomHex(16)}
	created, err := users.Create(ctx, idc, users.CreateOpts{
		Name: u.Name, DomainID: "default", DefaultProjectID: p.ID, Password: u.Password,
	}).Extract()
	if err != nil {
		t.Fatalf("create user %s: %v", u.Name, err)
	}
	u.ID = created.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := users.Delete(ctx, idc, u.ID).ExtractErr(); err != nil && !notFound(err) {
			t.Errorf("delete user %s: %v", u.Name, err)
		}
	})
	all, err := roles.List(idc, roles.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list roles: %v", err)
	}
	rs, _ := roles.ExtractRoles(all)
	for _, want := range p.cloud.MemberRoles {
		i := slices.IndexFunc(rs, func(r roles.Role) bool { return r.Name == want })
		if i < 0 {
			t.Fatalf("role %s does not exist", want)
		}
		if err := roles.Assign(ctx, idc, rs[i].ID, roles.AssignOpts{UserID: u.ID, ProjectID: p.ID}).ExtractErr(); err != nil {
			t.Fatalf("give %s role %s: %v", u.Name, want, err)
		}
	}
	u.Provider, err = openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: p.cloud.AuthURL, Username: u.Name, Password: u.Password, DomainID: "default",
		Scope: &gophercloud.AuthScope{ProjectID: p.ID}, AllowReauth: true,
	})
	if err != nil {
		t.Fatalf("authenticate as %s: %v", u.Name, err)
	}
	return u
}

// ApplicationCredential creates a restricted application credential of
// the project's user, as Magnum makes one for a cluster, and returns its
// id and secret. It goes with the user.
func (p *Project) ApplicationCredential(t testing.TB, name string) (id, secret string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	idc, err := openstack.NewIdentityV3(p.Provider, p.cloud.EndpointOpts())
	if err != nil {
		t.Fatalf("identity endpoint: %v", err)
	}
	ac, err := applicationcredentials.Create(ctx, idc, p.UserID, applicationcredentials.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create application credential %s: %v", name, err)
	}
	return ac.ID, ac.Secret
}
