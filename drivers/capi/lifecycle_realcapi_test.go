package capi

// A whole Magnum lifecycle of the driver against the real Cluster API
// controllers and webhooks (realcapi_test.go's server), on the in-memory
// infrastructure provider: the driver applies, through [capi_driver]
// class_dir, the in-memory variant of the released class, and is driven as
// the conductor drives it: each operation's rows claimed as the conductor's
// handlers claim them, the Contract's method called, then the status sync
// (Observe, then the status machine's decision, saved) until the operation
// ends. Every phase is checked against what the controllers report.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

var realGVRMachine = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}

// pemCerts issues each cluster CA as a real self-signed certificate, which
// the kubeadm bootstrap and control plane providers sign the cluster's
// certificates with (fakeCerts' placeholders would stop them).
type pemCerts struct {
	mu    sync.Mutex
	pairs map[string][2][]byte
}

func (p *pemCerts) CAKeyPair(_ context.Context, c *objects.Cluster, kind CAKind) ([]byte, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := deref(c.UUID) + "/" + string(kind)
	if kp, ok := p.pairs[key]; ok {
		return kp[0], kp[1], nil
	}
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "magnum " + string(kind)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(priv)})
	if p.pairs == nil {
		p.pairs = map[string][2][]byte{}
	}
	p.pairs[key] = [2][]byte{certPEM, keyPEM}
	return certPEM, keyPEM, nil
}

// lifecycle plays the conductor for one cluster: it holds the cluster's
// rows (the database), claims them for each operation as the handlers do,
// calls the driver with the requests they build, and runs the status sync.
type lifecycle struct {
	t     *testing.T
	ctx   context.Context
	s     *apitest.Server
	dyn   dynamic.Interface
	drv   *Driver
	creds *fakeCreds
	// classDir is the driver's class_dir.
	classDir string

	cluster *objects.Cluster
	tmpl    *objects.ClusterTemplate
	ngs     []*objects.NodeGroup
	last    drivers.Observation // of the last sync
	syncs   int
}

// inMemoryDriverSetup is what a driver of its own on the real controllers
// needs: a class directory holding the in-memory variant of the newest
// released class, a RESTMapper through the server's discovery, and a log
// (the driver's lines on stderr with -v).
func inMemoryDriverSetup(t *testing.T, s *apitest.Server) (classDir string, mapper meta.RESTMapper, log *slog.Logger) {
	t.Helper()
	classDir = t.TempDir()
	if _, err := apitest.WriteInMemoryClassDir(classDir, LatestClassVersion, classBundleYAML(t, LatestClassVersion)); err != nil {
		t.Fatal(err)
	}
	mapper, err := s.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return classDir, mapper, log
}

// newLifecycle starts a driver of its own (its informers live as long as
// the test) on the server with the controllers, with the in-memory variant
// of the newest released class in its class directory.
func newLifecycle(ctx context.Context, t *testing.T) *lifecycle {
	return newLifecycleWith(ctx, t, "lifecycle", nil)
}

// newLifecycleWith is newLifecycle with the driver's namespaces under
// prefix, and the class bundle changed by edit (when not nil) first.
func newLifecycleWith(ctx context.Context, t *testing.T, prefix string, edit func([]byte) []byte) *lifecycle {
	s, dyn := needRealCAPI(t)
	dir, mapper, log := inMemoryDriverSetup(t, s)
	if edit != nil {
		f := filepath.Join(dir, LatestClassVersion+".yaml")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, edit(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := &lifecycle{t: t, ctx: ctx, s: s, dyn: dyn, creds: &fakeCreds{}, classDir: dir}
	d, err := New(Options{NamespacePrefix: prefix, ClassDir: dir, CreateTimeout: 10 * time.Minute},
		Deps{Dynamic: dyn, Core: NewCore(dyn), Certs: &pemCerts{}, Credentials: l.creds,
			Mapper: mapper}, log)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := d.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	l.drv = d
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Controllers().Logs(200))
		}
	})
	return l
}

