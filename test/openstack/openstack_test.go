package openstack_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/volumeattach"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/openstack"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t *testing.T, what string, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// check(call())(t, what) is must for a call's two results.
func check[T any](v T, err error) func(t *testing.T, what string) T {
	return func(t *testing.T, what string) T {
		t.Helper()
		return must(t, what, v, err)
	}
}

func await(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	if err := testkit.Await(ctx, 500*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

// assertEmpty fails t unless the project holds nothing (Cloud.Leftovers).
func assertEmpty(t *testing.T, ctx context.Context, p *openstack.Project) {
	t.Helper()
	var last []string
	err := testkit.Await(ctx, time.Second, "the project empty after the deletes", func() (bool, string) {
		left, err := p.Cloud().Leftovers(ctx, p.ID, p.UserID)
		if err != nil {
			return false, err.Error()
		}
		last = left
		return len(left) == 0, strings.Join(left, "; ")
	})
	if err != nil {
		t.Fatalf("%v (%v)", err, last)
	}
}

func service(t *testing.T, what string, f func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error), p *gophercloud.ProviderClient, c *openstack.Cloud) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := f(p, c.EndpointOpts())
	return must(t, what+" endpoint", sc, err)
}

// privateNetwork creates a network with an IPv4 subnet in the project.
func privateNetwork(t *testing.T, ctx context.Context, netc *gophercloud.ServiceClient, name, cidr string) (*networks.Network, *subnets.Subnet) {
	t.Helper()
	n := check(networks.Create(ctx, netc, networks.CreateOpts{Name: name}).Extract())(t, "create network")
	s := check(subnets.Create(ctx, netc, subnets.CreateOpts{
		NetworkID: n.ID, Name: name, CIDR: cidr, IPVersion: gophercloud.IPv4,
	}).Extract())(t, "create subnet")
	return n, s
}

// TestKeystoneApplicationCredential: a user creates a restricted
// application credential, authenticates with it (a token scoped to the
// credential's project), cannot create another credential with it
// (restricted), deletes it, and can no longer authenticate with it.
func TestKeystoneApplicationCredential(t *testing.T) {
	t.Parallel()
	c := openstack.Need(t)
	p := c.NewProject(t, "appcred")
	ctx := ctxFor(t, 2*time.Minute)
	idc := service(t, "identity", gos.NewIdentityV3, p.Provider, c)

	ac := check(applicationcredentials.Create(ctx, idc, p.UserID, applicationcredentials.CreateOpts{
		Name: "test", Description: "restricted", Unrestricted: false,
	}).Extract())(t, "create application credential")
	if ac.ID == "" || ac.Secret == "" {
		t.Fatalf("application credential without id or secret: %+v", ac.ID)
	}
	acAuth := gophercloud.AuthOptions{IdentityEndpoint: c.AuthURL, ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret}
	acProvider := check(gos.AuthenticatedClient(ctx, acAuth))(t, "authenticate with the application credential")
	acIdc := service(t, "identity", gos.NewIdentityV3, acProvider, c)
	tok := tokens.Get(ctx, acIdc, acProvider.Token())
	proj := check(tok.ExtractProject())(t, "the application credential's token")
	if proj.ID != p.ID {
		t.Errorf("the application credential's token is scoped to %s, want the project %s", proj.ID, p.ID)
	}
	_, err := applicationcredentials.Create(ctx, acIdc, p.UserID, applicationcredentials.CreateOpts{Name: "nested"}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Errorf("a restricted application credential created another one: got %v, want 403", err)
	}
	if err := applicationcredentials.Delete(ctx, idc, p.UserID, ac.ID).ExtractErr(); err != nil {
		t.Fatalf("delete the application credential: %v", err)
	}
	// Keystone answers 404 (Could not find Application Credential) for a
	// deleted credential, not 401.
	_, err = gos.AuthenticatedClient(ctx, acAuth)
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("a deleted application credential authenticates: got %v, want 401 or 404", err)
	}
}

