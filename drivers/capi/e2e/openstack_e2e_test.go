package e2e

// The Cluster API driver against a real OpenStack (test/openstack: Keystone,
// Nova with its fake virt driver, Neutron, Glance, Octavia with noop
// amphorae, Cinder) and the real OpenStack infrastructure provider (CAPO
// v0.14.2, with its webhooks), driven through the conductor as magnum-api
// drives it: casts over RabbitMQ, a user's Keystone token in the request
// context, the periodic status sync. What CAPO makes is checked in
// OpenStack through its own APIs, as the project's user sees it; the
// delete must leave nothing in the project (nor the cluster's application
// credential in Keystone).
//
// There is no data plane: servers go ACTIVE under Nova's fake driver but
// never boot, so no Node joins, the control plane never initialises and
// the workers' Machines wait for their bootstrap data. The cluster stays
// CREATE_IN_PROGRESS; what is judged is every OpenStack resource up to the
// first control-plane server, and the whole teardown.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone"
	"github.com/openstack/magnum-conductor/internal/wiring"
	"github.com/openstack/magnum-conductor/test/openstack"
)

var gvrOpenStackCluster = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1",
	Resource: "openstackclusters"}

// osClients are the project user's clients of each OpenStack service.
type osClients struct {
	compute, network, image, lb, volume *gophercloud.ServiceClient
}

func newOSClients(t *testing.T, p *openstack.Project) osClients {
	t.Helper()
	eo := p.Cloud().EndpointOpts()
	var c osClients
	var err error
	for _, mk := range []func() error{
		func() error { c.compute, err = gcopenstack.NewComputeV2(p.Provider, eo); return err },
		func() error { c.network, err = gcopenstack.NewNetworkV2(p.Provider, eo); return err },
		func() error { c.image, err = gcopenstack.NewImageV2(p.Provider, eo); return err },
		func() error { c.lb, err = gcopenstack.NewLoadBalancerV2(p.Provider, eo); return err },
		func() error { c.volume, err = gcopenstack.NewBlockStorageV3(p.Provider, eo); return err },
	} {
		if err := mk(); err != nil {
			t.Fatal(err)
		}
	}
	c.compute.Microversion = "2.64" // server groups with a policy (not a list)
	return c
}