func (l *lifecycle) request() drivers.ClusterRequest {
	var ngs []*objects.NodeGroup
	for _, ng := range l.ngs {
		ngs = append(ngs, objects.Clone(ng))
	}
	return drivers.ClusterRequest{Cluster: objects.Clone(l.cluster), Template: objects.Clone(l.tmpl), NodeGroups: ngs}
}

func (l *lifecycle) ng(name string) *objects.NodeGroup {
	for _, ng := range l.ngs {
		if ng.Name == name {
			return ng
		}
	}
	return nil
}

// sync is one status sync of the cluster: Observe (a fresh one when the
// status machine asks for it), the decision, saved.
func (l *lifecycle) sync() sm.Decision {
	l.t.Helper()
	l.syncs++
	in := sm.Input{Cluster: objects.Clone(l.cluster), Now: time.Now(),
		Timeouts: sm.Timeouts{Create: 10 * time.Minute, Update: 10 * time.Minute, Delete: 10 * time.Minute}}
	for _, ng := range l.ngs {
		in.NodeGroups = append(in.NodeGroups, objects.Clone(ng))
	}
	var d sm.Decision
	for fresh := false; ; fresh = true {
		obs, err := l.drv.Observe(l.ctx, drivers.ObserveRequest{ClusterRequest: l.request(), Fresh: fresh})
		if err != nil {
			l.t.Fatalf("Observe: %v", err)
		}
		l.last, in.Observation, in.Fresh = obs, obs, fresh
		if d = sm.Decide(in); !d.NeedFresh || fresh {
			break
		}
	}
	if d.Skip != "" || d.Resume != nil {
		l.t.Fatalf("status sync: skipped (%q) or resumed (%+v): %s", d.Skip, d.Resume, l.state())
	}
	if d.Cluster != nil {
		l.cluster = d.Cluster
	}
	for _, changed := range d.NodeGroups {
		for i, ng := range l.ngs {
			if ng.UUID == changed.UUID {
				l.ngs[i] = changed
			}
		}
	}
	for _, gone := range d.Destroy {
		l.ngs = slices.DeleteFunc(l.ngs, func(ng *objects.NodeGroup) bool { return ng.UUID == gone.UUID })
	}
	return d
}

// state is the rows and the last observation, for failure messages.
func (l *lifecycle) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s (%s)", l.cluster.Status, deref(l.cluster.StatusReason))
	for _, ng := range l.ngs {
		fmt.Fprintf(&b, "; nodegroup %s %s node_count %d (%s)", ng.Name, ng.Status, ng.NodeCount, deref(ng.StatusReason))
	}
	fmt.Fprintf(&b, "; last observation %+v", l.last)
	return b.String()
}