// TestServerVolumeAndServerGroup: with an application credential, as the
// driver's controllers use one, a server with a flavor, the image, a port
// of its own and a soft-anti-affinity server group goes ACTIVE with what
// it was asked for; a volume of the volume type attaches (in-use, on the
// server) and detaches (available; Nova's service token is what lets
// Cinder accept the detach of an application credential's request); after
// the deletes the project is empty.
func TestServerVolumeAndServerGroup(t *testing.T) {
	t.Parallel()
	c := openstack.Need(t)
	p := c.NewProject(t, "server")
	ctx := ctxFor(t, 5*time.Minute)
	idc := service(t, "identity", gos.NewIdentityV3, p.Provider, c)
	ac := check(applicationcredentials.Create(ctx, idc, p.UserID,
		applicationcredentials.CreateOpts{Name: "server"}).Extract())(t, "create application credential")
	prov := check(gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: c.AuthURL, ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret,
	}))(t, "authenticate with the application credential")
	compute := service(t, "compute", gos.NewComputeV2, prov, c)
	compute.Microversion = "2.64" // server group "policy" (soft-anti-affinity), flavor in the server body
	netc := service(t, "network", gos.NewNetworkV2, prov, c)
	bsc := service(t, "block-storage", gos.NewBlockStorageV3, prov, c)
	imgc := service(t, "image", gos.NewImageV2, prov, c)

	img := check(images.Get(ctx, imgc, c.ImageID).Extract())(t, "get the image")
	if img.Name != c.ImageName || img.Status != images.ImageStatusActive || img.SizeBytes != 1<<20 {
		t.Fatalf("image %s: name %q status %s size %d, want %s active 1 MiB", c.ImageID, img.Name, img.Status, img.SizeBytes, c.ImageName)
	}
	fpages := check(flavors.ListDetail(compute, flavors.ListOpts{}).AllPages(ctx))(t, "list flavors")
	fl := check(flavors.ExtractFlavors(fpages))(t, "list flavors")
	i := slices.IndexFunc(fl, func(f flavors.Flavor) bool { return f.Name == c.Flavors[0] })
	if i < 0 {
		t.Fatalf("flavor %s is not listed", c.Flavors[0])
	}
	flavor := fl[i]

	net, subnet := privateNetwork(t, ctx, netc, "server", "10.20.0.0/24")
	port := check(ports.Create(ctx, netc, ports.CreateOpts{NetworkID: net.ID, Name: "server-port"}).Extract())(t, "create port")
	group := check(servergroups.Create(ctx, compute, servergroups.CreateOpts{
		Name: "server-group", Policy: "soft-anti-affinity",
	}).Extract())(t, "create server group")
	srv := check(servers.Create(ctx, compute, servers.CreateOpts{
		Name: "server", FlavorRef: flavor.ID, ImageRef: c.ImageID,
		Networks: []servers.Network{{Port: port.ID}},
	}, servers.SchedulerHintOpts{Group: group.ID}).Extract())(t, "create server")
	var got *servers.Server
	await(t, ctx, "server ACTIVE", func() (bool, string) {
		s, err := servers.Get(ctx, compute, srv.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		got = s
		if s.Status == "ERROR" {
			t.Fatalf("server went to ERROR: %+v", s.Fault)
		}
		return s.Status == "ACTIVE", s.Status
	})
	if got.Flavor["original_name"] != flavor.Name {
		t.Errorf("server flavor %v, want %s", got.Flavor["original_name"], flavor.Name)
	}
	if got.Image["id"] != c.ImageID {
		t.Errorf("server image %v, want %s", got.Image["id"], c.ImageID)
	}
	boundPort := check(ports.Get(ctx, netc, port.ID).Extract())(t, "get the server's port")
	if boundPort.DeviceID != srv.ID || boundPort.Status != "ACTIVE" {
		t.Errorf("the server's port: device %s status %s, want %s ACTIVE", boundPort.DeviceID, boundPort.Status, srv.ID)
	}
	if len(boundPort.FixedIPs) != 1 || boundPort.FixedIPs[0].SubnetID != subnet.ID {
		t.Errorf("the server's port has fixed IPs %+v, want one on subnet %s", boundPort.FixedIPs, subnet.ID)
	} else if !strings.Contains(fmtAddresses(got.Addresses), boundPort.FixedIPs[0].IPAddress) {
		t.Errorf("the server's addresses %v do not hold its port's %s", got.Addresses, boundPort.FixedIPs[0].IPAddress)
	}
	g := check(servergroups.Get(ctx, compute, group.ID).Extract())(t, "get server group")
	if !slices.Contains(g.Members, srv.ID) || g.Policy == nil || *g.Policy != "soft-anti-affinity" {
		t.Errorf("server group members %v policy %v, want %s in a soft-anti-affinity group", g.Members, g.Policy, srv.ID)
	}

	vol := check(volumes.Create(ctx, bsc, volumes.CreateOpts{Name: "data", Size: 1, VolumeType: c.VolumeType}, nil).Extract())(t, "create volume")
	waitVolume(t, ctx, bsc, vol.ID, "available")
	check(volumeattach.Create(ctx, compute, srv.ID, volumeattach.CreateOpts{VolumeID: vol.ID}).Extract())(t, "attach the volume")
	v := waitVolume(t, ctx, bsc, vol.ID, "in-use")
	if len(v.Attachments) != 1 || v.Attachments[0].ServerID != srv.ID || v.VolumeType != c.VolumeType {
		t.Errorf("volume attachments %+v type %s, want one on server %s, type %s", v.Attachments, v.VolumeType, srv.ID, c.VolumeType)
	}
	if err := volumeattach.Delete(ctx, compute, srv.ID, vol.ID).ExtractErr(); err != nil {
		t.Fatalf("detach the volume: %v", err)
	}
	v = waitVolume(t, ctx, bsc, vol.ID, "available")
	if len(v.Attachments) != 0 {
		t.Errorf("detached volume still has attachments %+v", v.Attachments)
	}

	if err := servers.Delete(ctx, compute, srv.ID).ExtractErr(); err != nil {
		t.Fatalf("delete server: %v", err)
	}
	await(t, ctx, "server gone", func() (bool, string) {
		_, err := servers.Get(ctx, compute, srv.ID).Extract()
		return gophercloud.ResponseCodeIs(err, http.StatusNotFound), "still there"
	})
	for what, err := range map[string]error{
		"delete volume":       volumes.Delete(ctx, bsc, vol.ID, volumes.DeleteOpts{}).ExtractErr(),
		"delete server group": servergroups.Delete(ctx, compute, group.ID).ExtractErr(),
		"delete port":         ports.Delete(ctx, netc, port.ID).ExtractErr(),
	} {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := networks.Delete(ctx, netc, net.ID).ExtractErr(); err != nil {
		t.Fatalf("delete network: %v", err)
	}
	assertEmpty(t, ctx, p)
}

func fmtAddresses(a map[string]any) string {
	var b strings.Builder
	for k, v := range a {
		b.WriteString(k)
		if l, ok := v.([]any); ok {
			for _, e := range l {
				if m, ok := e.(map[string]any); ok {
					b.WriteString(" ")
					b.WriteString(m["addr"].(string))
				}
			}
		}
	}
	return b.String()
}

func waitVolume(t *testing.T, ctx context.Context, bsc *gophercloud.ServiceClient, id, status string) *volumes.Volume {
	t.Helper()
	var v *volumes.Volume
	await(t, ctx, "volume "+status, func() (bool, string) {
		got, err := volumes.Get(ctx, bsc, id).Extract()
		if err != nil {
			return false, err.Error()
		}
		if strings.HasPrefix(got.Status, "error") {
			t.Fatalf("volume %s went to %s", id, got.Status)
		}
		v = got
		return got.Status == status, got.Status
	})
	return v
}

// TestLoadBalancerFloatingIPAndRouter: as the driver's cluster network is
// built, a router with its gateway on the external network (an address
// in the loopback range) and an interface on the project's subnet; an
// Octavia load balancer on that subnet with a listener, a pool, a health
// monitor and a member, each ACTIVE; its VIP is a real port in the project,
// and a floating IP associated with that port becomes ACTIVE (DOWN once
// disassociated); after the deletes the project is empty.
func TestLoadBalancerFloatingIPAndRouter(t *testing.T) {
	t.Parallel()
	c := openstack.Need(t)
	p := c.NewProject(t, "lb")
	ctx := ctxFor(t, 5*time.Minute)
	netc := service(t, "network", gos.NewNetworkV2, p.Provider, c)
	lbc := service(t, "load-balancer", gos.NewLoadBalancerV2, p.Provider, c)
	_, extNet, err := net.ParseCIDR(c.ExternalSubnetCIDR)
	if err != nil || !extNet.IP.IsLoopback() {
		t.Fatalf("the external subnet %s is not a loopback range (%v): a floating IP could be dialled off the machine", c.ExternalSubnetCIDR, err)
	}

	n, subnet := privateNetwork(t, ctx, netc, "lb", "10.30.0.0/24")
	router := check(routers.Create(ctx, netc, routers.CreateOpts{
		Name: "lb-router", GatewayInfo: &routers.GatewayInfo{NetworkID: c.ExternalNetworkID},
	}).Extract())(t, "create router")
	if router.GatewayInfo.NetworkID != c.ExternalNetworkID || len(router.GatewayInfo.ExternalFixedIPs) != 1 ||
		!extNet.Contains(net.ParseIP(router.GatewayInfo.ExternalFixedIPs[0].IPAddress)) {
		t.Errorf("router gateway %+v, want one address in %s on %s", router.GatewayInfo, c.ExternalSubnetCIDR, c.ExternalNetworkID)
	}
	check(routers.AddInterface(ctx, netc, router.ID, routers.AddInterfaceOpts{SubnetID: subnet.ID}).Extract())(t, "add the subnet to the router")

	lb := check(loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{
		Name: "lb", VipSubnetID: subnet.ID,
	}).Extract())(t, "create load balancer")
	awaitLB := func(what string) {
		t.Helper()
		await(t, ctx, what+": load balancer ACTIVE", func() (bool, string) {
			l, err := loadbalancers.Get(ctx, lbc, lb.ID).Extract()
			if err != nil {
				return false, err.Error()
			}
			if l.ProvisioningStatus == "ERROR" {
				t.Fatalf("%s: load balancer went to ERROR", what)
			}
			return l.ProvisioningStatus == "ACTIVE", l.ProvisioningStatus
		})
	}
	awaitLB("create")
	lis := check(listeners.Create(ctx, lbc, listeners.CreateOpts{
		Name: "api", LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 6443,
	}).Extract())(t, "create listener")
	awaitLB("listener")
	pool := check(pools.Create(ctx, lbc, pools.CreateOpts{
		Name: "api", ListenerID: lis.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
	}).Extract())(t, "create pool")
	awaitLB("pool")
	mon := check(monitors.Create(ctx, lbc, monitors.CreateOpts{
		PoolID: pool.ID, Type: monitors.TypeTCP, Delay: 10, Timeout: 5, MaxRetries: 3,
	}).Extract())(t, "create monitor")
	awaitLB("monitor")
	member := check(pools.CreateMember(ctx, lbc, pool.ID, pools.CreateMemberOpts{
		Address: "10.30.0.50", ProtocolPort: 6443, SubnetID: subnet.ID,
	}).Extract())(t, "create member")
	awaitLB("member")
	for what, status := range map[string]func() (string, error){
		"listener": func() (string, error) { l, err := listeners.Get(ctx, lbc, lis.ID).Extract(); return status(l, err) },
		"pool":     func() (string, error) { l, err := pools.Get(ctx, lbc, pool.ID).Extract(); return status(l, err) },
		"monitor":  func() (string, error) { l, err := monitors.Get(ctx, lbc, mon.ID).Extract(); return status(l, err) },
		"member": func() (string, error) {
			l, err := pools.GetMember(ctx, lbc, pool.ID, member.ID).Extract()
			return status(l, err)
		},
	} {
		if s, err := status(); err != nil || s != "ACTIVE" {
			t.Errorf("%s: provisioning status %s (%v), want ACTIVE", what, s, err)
		}
	}

	l := check(loadbalancers.Get(ctx, lbc, lb.ID).Extract())(t, "get load balancer")
	vip := check(ports.Get(ctx, netc, l.VipPortID).Extract())(t, "get the VIP port")
	if vip.ProjectID != p.ID || len(vip.FixedIPs) != 1 || vip.FixedIPs[0].IPAddress != l.VipAddress || vip.NetworkID != n.ID {
		t.Errorf("VIP port %+v, want in project %s on network %s with the address %s", vip, p.ID, n.ID, l.VipAddress)
	}
	fip := check(floatingips.Create(ctx, netc, floatingips.CreateOpts{
		FloatingNetworkID: c.ExternalNetworkID, PortID: l.VipPortID,
	}).Extract())(t, "create floating IP on the VIP")
	if !extNet.Contains(net.ParseIP(fip.FloatingIP)) {
		t.Errorf("floating IP %s, want an address in %s", fip.FloatingIP, c.ExternalSubnetCIDR)
	}
	awaitFIP := func(status string) {
		t.Helper()
		await(t, ctx, "floating IP "+status, func() (bool, string) {
			f, err := floatingips.Get(ctx, netc, fip.ID).Extract()
			if err != nil {
				return false, err.Error()
			}
			return f.Status == status, f.Status
		})
	}
	awaitFIP("ACTIVE")
	empty := ""
	check(floatingips.Update(ctx, netc, fip.ID, floatingips.UpdateOpts{PortID: &empty}).Extract())(t, "disassociate the floating IP")
	awaitFIP("DOWN")
	check(floatingips.Update(ctx, netc, fip.ID, floatingips.UpdateOpts{PortID: &l.VipPortID}).Extract())(t, "associate the floating IP again")
	awaitFIP("ACTIVE")

	if err := floatingips.Delete(ctx, netc, fip.ID).ExtractErr(); err != nil {
		t.Fatalf("delete floating IP: %v", err)
	}
	if err := loadbalancers.Delete(ctx, lbc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatalf("delete load balancer: %v", err)
	}
	await(t, ctx, "load balancer and its VIP port gone", func() (bool, string) {
		_, lerr := loadbalancers.Get(ctx, lbc, lb.ID).Extract()
		_, perr := ports.Get(ctx, netc, l.VipPortID).Extract()
		return gophercloud.ResponseCodeIs(lerr, http.StatusNotFound) && gophercloud.ResponseCodeIs(perr, http.StatusNotFound), "still there"
	})
	if _, err := routers.RemoveInterface(ctx, netc, router.ID, routers.RemoveInterfaceOpts{SubnetID: subnet.ID}).Extract(); err != nil {
		t.Fatalf("remove the router interface: %v", err)
	}
	if err := routers.Delete(ctx, netc, router.ID).ExtractErr(); err != nil {
		t.Fatalf("delete router: %v", err)
	}
	if err := networks.Delete(ctx, netc, n.ID).ExtractErr(); err != nil {
		t.Fatalf("delete network: %v", err)
	}
	assertEmpty(t, ctx, p)
}

