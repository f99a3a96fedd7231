package cloudsweep_test

// The sweeper and the lookups against the tests' real OpenStack control
// plane (test/openstack), with a cluster's own restricted application
// credential, on resources made as the OpenStack cloud controller manager
// (load balancers named kube_service_<cluster>_<namespace>_<service> with a
// floating IP on their VIP) and the Cinder CSI plugin (volumes with the
// cinder.csi.openstack.org/cluster metadata) make them. The fake-based
// tests stay for what the real services do not let a test arrange at will:
// a load balancer held in a PENDING_* state (Octavia's noop amphorae settle
// in about two seconds), Manila share types (no Manila in the plane), and
// the request paths.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
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
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/openstack"
)

// realCloud is a fresh project and the cloudsweep.Cloud of a restricted
// application credential of its user: what a cluster's clouds.yaml holds.
func realCloud(t *testing.T, prefix string) (*openstack.Cloud, *openstack.Project, cloudsweep.Cloud) {
	t.Helper()
	c := openstack.Need(t)
	p := c.NewProject(t, prefix)
	id, secret := p.ApplicationCredential(t, "cluster")
	return c, p, cloudsweep.Cloud{AuthURL: c.AuthURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret,
		Region: c.Region, Interface: "public"}
}

func ok[T any](v T, err error) func(t *testing.T, what string) T {
	return func(t *testing.T, what string) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func client(t *testing.T, c *openstack.Cloud, p *gophercloud.ProviderClient, f func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := f(p, c.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func await(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	if err := testkit.Await(ctx, 500*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

func gone(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// ccmLoadBalancer makes a load balancer as the cloud controller manager
// makes one for a Service of type LoadBalancer (name, description, a TCP
// listener) and the floating IP on its VIP port, and waits for it ACTIVE.
func ccmLoadBalancer(t *testing.T, ctx context.Context, c *openstack.Cloud, lbc, netc *gophercloud.ServiceClient, name, subnetID string) (*loadbalancers.LoadBalancer, *floatingips.FloatingIP) {
	t.Helper()
	lb := ok(loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{
		Name: name, Description: "Kubernetes external service " + name, VipSubnetID: subnetID,
		Listeners: []listeners.CreateOpts{{Name: "listener_0_" + name, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}},
	}).Extract())(t, "create load balancer "+name)
	await(t, ctx, "load balancer "+name+" ACTIVE", func() (bool, string) {
		l, err := loadbalancers.Get(ctx, lbc, lb.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		lb = l
		return l.ProvisioningStatus == "ACTIVE", l.ProvisioningStatus
	})
	fip := ok(floatingips.Create(ctx, netc, floatingips.CreateOpts{
		FloatingNetworkID: c.ExternalNetworkID, PortID: lb.VipPortID, Description: "Floating IP for Kubernetes external service " + name,
	}).Extract())(t, "create the floating IP of "+name)
	return lb, fip
}

// csiVolume makes a volume as the Cinder CSI plugin makes one for a
// PersistentVolumeClaim of cluster (no metadata when cluster is "").
func csiVolume(t *testing.T, ctx context.Context, bsc *gophercloud.ServiceClient, name, cluster string) *volumes.Volume {
	t.Helper()
	md := map[string]string{}
	if cluster != "" {
		md = map[string]string{cloudsweep.VolumeClusterKey: cluster, "csi.storage.k8s.io/pv/name": name,
			"csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "default"}
	}
	v := ok(volumes.Create(ctx, bsc, volumes.CreateOpts{Name: name, Size: 1, Description: "Created by OpenStack Cinder CSI driver",
		Metadata: md}, nil).Extract())(t, "create volume "+name)
	await(t, ctx, "volume "+name+" available", func() (bool, string) {
		got, err := volumes.Get(ctx, bsc, v.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return got.Status == "available", got.Status
	})
	return v
}

// TestRealOpenStackSweepLoadBalancersFloatingIPsAndVolumes: the cluster's
// load balancer (with its listener) and the floating IP on its VIP go, and
// its detached volume; another cluster's load balancer, whose name shares
// the prefix, CAPO's own API load balancer, their floating IPs and the
// other volumes stay; the attached volume is reported as remaining and goes
// at the sweep after its server; a last sweep finds nothing to do. Each
// outcome is checked in OpenStack by its own API.
func TestRealOpenStackSweepLoadBalancersFloatingIPsAndVolumes(t *testing.T) {
	t.Parallel()
	c, p, cloud := realCloud(t, "sweep")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	netc := client(t, c, p.Provider, gos.NewNetworkV2)
	lbc := client(t, c, p.Provider, gos.NewLoadBalancerV2)
	bsc := client(t, c, p.Provider, gos.NewBlockStorageV3)
	compute := client(t, c, p.Provider, gos.NewComputeV2)

	n := ok(networks.Create(ctx, netc, networks.CreateOpts{Name: "k8s-clusterapi-cluster-default-k8s-abc"}).Extract())(t, "create network")
	sn := ok(subnets.Create(ctx, netc, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.6.0.0/24", IPVersion: gophercloud.IPv4}).Extract())(t, "create subnet")
	r := ok(routers.Create(ctx, netc, routers.CreateOpts{Name: "k8s-abc", GatewayInfo: &routers.GatewayInfo{NetworkID: c.ExternalNetworkID}}).Extract())(t, "create router")
	ok(routers.AddInterface(ctx, netc, r.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract())(t, "add router interface")

	mine, mineFIP := ccmLoadBalancer(t, ctx, c, lbc, netc, "kube_service_k8s-abc_default_web", sn.ID)
	other, otherFIP := ccmLoadBalancer(t, ctx, c, lbc, netc, "kube_service_k8s-abcd_default_web", sn.ID)
	capo, capoFIP := ccmLoadBalancer(t, ctx, c, lbc, netc, "k8s-clusterapi-cluster-default-k8s-abc-kubeapi", sn.ID)

	vol1 := csiVolume(t, ctx, bsc, "pvc-1", "k8s-abc")
	vol2 := csiVolume(t, ctx, bsc, "pvc-2", "k8s-abc")
	vol3 := csiVolume(t, ctx, bsc, "pvc-3", "k8s-abcd")
	vol4 := csiVolume(t, ctx, bsc, "pvc-4", "")
	port := ok(ports.Create(ctx, netc, ports.CreateOpts{NetworkID: n.ID}).Extract())(t, "create port")
	srv := ok(servers.Create(ctx, compute, servers.CreateOpts{Name: "k8s-abc-worker", FlavorRef: flavorID(t, ctx, compute, c.Flavors[0]),
		ImageRef: c.ImageID, Networks: []servers.Network{{Port: port.ID}}}, nil).Extract())(t, "create server")
	await(t, ctx, "server ACTIVE", func() (bool, string) {
		s, err := servers.Get(ctx, compute, srv.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return s.Status == "ACTIVE", s.Status
	})
	ok(volumeattach.Create(ctx, compute, srv.ID, volumeattach.CreateOpts{VolumeID: vol2.ID}).Extract())(t, "attach pvc-2")
	await(t, ctx, "pvc-2 in-use", func() (bool, string) {
		v, err := volumes.Get(ctx, bsc, vol2.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return v.Status == "in-use", v.Status
	})

	s := cloudsweep.New(0)
	what := cloudsweep.What{LoadBalancers: true, Volumes: true}
	res := ok(s.Sweep(ctx, cloud, "k8s-abc", what))(t, "first sweep")
	if res.DeletedLoadBalancers != 1 || res.DeletedFloatingIPs != 1 || res.DeletedVolumes != 1 {
		t.Errorf("first sweep deleted %d load balancers, %d floating IPs, %d volumes; want 1, 1, 1",
			res.DeletedLoadBalancers, res.DeletedFloatingIPs, res.DeletedVolumes)
	}
	if res.Done() || len(res.Remaining) != 1 || !strings.Contains(res.Remaining[0], vol2.ID+" is in-use") {
		t.Errorf("remaining %q, want only the attached volume %s", res.Remaining, vol2.ID)
	}
	await(t, ctx, "the cluster's load balancer, its VIP port and floating IP, and pvc-1 gone", func() (bool, string) {
		_, lerr := loadbalancers.Get(ctx, lbc, mine.ID).Extract()
		_, perr := ports.Get(ctx, netc, mine.VipPortID).Extract()
		_, ferr := floatingips.Get(ctx, netc, mineFIP.ID).Extract()
		_, verr := volumes.Get(ctx, bsc, vol1.ID).Extract()
		return gone(lerr) && gone(perr) && gone(ferr) && gone(verr), "not all gone yet"
	})
	for _, lb := range []*loadbalancers.LoadBalancer{other, capo} {
		if l, err := loadbalancers.Get(ctx, lbc, lb.ID).Extract(); err != nil || l.ProvisioningStatus != "ACTIVE" {
			t.Errorf("load balancer %s: %v (%v), want it left ACTIVE", lb.Name, l, err)
		}
	}
	for _, f := range []*floatingips.FloatingIP{otherFIP, capoFIP} {
		if got, err := floatingips.Get(ctx, netc, f.ID).Extract(); err != nil || got.PortID != f.PortID {
			t.Errorf("floating IP %s: %+v (%v), want it left on port %s", f.FloatingIP, got, err, f.PortID)
		}
	}
	for _, v := range []*volumes.Volume{vol2, vol3, vol4} {
		if _, err := volumes.Get(ctx, bsc, v.ID).Extract(); err != nil {
			t.Errorf("volume %s: %v, want it left", v.Name, err)
		}
	}

	// The server holding pvc-2 goes (CAPO deletes the machines first).
	if err := servers.Delete(ctx, compute, srv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, "pvc-2 available", func() (bool, string) {
		v, err := volumes.Get(ctx, bsc, vol2.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return v.Status == "available", v.Status
	})
	res = ok(s.Sweep(ctx, cloud, "k8s-abc", what))(t, "second sweep")
	if !res.Done() || res.DeletedVolumes != 1 || res.DeletedLoadBalancers != 0 {
		t.Errorf("second sweep: %+v, want pvc-2 deleted and done", res)
	}
	await(t, ctx, "pvc-2 gone", func() (bool, string) {
		_, err := volumes.Get(ctx, bsc, vol2.ID).Extract()
		return gone(err), "still there"
	})
	res = ok(s.Sweep(ctx, cloud, "k8s-abc", what))(t, "third sweep")
	if !res.Done() || res.DeletedLoadBalancers+res.DeletedFloatingIPs+res.DeletedVolumes != 0 {
		t.Errorf("third sweep: %+v, want nothing to do", res)
	}
	if v, err := volumes.Get(ctx, bsc, vol3.ID).Extract(); err != nil || v.Metadata[cloudsweep.VolumeClusterKey] != "k8s-abcd" {
		t.Errorf("the other cluster's volume: %v, %v", v, err)
	}
}

func flavorID(t *testing.T, ctx context.Context, compute *gophercloud.ServiceClient, name string) string {
	t.Helper()
	all := ok(flavors.ListDetail(compute, flavors.ListOpts{}).AllPages(ctx))(t, "list flavors")
	fl := ok(flavors.ExtractFlavors(all))(t, "list flavors")
	for _, f := range fl {
		if f.Name == name {
			return f.ID
		}
	}
	t.Fatalf("no flavor %s", name)
	return ""
}

// TestRealOpenStackServerGroups: EnsureServerGroups creates the groups
// with the soft policy Nova is asked for, reuses one of the name that
// exists (whatever its policy), returns the same ids when run again; the
// sweep by prefix and DeleteServerGroups by name delete only theirs.
func TestRealOpenStackServerGroups(t *testing.T) {
	t.Parallel()
	c, p, cloud := realCloud(t, "sgroups")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	compute := client(t, c, p.Provider, gos.NewComputeV2)
	compute.Microversion = "2.64"
	old := ok(servergroups.Create(ctx, compute, servergroups.CreateOpts{Name: "magnum-u1-workers", Policy: "anti-affinity"}).Extract())(t, "create group")
	otherGroup := ok(servergroups.Create(ctx, compute, servergroups.CreateOpts{Name: "magnum-u10-control-plane", Policy: "affinity"}).Extract())(t, "create group")

	s := cloudsweep.New(0)
	groups := []cloudsweep.ServerGroup{{Name: "magnum-u1-control-plane", Policy: "soft-anti-affinity"}, {Name: "magnum-u1-workers", Policy: "soft-anti-affinity"}}
	ids := ok(s.EnsureServerGroups(ctx, cloud, groups))(t, "ensure")
	if ids["magnum-u1-workers"] != old.ID || ids["magnum-u1-control-plane"] == "" || len(ids) != 2 {
		t.Fatalf("ids %v, want the existing magnum-u1-workers (%s) and a new group", ids, old.ID)
	}
	cp := ok(servergroups.Get(ctx, compute, ids["magnum-u1-control-plane"]).Extract())(t, "get the new group")
	if cp.Policy == nil || *cp.Policy != "soft-anti-affinity" || cp.Name != "magnum-u1-control-plane" {
		t.Errorf("new group %+v, want soft-anti-affinity", cp)
	}
	if again := ok(s.EnsureServerGroups(ctx, cloud, groups))(t, "ensure again"); !reflect.DeepEqual(again, ids) {
		t.Errorf("second ensure %v, want %v", again, ids)
	}
	n := ok(s.DeleteServerGroups(ctx, cloud, []string{"magnum-u1-workers", "magnum-u1-gone"}))(t, "delete by name")
	if n != 1 {
		t.Errorf("DeleteServerGroups deleted %d, want 1", n)
	}
	res := ok(s.Sweep(ctx, cloud, "k8s-abc", cloudsweep.What{ServerGroupPrefix: "magnum-u1-"}))(t, "sweep")
	if res.DeletedServerGroups != 1 {
		t.Errorf("sweep deleted %d server groups, want 1", res.DeletedServerGroups)
	}
	all := ok(servergroups.List(compute, servergroups.ListOpts{}).AllPages(ctx))(t, "list groups")
	left := ok(servergroups.ExtractServerGroups(all))(t, "list groups")
	if len(left) != 1 || left[0].ID != otherGroup.ID {
		t.Errorf("left %+v, want only %s", left, otherGroup.Name)
	}
}

// TestRealOpenStackFlavorImageAndStorageTypes: the lookups the driver makes
// at cluster create with the cluster's credential: a public flavor by name
// and by id; a private flavor shared with the project, with its GPUs from
// its extra specs; an image by id and by name with its properties, an
// ambiguous and a missing name; the volume types and Cinder's default, and
// no Manila. A refused credential is an error naming its id, never its
// secret.
func TestRealOpenStackFlavorImageAndStorageTypes(t *testing.T) {
	t.Parallel()
	c, p, cloud := realCloud(t, "lookups")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := cloudsweep.New(0)

	small := ok(s.Flavor(ctx, cloud, c.Flavors[0]))(t, "flavor by name")
	if small.Name != "m1.small" || small.VCPUs != 1 || small.RAMMiB != 2048 || small.DiskGiB != 20 || small.GPUs != 0 {
		t.Errorf("m1.small: %+v", small)
	}
	if byID := ok(s.Flavor(ctx, cloud, small.ID))(t, "flavor by id"); byID != small {
		t.Errorf("by id %+v, by name %+v", byID, small)
	}
	admin := client(t, c, c.AdminProvider(t), gos.NewComputeV2)
	private := false
	gpu := ok(flavors.Create(ctx, admin, flavors.CreateOpts{Name: "g1-" + p.Name, VCPUs: 16, RAM: 65536, Disk: gophercloud.IntToPointer(100),
		Ephemeral: gophercloud.IntToPointer(20), IsPublic: &private}).Extract())(t, "create GPU flavor")
	t.Cleanup(func() { _ = flavors.Delete(context.Background(), admin, gpu.ID).ExtractErr() })
	ok(flavors.CreateExtraSpecs(ctx, admin, gpu.ID, flavors.ExtraSpecsOpts{"pci_passthrough:alias": "a100:2, t4:1", "resources:VGPU": "1"}).Extract())(t, "extra specs")
	ok(flavors.AddAccess(ctx, admin, gpu.ID, flavors.AddAccessOpts{Tenant: p.ID}).Extract())(t, "flavor access")
	if f := ok(s.Flavor(ctx, cloud, gpu.Name))(t, "private GPU flavor"); f.GPUs != 4 || f.Ephemeral != 20 || f.ID != gpu.ID {
		t.Errorf("GPU flavor %+v, want 4 GPUs, 20 GiB ephemeral", f)
	}
	if _, err := s.Flavor(ctx, cloud, "nope"); !errors.Is(err, cloudsweep.ErrNotFound) {
		t.Errorf("unknown flavor: %v", err)
	}

	imgc := client(t, c, p.Provider, gos.NewImageV2)
	mkImage := func(name string, props map[string]string) string {
		img := ok(images.Create(ctx, imgc, images.CreateOpts{Name: name, DiskFormat: "raw", ContainerFormat: "bare", Properties: props}).Extract())(t, "create image "+name)
		if err := imagedata.Upload(ctx, imgc, img.ID, bytes.NewReader(make([]byte, 4096))).ExtractErr(); err != nil {
			t.Fatalf("upload image %s: %v", name, err)
		}
		return img.ID
	}
	kube := mkImage("ubuntu-2404-kube-v1.33.4", map[string]string{"os_distro": "ubuntu", "kube_version": "v1.33.4"})
	mkImage("twice", nil)
	mkImage("twice", nil)
	want := cloudsweep.Image{ID: kube, Name: "ubuntu-2404-kube-v1.33.4", OSDistro: "ubuntu", KubeVersion: "v1.33.4"}
	for _, key := range []string{kube, "ubuntu-2404-kube-v1.33.4"} {
		if img := ok(s.Image(ctx, cloud, key))(t, "image "+key); img != want {
			t.Errorf("image %s: %+v, want %+v", key, img, want)
		}
	}
	if img := ok(s.Image(ctx, cloud, c.ImageName))(t, "the public image"); img.ID != c.ImageID || img.OSDistro != "" {
		t.Errorf("public image %+v", img)
	}
	if _, err := s.Image(ctx, cloud, "nope"); !errors.Is(err, cloudsweep.ErrNotFound) {
		t.Errorf("missing image: %v", err)
	}
	if _, err := s.Image(ctx, cloud, "twice"); err == nil || errors.Is(err, cloudsweep.ErrNotFound) || !strings.Contains(err.Error(), "2 images") {
		t.Errorf("ambiguous name: %v", err)
	}

	st := ok(s.StorageTypes(ctx, cloud, true))(t, "storage types")
	if !st.HasCinder || !slices.Contains(st.Volume, "__DEFAULT__") || !slices.Contains(st.Volume, c.VolumeType) ||
		st.DefaultVolume != c.VolumeType || st.HasManila || st.Share != nil {
		t.Errorf("storage types %+v, want Cinder's __DEFAULT__ and %s (the default), no Manila", st, c.VolumeType)
	}

	bad := cloud
	bad.ApplicationCredentialSecret = "wrong-secret-value"
	_, err := s.Sweep(ctx, bad, "k8s-abc", cloudsweep.What{LoadBalancers: true})
	if err == nil || !strings.Contains(err.Error(), cloud.ApplicationCredentialID) || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Errorf("refused credential: %v", err)
	}
	if _, err := s.StorageTypes(ctx, bad, false); err == nil {
		t.Error("a refused credential listed volume types")
	}
}