// projectImage uploads a 1 MiB raw image into the project with the
// properties the driver checks (os_distro, kube_version).
func projectImage(ctx context.Context, t *testing.T, c osClients, kubeTag string) string {
	t.Helper()
	img, err := images.Create(ctx, c.image, images.CreateOpts{Name: "capo-e2e-ubuntu", ContainerFormat: "bare", DiskFormat: "raw",
		Properties: map[string]string{"os_distro": "ubuntu", "kube_version": kubeTag}}).Extract()
	if err != nil {
		t.Fatalf("create image: %v", err)
	}
	if err := imagedata.Upload(ctx, c.image, img.ID, bytes.NewReader(make([]byte, 1<<20))).ExtractErr(); err != nil {
		t.Fatalf("upload image: %v", err)
	}
	eventually(t, "image active", time.Minute, func() (bool, string) {
		got, err := images.Get(ctx, c.image, img.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return got.Status == images.ImageStatusActive, string(got.Status)
	})
	return img.ID
}

// inProject lists what the project holds of one kind, by name.
type inProject struct {
	networks, subnets, routers, secGroups, lbs, fips, servers, serverGroups, volumes []string
}

func listProject(ctx context.Context, t *testing.T, c osClients, projectID string) (inProject, error) {
	t.Helper()
	var out inProject
	nets, err := networks.List(c.network, networks.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	ns, _ := networks.ExtractNetworks(nets)
	for _, n := range ns {
		out.networks = append(out.networks, n.Name)
	}
	sp, err := subnets.List(c.network, subnets.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	ss, _ := subnets.ExtractSubnets(sp)
	for _, s := range ss {
		out.subnets = append(out.subnets, s.Name+" "+s.CIDR)
	}
	rp, err := routers.List(c.network, routers.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	rs, _ := routers.ExtractRouters(rp)
	for _, r := range rs {
		out.routers = append(out.routers, r.Name)
	}
	gp, err := groups.List(c.network, groups.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	gs, _ := groups.ExtractGroups(gp)
	for _, g := range gs {
		if g.Name != "default" {
			out.secGroups = append(out.secGroups, g.Name)
		}
	}
	lp, err := loadbalancers.List(c.lb, loadbalancers.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	ls, _ := loadbalancers.ExtractLoadBalancers(lp)
	for _, l := range ls {
		out.lbs = append(out.lbs, l.Name+" "+l.ProvisioningStatus)
	}
	fp, err := floatingips.List(c.network, floatingips.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	fs, _ := floatingips.ExtractFloatingIPs(fp)
	for _, f := range fs {
		out.fips = append(out.fips, f.FloatingIP+" "+f.Status)
	}
	svp, err := servers.List(c.compute, servers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	svs, _ := servers.ExtractServers(svp)
	for _, s := range svs {
		out.servers = append(out.servers, s.Name+" "+s.Status)
	}
	sgp, err := servergroups.List(c.compute, servergroups.ListOpts{}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	sgs, _ := servergroups.ExtractServerGroups(sgp)
	for _, g := range sgs {
		out.serverGroups = append(out.serverGroups, g.Name)
	}
	vp, err := volumes.List(c.volume, volumes.ListOpts{}).AllPages(ctx)
	if err != nil {
		return out, err
	}
	vs, _ := volumes.ExtractVolumes(vp)
	for _, v := range vs {
		out.volumes = append(out.volumes, v.Name+" "+v.Status)
	}
	return out, nil
}

func (p inProject) String() string {
	return fmt.Sprintf("networks %q, subnets %q, routers %q, security groups %q, load balancers %q, floating IPs %q, servers %q, server groups %q, volumes %q",
		p.networks, p.subnets, p.routers, p.secGroups, p.lbs, p.fips, p.servers, p.serverGroups, p.volumes)
}

// osCase is one cluster of TestRealOpenStackClusterThroughTheConductor:
// the template's options that shape OpenStack objects.
type osCase struct {
	name string
	// masterLB: an API load balancer (else the floating IP is on the
	// control-plane server's port).
	masterLB bool
	// fixedNetwork: the user's own network, subnet and router, named in
	// the template (else CAPO makes them).
	fixedNetwork bool
	// labels beside kube_tag.
	labels map[string]string
	// bootVolumeGiB: the servers boot from a Cinder volume of this size.
	bootVolumeGiB int
}

func TestRealOpenStackClusterThroughTheConductor(t *testing.T) {
	if server == nil {
		t.Skip("end-to-end test: needs the test kube-apiserver and the Cluster API controllers (not started with -short)")
	}
	cloud := openstack.Need(t)
	for _, tc := range []osCase{
		{name: "defaults", masterLB: true},
		{name: "fixed network, no load balancer, boot volume", fixedNetwork: true, bootVolumeGiB: 10,
			labels: map[string]string{"boot_volume_size": "10", "boot_volume_type": cloud.VolumeType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			realOpenStackCluster(t, cloud, tc)
		})
	}
}

func realOpenStackCluster(t *testing.T, cloud *openstack.Cloud, tc osCase) {
	proj := cloud.NewProject(t, "capo-e2e")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(server.Controllers().Logs(200))
		}
	})
	oc := newOSClients(t, proj)
	const kubeTag = "v1.33.4"
	imageID := projectImage(ctx, t, oc, kubeTag)
	if _, err := keypairs.Create(ctx, oc.compute, keypairs.CreateOpts{Name: "capo-e2e",
		PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBzBpl7tOfvnJ5OvMaN7O6gVfSVZk0J0yNfXJTpXrqKU capo-e2e"}).Extract(); err != nil {
		t.Fatalf("create keypair: %v", err)
	}

	subnetCIDR := "10.0.0.0/24"
	var fixedNet, fixedSubnet string
	if tc.fixedNetwork {
		subnetCIDR = "192.168.77.0/24"
		fixedNet, fixedSubnet = userNetwork(ctx, t, oc, cloud.ExternalNetworkID, subnetCIDR)
	}
	// What the project holds before the cluster: the test's own, kept.
	baseline, err := cloud.Leftovers(ctx, proj.ID, proj.UserID)
	if err != nil {
		t.Fatal(err)
	}

	// The conductor, with the driver as cmd/magnum-conductor builds it
	// (capi.NewForConfig: the cloud sweep, server groups, flavor and image
	// checks through gophercloud), the released class for the real CAPO,
	// and the application-credential issuer on the real Keystone (the
	// admin as [keystone_auth]'s service user, which revokes at the end of
	// a delete when no user token is at hand).
	issuer, err := keystone.New(keystone.Options{AuthURL: cloud.AuthURL, Timeout: 10 * time.Second,
		Service: keystone.ServiceCredentials{AuthURL: cloud.AuthURL, Username: cloud.Admin.Username, Password: cloud.Admin.Password,
			UserDomainName: cloud.Admin.UserDomainName, ProjectName: cloud.Admin.ProjectName,
			ProjectDomainName: cloud.Admin.ProjectDomainName}}, log)
	if err != nil {
		t.Fatal(err)
	}
	store, certs, cfg, dyn := conductorParts(t, log)
	nsPrefix := "os" + randHex(3)
	drv, err := capi.NewForConfig(cfg, capi.Options{NamespacePrefix: nsPrefix, CreateTimeout: 20 * time.Minute,
		DeleteTimeout: 20 * time.Minute, CloudRegion: cloud.Region, CloudInterface: "public"},
		wiring.CertSource{Certs: certs}, issuer, log)
	if err != nil {
		t.Fatal(err)
	}
	api, _ := startConductor(t, store, certs, drv, log)

	admin := request.With(ctx, request.Admin())
	tmpl := &objects.ClusterTemplate{UUID: objects.Str(newUUID()), Name: objects.Str("capo-e2e"), ProjectID: objects.Str(proj.ID),
		UserID: objects.Str(proj.UserID), ImageID: objects.Str(imageID), FlavorID: objects.Str("m1.medium"),
		MasterFlavorID: objects.Str("m1.medium"), ExternalNetworkID: objects.Str(cloud.ExternalNetworkName),
		DNSNameserver: objects.Str("127.0.0.53"), Coe: "kubernetes", ServerType: objects.Str("vm"), ClusterDistro: objects.Str("ubuntu"),
		Driver: objects.Str(capi.DriverName), FloatingIPEnabled: true, MasterLBEnabled: tc.masterLB, KeypairID: objects.Str("capo-e2e"),
		Labels: map[string]string{"kube_tag": kubeTag}}
	maps.Copy(tmpl.Labels, tc.labels)
	if tc.fixedNetwork {
		tmpl.FixedNetwork, tmpl.FixedSubnet = objects.Str(fixedNet), objects.Str(fixedSubnet)
	}
	if err := store.CreateClusterTemplate(admin, tmpl); err != nil {
		t.Fatal(err)
	}
	token := proj.Provider.Token()
	uuid := newUUID()
	userCtx := func() context.Context {
		return request.With(ctx, &request.Context{UserID: proj.UserID, ProjectID: proj.ID, UserName: proj.Username,
			ProjectName: proj.Name, AuthToken: token, AuthURL: cloud.AuthURL, Roles: cloud.MemberRoles,
			RequestID: request.NewRequestID()})
	}
	l := &lifecycle{t: t, ctx: ctx, admin: admin, store: store, dyn: dyn, uuid: uuid}
	createTimeout := 60
	set := map[string]any{"keypair": "capo-e2e", "master_flavor_id": "m1.medium", "flavor_id": "m1.medium",
		"master_lb_enabled": tc.masterLB, "labels": tmpl.Labels}
	if tc.fixedNetwork {
		set["fixed_network"], set["fixed_subnet"] = fixedNet, fixedSubnet
	}
	if err := api.ClusterCreateAsync(userCtx(), clusterPrimitive(uuid, "capo-e2e", proj.ID, proj.UserID, *tmpl.UUID, set),
		1, 1, &createTimeout); err != nil {
		t.Fatal(err)
	}
	var cluster *objects.Cluster
	eventually(t, "CAPI Cluster written", 2*time.Minute, func() (bool, string) {
		c, ngs := l.rows()
		if c == nil {
			return false, "no cluster row"
		}
		cluster = c
		if c.Status == objects.CreateFailed {
			t.Fatalf("create failed: %s", describe(c, ngs))
		}
		return objects.Deref(c.StackID) != "", describe(c, ngs)
	})
	ns, name, _ := strings.Cut(objects.Deref(cluster.StackID), "/")
	l.ns, l.name = ns, name

	// CAPO reconciles the OpenStackCluster to ready with the network,
	// router, security groups, load balancer and floating IP the template
	// asks for, and the first control-plane server goes ACTIVE.
	var seen inProject
	eventually(t, "the cluster's OpenStack resources and its first server", 8*time.Minute, func() (bool, string) {
		c, ngs := l.rows()
		if c != nil && c.Status == objects.CreateFailed {
			t.Fatalf("create failed: %s", describe(c, ngs))
		}
		p, err := listProject(ctx, t, oc, proj.ID)
		if err != nil {
			return false, err.Error()
		}
		seen = p
		cl := l.cluster()
		if cl == nil || cl.Spec.InfrastructureRef.Name == "" {
			return false, "no infrastructure cluster yet"
		}
		osc, err := dyn.Resource(gvrOpenStackCluster).Namespace(ns).Get(ctx, cl.Spec.InfrastructureRef.Name, metav1.GetOptions{})
		if err != nil {
			return false, "OpenStackCluster: " + err.Error()
		}
		ready, _, _ := unstructuredBool(osc.Object, "status", "ready")
		if !ready {
			return false, "OpenStackCluster not ready; " + p.String()
		}
		if len(p.servers) != 1 || !strings.HasSuffix(p.servers[0], " ACTIVE") {
			return false, p.String()
		}
		return true, ""
	})
	// One network, subnet and router: CAPO's, or the user's own (CAPO
	// makes none then); two security groups (control plane, workers).
	if len(seen.networks) != 1 || len(seen.subnets) != 1 || !strings.HasSuffix(seen.subnets[0], " "+subnetCIDR) ||
		len(seen.routers) != 1 || len(seen.secGroups) != 2 {
		t.Errorf("OpenStack resources of the cluster: %s", seen)
	}
	if tc.fixedNetwork && (seen.networks[0] != fixedNet || seen.routers[0] != fixedNet+"-router") {
		t.Errorf("networks %q, routers %q: CAPO made its own beside the fixed network", seen.networks, seen.routers)
	}
	wantLBs := 0
	if tc.masterLB {
		wantLBs = 1
	}
	if len(seen.lbs) != wantLBs || (wantLBs == 1 && !strings.HasSuffix(seen.lbs[0], " ACTIVE")) {
		t.Errorf("load balancers %q, want %d ACTIVE", seen.lbs, wantLBs)
	}
	if len(seen.fips) != 1 || !strings.HasPrefix(seen.fips[0], "127.77.") {
		t.Errorf("floating IPs %q, want one for the API, from the loopback external network", seen.fips)
	}
	checkVolumes(ctx, t, oc, tc.bootVolumeGiB, cloud.VolumeType)
	c, _ := l.rows()
	if c.Status != objects.CreateInProgress {
		t.Errorf("status %s (%s): with no data plane the create stays in progress", c.Status, objects.Deref(c.StatusReason))
	}
	// The API endpoint is the floating IP on the load balancer.
	if ep := objects.Deref(c.APIAddress); ep != "" && !strings.Contains(ep, strings.Fields(seen.fips[0])[0]) {
		t.Errorf("api_address %s is not the floating IP %s", ep, seen.fips[0])
	}
	if tc.masterLB {
		checkLoadBalancer(ctx, t, oc, proj.ID)
	}
	checkServer(ctx, t, oc, imageID, tc.bootVolumeGiB > 0)

	// What the cluster's cloud controller manager and Cinder CSI plugin
	// would have made, which CAPO does not know about: the delete's sweep
	// removes them.
	sweepTargets(ctx, t, oc, name, subnetCIDR)

	if err := api.ClusterDeleteAsync(userCtx(), uuid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster's rows removed", 8*time.Minute, func() (bool, string) {
		c, ngs := l.rows()
		if c != nil && c.Status == objects.DeleteFailed {
			t.Fatalf("delete failed: %s", describe(c, ngs))
		}
		return c == nil, describe(c, ngs)
	})
	// Nothing left in the project, nor the cluster's credential.
	left, err := cloud.Leftovers(ctx, proj.ID, proj.UserID)
	if err != nil {
		t.Fatal(err)
	}
	// What the test made itself (image, keypair, a fixed network) stays.
	left = slices.DeleteFunc(left, func(s string) bool { return slices.Contains(baseline, s) })
	if len(left) > 0 {
		t.Errorf("left in the project after the delete: %q", left)
	}
	idc, err := gcopenstack.NewIdentityV3(cloud.AdminProvider(t), cloud.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := applicationcredentials.List(idc, proj.UserID, applicationcredentials.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if creds, _ := applicationcredentials.ExtractApplicationCredentials(pages); len(creds) != 0 {
		t.Errorf("the user's application credentials after the delete: %+v", creds)
	}
}

func unstructuredBool(obj map[string]any, path ...string) (bool, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false, false, nil
		}
		cur = m[p]
	}
	b, ok := cur.(bool)
	return b, ok, nil
}

// checkLoadBalancer: the API load balancer has a listener on 6443, a pool
// with a health monitor, and the control-plane server as a member.
func checkLoadBalancer(ctx context.Context, t *testing.T, c osClients, projectID string) {
	t.Helper()
	lp, err := listeners.List(c.lb, listeners.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := listeners.ExtractListeners(lp)
	if len(ls) != 1 || ls[0].ProtocolPort != 6443 {
		t.Errorf("listeners %+v, want one on 6443", ls)
	}
	pp, err := pools.List(c.lb, pools.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := pools.ExtractPools(pp)
	if len(ps) != 1 {
		t.Fatalf("pools %+v, want one", ps)
	}
	eventually(t, "the control-plane server a member of the API pool", 2*time.Minute, func() (bool, string) {
		mp, err := pools.ListMembers(c.lb, ps[0].ID, pools.ListMembersOpts{}).AllPages(ctx)
		if err != nil {
			return false, err.Error()
		}
		ms, _ := pools.ExtractMembers(mp)
		return len(ms) == 1 && ms[0].ProtocolPort == 6443, fmt.Sprintf("members %+v", ms)
	})
	mp, err := monitors.List(c.lb, monitors.ListOpts{ProjectID: projectID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ms, _ := monitors.ExtractMonitors(mp); len(ms) != 1 {
		t.Errorf("health monitors %+v, want one", ms)
	}
}

// checkServer: the control-plane server has the template's flavor, the
// image, the keypair, a port on the cluster's network, and is in the
// server group the driver made for the control plane.
func checkServer(ctx context.Context, t *testing.T, c osClients, imageID string, fromVolume bool) {
	t.Helper()
	sp, err := servers.List(c.compute, servers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, _ := servers.ExtractServers(sp)
	if len(ss) != 1 {
		t.Fatalf("servers %d, want 1", len(ss))
	}
	s := ss[0]
	if s.Flavor["original_name"] != "m1.medium" || s.KeyName != "capo-e2e" {
		t.Errorf("server %s: flavor %v, key %q; want m1.medium, capo-e2e", s.Name, s.Flavor, s.KeyName)
	}
	// Booted from the image, or from a volume made from it (Nova shows no
	// image then).
	if img, _ := s.Image["id"].(string); (img == imageID) == fromVolume {
		t.Errorf("server %s: image %v, booted from a volume %v", s.Name, s.Image, fromVolume)
	}
	if len(s.Addresses) != 1 {
		t.Errorf("server %s addresses %v, want a port on the cluster's network", s.Name, s.Addresses)
	}
	gp, err := servergroups.List(c.compute, servergroups.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gs, _ := servergroups.ExtractServerGroups(gp)
	in := ""
	for _, g := range gs {
		if slices.Contains(g.Members, s.ID) {
			in = g.Name
		}
	}
	if in == "" {
		t.Errorf("server %s is in none of the server groups %v", s.Name, gs)
	}
}

// sweepTargets makes, as the project's user, a load balancer named as the
// OpenStack cloud controller manager names a Service's, with a floating IP
// on its VIP, and a volume with the Cinder CSI plugin's cluster metadata.
func sweepTargets(ctx context.Context, t *testing.T, c osClients, clusterName, subnetCIDR string) {
	t.Helper()
	sp, err := subnets.List(c.network, subnets.ListOpts{CIDR: subnetCIDR}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, _ := subnets.ExtractSubnets(sp)
	if len(ss) != 1 {
		t.Fatalf("the cluster's subnet: %d found", len(ss))
	}
	lb, err := loadbalancers.Create(ctx, c.lb, loadbalancers.CreateOpts{Name: cloudsweep.LoadBalancerPrefix(clusterName) + "default_web",
		VipSubnetID: ss[0].ID}).Extract()
	if err != nil {
		t.Fatalf("create a Service's load balancer: %v", err)
	}
	eventually(t, "the Service's load balancer active", 2*time.Minute, func() (bool, string) {
		got, err := loadbalancers.Get(ctx, c.lb, lb.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return got.ProvisioningStatus == "ACTIVE", got.ProvisioningStatus
	})
	ext := ""
	np, err := networks.List(c.network, networks.ListOpts{Name: "public"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nets, _ := networks.ExtractNetworks(np); len(nets) == 1 {
		ext = nets[0].ID
	}
	if _, err := floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: ext, PortID: lb.VipPortID}).Extract(); err != nil {
		t.Fatalf("floating IP on the Service's load balancer: %v", err)
	}
	if _, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 1, Name: "pvc-capo-e2e",
		Metadata: map[string]string{cloudsweep.VolumeClusterKey: clusterName}}, nil).Extract(); err != nil {
		t.Fatalf("create a PersistentVolume's volume: %v", err)
	}
}

// userNetwork makes, as the project's user, a network, a subnet of cidr
// and a router with the external gateway and an interface on the subnet
// (what a user names as a template's fixed network), and returns the
// network's and the subnet's names.
func userNetwork(ctx context.Context, t *testing.T, c osClients, externalNetworkID, cidr string) (network, subnet string) {
	t.Helper()
	network, subnet = "capo-fixed-"+randHex(3), "capo-fixed-subnet"
	n, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: network}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	sn, err := subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: n.ID, Name: subnet, CIDR: cidr, IPVersion: 4,
		DNSNameservers: []string{"127.0.0.53"}}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	r, err := routers.Create(ctx, c.network, routers.CreateOpts{Name: network + "-router",
		GatewayInfo: &routers.GatewayInfo{NetworkID: externalNetworkID}}).Extract()
	if err != nil {
		t.Fatalf("create router: %v", err)
	}
	if _, err := routers.AddInterface(ctx, c.network, r.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract(); err != nil {
		t.Fatalf("router interface: %v", err)
	}
	return network, subnet
}

// checkVolumes: the control-plane server has the cluster's
// docker_volume_size (10 GiB) as an extra volume for containerd and, when
// bootGiB is not 0, boots from a Cinder volume of that size and type; no
// other volume.
func checkVolumes(ctx context.Context, t *testing.T, c osClients, bootGiB int, volumeType string) {
	t.Helper()
	pages, err := volumes.List(c.volume, volumes.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := volumes.ExtractVolumes(pages)
	want := 1
	var containerd, boot bool
	for _, v := range vs {
		switch {
		case strings.HasSuffix(v.Name, "-containerd") && v.Size == 10 && len(v.Attachments) == 1:
			containerd = true
		case bootGiB > 0 && v.Size == bootGiB && v.VolumeType == volumeType && v.Bootable == "true" && len(v.Attachments) == 1:
			boot = true
		}
	}
	if bootGiB > 0 {
		want = 2
	}
	if len(vs) != want || !containerd || boot != (bootGiB > 0) {
		var got []string
		for _, v := range vs {
			got = append(got, fmt.Sprintf("%s %d GiB %s bootable=%s attachments=%d %s", v.Name, v.Size, v.VolumeType, v.Bootable, len(v.Attachments), v.Status))
		}
		t.Errorf("volumes %q; want the 10 GiB containerd volume attached, and a %d GiB %s boot volume when asked (boot volume %d GiB)",
			got, bootGiB, volumeType, bootGiB)
	}
}