// status extracts a provisioning status from an Octavia object.
func status[T any](v *T, err error) (string, error) {
	if err != nil {
		return "", err
	}
	switch o := any(v).(type) {
	case *listeners.Listener:
		return o.ProvisioningStatus, nil
	case *pools.Pool:
		return o.ProvisioningStatus, nil
	case *monitors.Monitor:
		return o.ProvisioningStatus, nil
	case *pools.Member:
		return o.ProvisioningStatus, nil
	}
	return "", nil
}

// TestLeftoversAndPurge: what NewProject's cleanup and the tests' "the
// project is empty" rest on: Leftovers lists what a project holds (here a
// network with its port, a router, a server group, a volume, a floating
// IP) and Purge deletes it all, leaving Leftovers empty. Also: a second
// up on the running plane returns at once with the same state.
func TestLeftoversAndPurge(t *testing.T) {
	t.Parallel()
	c := openstack.Need(t)
	p := c.NewProject(t, "purge")
	ctx := ctxFor(t, 4*time.Minute)
	netc := service(t, "network", gos.NewNetworkV2, p.Provider, c)
	compute := service(t, "compute", gos.NewComputeV2, p.Provider, c)
	compute.Microversion = "2.64"
	bsc := service(t, "block-storage", gos.NewBlockStorageV3, p.Provider, c)
	n, _ := privateNetwork(t, ctx, netc, "purge", "10.40.0.0/24")
	check(ports.Create(ctx, netc, ports.CreateOpts{NetworkID: n.ID, Name: "purge-port"}).Extract())(t, "create port")
	check(routers.Create(ctx, netc, routers.CreateOpts{Name: "purge-router", GatewayInfo: &routers.GatewayInfo{NetworkID: c.ExternalNetworkID}}).Extract())(t, "create router")
	check(servergroups.Create(ctx, compute, servergroups.CreateOpts{Name: "purge-group", Policy: "soft-affinity"}).Extract())(t, "create server group")
	check(volumes.Create(ctx, bsc, volumes.CreateOpts{Name: "purge-volume", Size: 1}, nil).Extract())(t, "create volume")
	check(floatingips.Create(ctx, netc, floatingips.CreateOpts{FloatingNetworkID: c.ExternalNetworkID}).Extract())(t, "create floating IP")

	left, err := c.Leftovers(ctx, p.ID, p.UserID)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(left, "\n")
	for _, want := range []string{"network purge", "port purge-port", "router purge-router", "server group purge-group", "volume purge-volume", "floating IP 127.77."} {
		if !strings.Contains(all, want) {
			t.Errorf("Leftovers does not list %q:\n%s", want, all)
		}
	}
	if err := c.Purge(ctx, p.ID, p.UserID); err != nil {
		t.Fatalf("purge: %v", err)
	}
	assertEmpty(t, ctx, p)

	start := time.Now()
	if again := openstack.Need(t); again != c {
		t.Error("Need brought the plane up twice in one test binary")
	}
	out, err := testkit.CombinedOutput(time.Minute, "./up")
	if err != nil || !strings.Contains(string(out), "is up (") || time.Since(start) > 10*time.Second {
		t.Errorf("up on a running plane: %v after %s:\n%s", err, time.Since(start), out)
	}
	if c2, err := openstack.Load(openstack.StateFile()); err != nil || c2.ExternalNetworkID != c.ExternalNetworkID || c2.AuthURL != c.AuthURL {
		t.Errorf("the state after a second up: %+v, %v", c2, err)
	}
}