// await syncs every 300 ms until the cluster leaves status from (the
// operation's in-progress status) and returns the decision that moved it.
// On every sync that still shows from it asks whileInProgress (when not
// nil) about the controllers' state: an answer fails the test. Past within
// the test fails, with the rows and the last observation.
func (l *lifecycle) await(what, from string, within time.Duration, whileInProgress func() string) sm.Decision {
	l.t.Helper()
	deadline := time.Now().Add(within)
	for {
		d := l.sync()
		if l.cluster.Status != from {
			return d
		}
		if whileInProgress != nil {
			if bad := whileInProgress(); bad != "" {
				l.t.Fatalf("%s: %s", what, bad)
			}
		}
		if time.Now().After(deadline) || l.ctx.Err() != nil {
			l.t.Fatalf("%s: still %s after %s; %s", what, from, within, l.state())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (l *lifecycle) ref() ref {
	r, ok := refOf(l.cluster)
	if !ok {
		l.t.Fatalf("cluster without stack_id: %s", l.state())
	}
	return r
}

// live reads the controllers' state of the cluster.
func (l *lifecycle) live(gvr schema.GroupVersionResource, selector string) []unstructured.Unstructured {
	l.t.Helper()
	r := l.ref()
	sel := clusterv1.ClusterNameLabel + "=" + r.Name
	if selector != "" {
		sel += "," + selector
	}
	list, err := l.dyn.Resource(gvr).Namespace(r.Namespace).List(l.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		l.t.Fatal(err)
	}
	return list.Items
}

// deployment is the live MachineDeployment of a nodegroup (nil when none).
func (l *lifecycle) deployment(ng string) *clusterv1.MachineDeployment {
	l.t.Helper()
	items := l.live(realGVRMD, clusterv1.ClusterTopologyMachineDeploymentNameLabel+"="+ng)
	if len(items) == 0 {
		return nil
	}
	md := &clusterv1.MachineDeployment{}
	if err := fromUnstructured(items[0].Object, md); err != nil {
		l.t.Fatal(err)
	}
	return md
}

// mdState is a MachineDeployment's replicas, for messages.
func mdState(md *clusterv1.MachineDeployment) string {
	if md == nil {
		return "no MachineDeployment"
	}
	return fmt.Sprintf("MachineDeployment %s: spec %d, status %d, ready %d, available %d, up to date %d", md.Name,
		i32(md.Spec.Replicas), i32(md.Status.Replicas), i32(md.Status.ReadyReplicas), i32(md.Status.AvailableReplicas),
		i32(md.Status.UpToDateReplicas))
}

// mdSettled reports whether a MachineDeployment runs want replicas, every one
// ready, available and up to date.
func mdSettled(md *clusterv1.MachineDeployment, want int32) bool {
	return md != nil && i32(md.Spec.Replicas) == want && i32(md.Status.Replicas) == want && i32(md.Status.ReadyReplicas) == want &&
		i32(md.Status.AvailableReplicas) == want && i32(md.Status.UpToDateReplicas) == want
}

// machines are the names of a nodegroup's live Machines ("" for the
// control plane's).
func (l *lifecycle) machines(ng string) []string {
	sel := clusterv1.MachineControlPlaneLabel
	if ng != "" {
		sel = clusterv1.ClusterTopologyMachineDeploymentNameLabel + "=" + ng
	}
	var out []string
	for _, m := range l.live(realGVRMachine, sel) {
		out = append(out, m.GetName())
	}
	slices.Sort(out)
	return out
}

// create creates a default Magnum cluster (1 master, 1 worker) of a new
// project, as ClusterCreate does: the rows in CREATE_IN_PROGRESS, then the
// driver call, whose stack_id is stored.
func (l *lifecycle) create() {
	l.t.Helper()
	c, tmpl, ngs := defaultMagnumCluster()
	c.UUID, c.ProjectID = ptr(randHex(4)+"-"+randHex(2)+"-"+randHex(2)+"-"+randHex(2)+"-"+randHex(6)), ptr(randHex(16))
	c.Status, c.CreatedAt = objects.CreateInProgress, ptr(time.Now())
	for _, ng := range ngs {
		ng.ClusterID, ng.Status, ng.CreatedAt = deref(c.UUID), objects.CreateInProgress, ptr(time.Now())
	}
	l.cluster, l.tmpl, l.ngs = c, tmpl, ngs
	res, err := l.drv.CreateCluster(l.ctx, drivers.CreateClusterRequest{ClusterRequest: l.request()})
	if err != nil {
		l.t.Fatalf("CreateCluster: %v", err)
	}
	if res.StackID == "" {
		l.t.Fatal("CreateCluster returned no stack_id")
	}
	l.cluster.StackID = ptr(res.StackID)
}

// nothingLeft checks that, after the cluster's delete, its namespace holds
// nothing but what every namespace holds (empty's objects) and the class
// bundle (shared by the project's clusters); what Cluster API owned is
// removed by the garbage collector, a little after the Cluster.
func (l *lifecycle) nothingLeft(empty string) {
	l.t.Helper()
	bundle, err := os.ReadFile(filepath.Join(l.classDir, LatestClassVersion+".yaml"))
	if err != nil {
		l.t.Fatal(err)
	}
	r := l.ref()
	left, err := l.s.Leftovers(l.ctx, r.Namespace, empty, bundle, time.Minute)
	if err != nil {
		l.t.Fatal(err)
	}
	if len(left) > 0 {
		l.t.Errorf("left in namespace %s after the delete: %v", r.Namespace, left)
	}
}

// The Cluster API driver through a whole Magnum lifecycle, against the
// real controllers and webhooks on the in-memory provider: create (1
// master, 1 worker), resize the worker up to 3 and down to 2 naming the
// node to remove, a second nodegroup created and deleted, an upgrade to the
// next Kubernetes minor, delete; the status sync's phases checked at each
// step against what the controllers report.
func TestRealCAPIDriverLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	l := newLifecycle(ctx, t)
	begin := time.Now()
	step := func(what string) {
		t.Logf("%s in %s (%d syncs)", what, time.Since(begin).Round(time.Millisecond), l.syncs)
		begin, l.syncs = time.Now(), 0
	}

	// A namespace with nothing of Magnum's in it, for what every
	// namespace holds.
	empty, err := l.s.NewNamespace(ctx, "lifecycle-empty")
	if err != nil {
		t.Fatal(err)
	}

	l.create()
	r := l.ref()
	if d := l.sync(); l.cluster.Status != objects.CreateInProgress {
		t.Fatalf("CREATE_COMPLETE at the first sync after the create, before any controller ran: %+v; %s", d, l.state())
	}
	// Before the controllers made it available the cluster is not
	// healthy: UNHEALTHY naming what is not available yet, or UNKNOWN
	// while the informers have not seen the Cluster.
	l.notHealthy("at the first sync of the create", objects.Unhealthy, objects.Unknown)
	l.await("create", objects.CreateInProgress, 3*time.Minute, nil)
	if l.cluster.Status != objects.CreateComplete {
		t.Fatalf("create ended %s; %s", l.cluster.Status, l.state())
	}
	cl, err := l.drv.liveCluster(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if !isTrue(cl.Status.Conditions, clusterv1.AvailableCondition) {
		t.Errorf("CREATE_COMPLETE while the Cluster is not Available: %s", describe(cond(cl.Status.Conditions, clusterv1.AvailableCondition)))
	}
	if md := l.deployment("default-worker"); !mdSettled(md, 1) {
		t.Errorf("CREATE_COMPLETE while the worker is not settled at 1: %s", mdState(md))
	}
	if cp := l.machines(""); len(cp) != 1 {
		t.Errorf("control plane Machines: %v, want 1", cp)
	}
	// (The in-memory provider gives its Machines no addresses: the
	// nodegroups' node_addresses stay empty.)
	for _, ng := range l.ngs {
		if ng.Status != objects.CreateComplete {
			t.Errorf("nodegroup %s %s after the create", ng.Name, ng.Status)
		}
	}
	if deref(l.cluster.APIAddress) == "" || deref(l.cluster.CoeVersion) != "v1.33.4" {
		t.Errorf("api_address %q, coe_version %q after the create", deref(l.cluster.APIAddress), deref(l.cluster.CoeVersion))
	}
	l.healthy("created", "default-worker")
	step("created")

	// Resize up, as ClusterResize does: the nodegroup's new size and both
	// rows in UPDATE_IN_PROGRESS, then the driver call.
	resize := func(ng *objects.NodeGroup, n int, remove []string) {
		t.Helper()
		ng.NodeCount, ng.Status = int64(n), objects.UpdateInProgress
		l.cluster.Status = objects.UpdateInProgress
		if _, err := l.drv.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: l.request(), NodeGroup: objects.Clone(ng),
			NodeCount: n, NodesToRemove: remove}); err != nil {
			t.Fatalf("ResizeCluster %s to %d: %v", ng.Name, n, err)
		}
	}
	worker := l.ng("default-worker")
	resize(worker, 3, nil)
	sawShort, sawUnhealthy := false, false
	l.await("resize to 3", objects.UpdateInProgress, time.Minute, func() string {
		if md := l.deployment("default-worker"); !mdSettled(md, 3) {
			sawShort = true
		}
		// While the MachineDeployment is short of its replicas, health
		// names it.
		if h := l.health(); h.Status == objects.Unhealthy && h.Reason["default-worker"] != "ok" {
			sawUnhealthy = true
		}
		return ""
	})
	md := l.deployment("default-worker")
	if l.cluster.Status != objects.UpdateComplete || !mdSettled(md, 3) {
		t.Fatalf("resize to 3 ended %s with %s; %s", l.cluster.Status, mdState(md), l.state())
	}
	if !sawShort {
		t.Error("the resize to 3 was never seen in progress while the MachineDeployment had fewer than 3 ready replicas")
	}
	if w := l.ng("default-worker"); w.Status != objects.UpdateComplete || w.NodeCount != 3 {
		t.Errorf("worker after the resize: %s, node_count %d", w.Status, w.NodeCount)
	}
	if !sawUnhealthy {
		t.Error("health was never UNHEALTHY naming default-worker while it scaled up to 3")
	}
	l.healthy("resized to 3", "default-worker")
	step("resized to 3")

	// Resize down, naming the node to remove (its Node's name, as
	// `openstack coe cluster resize --nodes-to-remove` would).
	before := l.machines("default-worker")
	victim := ""
	for _, u := range l.live(realGVRMachine, clusterv1.ClusterTopologyMachineDeploymentNameLabel+"=default-worker") {
		m := &clusterv1.Machine{}
		if err := fromUnstructured(u.Object, m); err != nil {
			t.Fatal(err)
		}
		if m.Name == before[1] {
			victim = m.Status.NodeRef.Name
		}
	}
	if victim == "" {
		t.Fatalf("Machine %s has no node", before[1])
	}
	resize(l.ng("default-worker"), 2, []string{victim})
	l.await("resize to 2", objects.UpdateInProgress, time.Minute, nil)
	md = l.deployment("default-worker")
	if l.cluster.Status != objects.UpdateComplete || !mdSettled(md, 2) {
		t.Fatalf("resize to 2 ended %s with %s; %s", l.cluster.Status, mdState(md), l.state())
	}
	if after, want := l.machines("default-worker"), slices.Delete(slices.Clone(before), 1, 2); !slices.Equal(after, want) {
		t.Errorf("worker Machines after removing node %s (Machine %s): %v, want %v", victim, before[1], after, want)
	}
	l.healthy("resized to 2", "default-worker")
	step("resized to 2, node named removed")

	// A worker's node goes NotReady, and comes back.
	l.nodeFault("default-worker")
	step("a node NotReady and Ready again")

	// A second nodegroup, autoscaled (1 to 3, node_count 2), created then
	// deleted, as NodeGroupCreate and NodeGroupDelete do: Cluster API
	// creates its MachineDeployment at the minimum, the status sync sizes
	// it to node_count, and the cluster gets its cluster-autoscaler, which
	// goes with the last autoscaled nodegroup.
	extra := &objects.NodeGroup{UUID: "ng-extra-" + randHex(3), Name: "extra", ClusterID: deref(l.cluster.UUID), Role: objects.RoleWorker,
		NodeCount: 2, MinNodeCount: 1, MaxNodeCount: ptr(int64(3)), Labels: map[string]string{"auto_scaling_enabled": "true"},
		Status: objects.CreateInProgress, CreatedAt: ptr(time.Now()), ImageID: l.tmpl.ImageID, FlavorID: l.tmpl.FlavorID}
	l.ngs = append(l.ngs, extra)
	l.cluster.Status = objects.UpdateInProgress
	if _, err := l.drv.CreateNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: l.request(), NodeGroup: objects.Clone(extra)}); err != nil {
		t.Fatalf("CreateNodeGroup: %v", err)
	}
	l.await("nodegroup create", objects.UpdateInProgress, time.Minute, nil)
	if md := l.deployment("extra"); l.cluster.Status != objects.UpdateComplete || l.ng("extra").Status != objects.CreateComplete || !mdSettled(md, 2) {
		t.Fatalf("autoscaled nodegroup create ended with %s (want 2 replicas: node_count within 1 to 3); %s", mdState(md), l.state())
	}
	autoscalers := func() int {
		return len(l.live(gvrDeployment, LabelComponent+"=cluster-autoscaler"))
	}
	if n := autoscalers(); n != 1 {
		t.Errorf("%d cluster-autoscaler Deployments with an autoscaled nodegroup, want 1", n)
	}
	l.healthy("autoscaled nodegroup created", "default-worker", "extra")
	step("autoscaled nodegroup created")
	extra = l.ng("extra")
	extra.Status = objects.DeleteInProgress
	l.cluster.Status = objects.UpdateInProgress
	if _, err := l.drv.DeleteNodeGroup(ctx, drivers.NodeGroupRequest{ClusterRequest: l.request(), NodeGroup: objects.Clone(extra)}); err != nil {
		t.Fatalf("DeleteNodeGroup: %v", err)
	}
	l.await("nodegroup delete", objects.UpdateInProgress, time.Minute, nil)
	if l.cluster.Status != objects.UpdateComplete || l.ng("extra") != nil {
		t.Fatalf("nodegroup delete ended: %s", l.state())
	}
	if md, ms := l.deployment("extra"), l.machines("extra"); md != nil || len(ms) > 0 {
		t.Errorf("the deleted nodegroup's %s and Machines %v are still there", mdState(md), ms)
	}
	if n := autoscalers(); n != 0 {
		t.Errorf("%d cluster-autoscaler Deployments left with no autoscaled nodegroup", n)
	}
	l.healthy("nodegroup deleted", "default-worker")
	step("nodegroup deleted")

	// Upgrade to the next minor, as ClusterUpgrade does: the upgrade
	// recorded on the rows with the claim, the driver called with the
	// cluster as it was.
	next := objects.Clone(l.tmpl)
	next.UUID, next.Labels = ptr("tmpl-next-"+randHex(3)), map[string]string{"kube_tag": "v1.34.1"}
	asIs := l.request()
	asIs.Cluster.Status = objects.UpdateInProgress
	for _, ng := range asIs.NodeGroups {
		ng.Status = objects.UpdateInProgress
	}
	master := l.ng("default-master")
	l.cluster.Status, l.cluster.ClusterTemplateID = objects.UpdateInProgress, next.UUID
	l.cluster.Labels = map[string]string{"kube_tag": "v1.34.1"}
	for _, ng := range l.ngs {
		ng.Status, ng.Version = objects.UpdateInProgress, ptr("v1.34.1")
	}
	l.tmpl = next
	if _, err := l.drv.UpgradeCluster(ctx, drivers.UpgradeRequest{ClusterRequest: asIs, NewTemplate: objects.Clone(next),
		NodeGroup: objects.Clone(master)}); err != nil {
		t.Fatalf("UpgradeCluster: %v", err)
	}
	// A nodegroup completes only once its Machines run the new version
	// (the topology controller upgrades the control plane first, and only
	// then the MachineDeployments).
	l.await("upgrade to v1.34.1", objects.UpdateInProgress, 3*time.Minute, func() string {
		for _, ng := range l.ngs {
			if ng.Status != objects.UpdateComplete {
				continue
			}
			sel := clusterv1.ClusterTopologyMachineDeploymentNameLabel + "=" + mdNameFor(ng)
			if ng.Role == objects.RoleMaster {
				sel = clusterv1.MachineControlPlaneLabel
			}
			for _, u := range l.live(realGVRMachine, sel) {
				if v, _, _ := unstructured.NestedString(u.Object, "spec", "version"); v != "v1.34.1" {
					return fmt.Sprintf("nodegroup %s UPDATE_COMPLETE while its Machine %s runs %s", ng.Name, u.GetName(), v)
				}
			}
		}
		return ""
	})
	if l.cluster.Status != objects.UpdateComplete {
		t.Fatalf("upgrade ended: %s", l.state())
	}
	for _, u := range l.live(realGVRMachine, "") {
		if v, _, _ := unstructured.NestedString(u.Object, "spec", "version"); v != "v1.34.1" {
			t.Errorf("UPDATE_COMPLETE while Machine %s runs %s", u.GetName(), v)
		}
	}
	if v := deref(l.cluster.CoeVersion); v != "v1.34.1" {
		t.Errorf("coe_version %q after the upgrade", v)
	}
	l.healthy("upgraded", "default-worker")
	step("upgraded to v1.34.1")

	// Credential rotation, as the conductor's credential handler calls it:
	// a new credential in a new Secret, the Cluster pointed at it through
	// the real webhooks and topology controller, the old one revoked; no
	// Machine replaced.
	machineNames := func() []string {
		var out []string
		for _, u := range l.live(realGVRMachine, "") {
			out = append(out, u.GetName())
		}
		slices.Sort(out)
		return out
	}
	machinesBefore := machineNames()
	if err := l.drv.RotateCredential(ctx, l.request()); err != nil {
		t.Fatalf("RotateCredential: %v", err)
	}
	live, err := l.drv.liveCluster(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	identity := variableString(live, "identityRefName")
	if identity == credentialSecretName(r.Name) || !strings.HasPrefix(identity, credentialSecretName(r.Name)+"-") {
		t.Fatalf("identityRefName after the rotation = %q", identity)
	}
	credSecrets := l.live(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, LabelSecretKind+"=cloud-credentials")
	if len(credSecrets) != 1 || credSecrets[0].GetName() != identity {
		var names []string
		for _, u := range credSecrets {
			names = append(names, u.GetName())
		}
		t.Errorf("cloud-credentials Secrets after the rotation: %v, want only %s", names, identity)
	}
	if !slices.Equal(l.creds.revoked, []string{"appcred-1"}) {
		t.Errorf("revoked after the rotation: %v, want the first credential", l.creds.revoked)
	}
	// The topology controller takes the change in, and replaces nothing.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		cl, err := l.drv.liveCluster(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if cl.Status.ObservedGeneration >= cl.Generation && isTrue(cl.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated Cluster's topology not reconciled: %s", describe(cond(cl.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition)))
		}
	}
	time.Sleep(5 * time.Second) // a rollout would have started its new Machines by now
	if after := machineNames(); !slices.Equal(after, machinesBefore) {
		t.Errorf("Machines after the rotation %v, before %v: a credential rotation must not replace servers", after, machinesBefore)
	}
	l.healthy("credential rotated", "default-worker")
	step("credential rotated")

	// Delete, as ClusterDelete does.
	l.cluster.Status = objects.DeleteInProgress
	if _, err := l.drv.DeleteCluster(ctx, l.request()); err != nil {
		t.Fatalf("DeleteCluster: %v", err)
	}
	// Once the informers see the deletion, health is UNKNOWN: the
	// cluster is going, nothing about it is judged.
	sawDeleting := false
	d := l.await("delete", objects.DeleteInProgress, 2*time.Minute, func() string {
		// What the cache shows first: health, polled after, sees the
		// deletion too (or the Cluster gone).
		cl := l.drv.cache.Load().observe(r.Namespace, r.Name).Cluster
		h := l.health()
		if cl != nil && cl.DeletionTimestamp != nil {
			if h.Status != objects.Unknown || (h.Reason["api"] != "Cluster is being deleted" && h.Reason["api"] != "Cluster not found") {
				return fmt.Sprintf("health %s %v while the Cluster is being deleted", h.Status, h.Reason)
			}
			sawDeleting = true
		}
		return ""
	})
	if !sawDeleting {
		t.Error("health was never polled while the Cluster was being deleted")
	}
	if l.cluster.Status != objects.DeleteComplete || !d.Deleted {
		t.Fatalf("delete ended: %s", l.state())
	}
	if _, err := l.drv.liveCluster(ctx, r); !apierrors.IsNotFound(err) {
		t.Errorf("DELETE_COMPLETE while the Cluster is still there (%v)", err)
	}
	if !slices.Equal(l.creds.revoked, []string{"appcred-1", "appcred-2"}) {
		t.Errorf("credentials revoked: %v, want the rotated one, then the cluster's last", l.creds.revoked)
	}
	l.nothingLeft(empty)
	step("deleted")
}
