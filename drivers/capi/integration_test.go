package capi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// server is the one API server of this test binary (apiserver-testing.md
// gotcha 10), started by TestMain unless -short.
var server *apitest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	// The first build of the test server takes minutes (apitest); later
	// runs find it up to date.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	start := time.Now()
	s, err := startServer(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "capi integration tests: cannot start the test API server:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "capi: kube-apiserver with CAPI and CAPO CRDs ready in %s\n", time.Since(start).Round(time.Millisecond))
	server = s
	code := m.Run()
	if code != 0 {
		fmt.Fprint(os.Stderr, "capi: test API server output:\n", s.Output())
	}
	stopRealCAPI() // the server with the real controllers (realcapi_test.go), if a test started it
	s.Stop()
	os.Exit(code)
}

func startServer(ctx context.Context) (*apitest.Server, error) {
	return apitest.StartWithCRDs(ctx, testing.Verbose())
}

func needServer(t testing.TB) {
	t.Helper()
	if server == nil {
		t.Skip("integration test: needs the test kube-apiserver (not started with -short)")
	}
}

// countingConfig counts every request sent through the returned config.
func countingConfig(n *atomic.Int64) *rest.Config {
	cfg := rest.CopyConfig(server.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type env struct {
	d        *Driver
	dyn      dynamic.Interface
	core     Core // the real one, over the dynamic client
	creds    *fakeCreds
	store    *memStore
	requests atomic.Int64
	project  string
	now      atomic.Pointer[time.Time]
	// timeouts are the status machine's in updateStatus (none unless a
	// test sets them).
	timeouts statusmachine.Timeouts
	// logs is what the driver logged (Info and above; Debug too under
	// -v, when it goes to stderr as well).
	logs *logRecorder
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newEnv(t testing.TB) *env {
	return newEnvWith(t, Options{CreateTimeout: time.Hour}, nil)
}

// newEnvWith is newEnv with the driver's options, and wrap (when not nil)
// around the transport of the driver's own client; the test's client
// (e.dyn, playing Cluster API) is never wrapped.
func newEnvWith(t testing.TB, opts Options, wrap func(http.RoundTripper) http.RoundTripper) *env {
	return newEnvDeps(t, opts, wrap, nil)
}

// newEnvDeps is newEnvWith with a last say on the driver's Deps.
func newEnvDeps(t testing.TB, opts Options, wrap func(http.RoundTripper) http.RoundTripper, deps func(*env, *Deps)) *env {
	needServer(t)
	e := &env{creds: &fakeCreds{},
		store: &memStore{templates: map[string]*objects.ClusterTemplate{}, ngs: map[string][]*objects.NodeGroup{}}, project: randHex(16)}
	now := time.Now()
	e.now.Store(&now)
	dyn, err := dynamic.NewForConfig(countingConfig(&e.requests))
	if err != nil {
		t.Fatal(err)
	}
	e.dyn = dyn
	e.core = NewCore(dyn)
	driverDyn := dyn
	if wrap != nil {
		cfg := countingConfig(&e.requests)
		cfg.Wrap(wrap)
		if driverDyn, err = dynamic.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	e.logs = &logRecorder{}
	var logOut io.Writer = e.logs
	logLevel := slog.LevelInfo
	if testing.Verbose() {
		logOut, logLevel = io.MultiWriter(os.Stderr, e.logs), slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: logLevel}))
	dd := Deps{Dynamic: driverDyn, Core: NewCore(driverDyn), Certs: fakeCerts{}, Credentials: e.creds,
		Now: func() time.Time { return *e.now.Load() }}
	if deps != nil {
		deps(e, &dd)
	}
	e.d = startDriver(t, opts, dd, log)
	return e
}

// startDriver makes a driver and starts it; its informers live until the
// test ends.
func startDriver(t testing.TB, opts Options, deps Deps, log *slog.Logger) *Driver {
	t.Helper()
	d, err := New(opts, deps, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// newCluster stores a template and nodegroups for a new cluster: one
// master nodegroup and the given workers (name → count).
func (e *env) newCluster(name string, labels map[string]string, workers ...*objects.NodeGroup) *objects.Cluster {
	uuid := randHex(4) + "-" + randHex(2) + "-" + randHex(2) + "-" + randHex(2) + "-" + randHex(6)
	tmpl := &objects.ClusterTemplate{UUID: ptr("tmpl-" + randHex(4)), ImageID: ptr("img-1"), FlavorID: ptr("m1.large"),
		MasterFlavorID: ptr("m1.medium"), ExternalNetworkID: ptr("ext-net"), DNSNameserver: ptr("8.8.8.8,1.1.1.1"),
		Labels: map[string]string{"kube_tag": "v1.33.4"}, Coe: "kubernetes"}
	c := &objects.Cluster{UUID: ptr(uuid), Name: ptr(name), ProjectID: ptr(e.project), UserID: ptr("user-1"),
		ClusterTemplateID: tmpl.UUID, Keypair: ptr("kp"), Labels: labels, FloatingIPEnabled: true, MasterLBEnabled: true,
		Status: objects.CreateInProgress}
	ngs := []*objects.NodeGroup{{UUID: "ng-master-" + randHex(3), Name: "default-master", Role: objects.RoleMaster, NodeCount: 1,
		IsDefault: true, ClusterID: uuid, Status: objects.CreateInProgress}}
	for _, w := range workers {
		w.ClusterID, w.Role, w.Status = uuid, objects.RoleWorker, objects.CreateInProgress
		if w.UUID == "" {
			w.UUID = "ng-" + w.Name + "-" + randHex(3)
		}
		ngs = append(ngs, w)
	}
	e.store.mu.Lock()
	e.store.templates[*tmpl.UUID] = tmpl
	e.store.ngs[uuid] = ngs
	e.store.mu.Unlock()
	return c
}

func (e *env) nodeGroups(c *objects.Cluster) []*objects.NodeGroup {
	ngs, _ := e.store.ListClusterNodeGroups(context.Background(), deref(c.UUID))
	return ngs
}

func (e *env) getCluster(t testing.TB, r ref) *clusterv1.Cluster {
	t.Helper()
	u, err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Get(context.Background(), r.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl := &clusterv1.Cluster{}
	if err := fromUnstructured(u.Object, cl); err != nil {
		t.Fatal(err)
	}
	return cl
}

// Core resources, read back from the API server as a client would.
var (
	namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secretsResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// secret reads a Secret from the API server; nil if it does not exist.
func (e *env) secret(t testing.TB, ns, name string) *corev1.Secret {
	t.Helper()
	u, err := e.dyn.Resource(secretsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get secret %s/%s: %v", ns, name, err)
	}
	s := &corev1.Secret{}
	if err := fromUnstructured(u.Object, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// secretNames lists the names of the Secrets matching selector in ns
// ("" for every namespace), sorted.
func (e *env) secretNames(t testing.TB, ns, selector string) []string {
	t.Helper()
	l, err := e.dyn.Resource(secretsResource).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list secrets in %q: %v", ns, err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	sort.Strings(out)
	return out
}

// namespace reads a Namespace; nil if it does not exist.
func (e *env) namespace(t testing.TB, name string) *corev1.Namespace {
	t.Helper()
	u, err := e.dyn.Resource(namespacesResource).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get namespace %s: %v", name, err)
	}
	ns := &corev1.Namespace{}
	if err := fromUnstructured(u.Object, ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// appliedBy reports whether manager wrote obj with server-side apply.
func appliedBy(obj metav1.Object, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds, and fails t with the state cond
// last reported if it does not within 30 s.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	if testkit.Poll(30*time.Second, func() bool {
		ok, state := cond()
		last = state
		return ok
	}) != nil {
		t.Fatalf("%s: not reached within 30 s; last state: %s", what, last)
	}
}

// syncUntil runs the status sync until the cluster reaches want.
func (e *env) syncUntil(t testing.TB, c *objects.Cluster, want string, reasonContains string) {
	t.Helper()
	eventually(t, "cluster "+want, func() (bool, string) {
		if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		return c.Status == want && strings.Contains(deref(c.StatusReason), reasonContains),
			c.Status + ": " + deref(c.StatusReason)
	})
}

func variableValue(t testing.TB, vars []clusterv1.ClusterVariable, name string) any {
	t.Helper()
	for _, v := range vars {
		if v.Name == name {
			var out any
			if err := json.Unmarshal(v.Value.Raw, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	return nil
}

func TestCreateClusterWritesTopologyClassAndSecrets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.newCluster("Prod Cluster", map[string]string{"kube_tag": "v1.33.4", "boot_volume_size": "40", "availability_zone": "az1"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 2, IsDefault: true},
		&objects.NodeGroup{Name: "gpu", NodeCount: 1, FlavorID: ptr("g1.xlarge"), Labels: map[string]string{"availability_zone": "az2"}})
	e.store.ngs[*c.UUID][0].NodeCount = 3
	if err := e.create(ctx, c, 30); err != nil {
		t.Fatal(err)
	}
	r, ok := refOf(c)
	if !ok || r.Namespace != "magnum-"+e.project || !strings.HasPrefix(r.Name, "prod-cluster-") || !isDNSLabel(r.Name) {
		t.Fatalf("stack_id = %q", deref(c.StackID))
	}
	cl := e.getCluster(t, r)
	topo := cl.Spec.Topology
	if topo.ClassRef.Name != "magnum-"+LatestClassVersion || topo.Version != "v1.33.4" || deref(topo.ControlPlane.Replicas) != 3 {
		t.Errorf("topology class=%s version=%s cp=%d", topo.ClassRef.Name, topo.Version, deref(topo.ControlPlane.Replicas))
	}
	mds := topo.Workers.MachineDeployments
	if len(mds) != 2 || mds[0].Name != "default-worker" || deref(mds[0].Replicas) != 2 || mds[0].FailureDomain != "az1" ||
		mds[1].Name != "gpu" || deref(mds[1].Replicas) != 1 || mds[1].FailureDomain != "az2" || mds[0].Class != workerClass {
		t.Errorf("machine deployments = %+v", mds)
	}
	if len(mds) == 2 && (len(mds[1].Variables.Overrides) != 1 || string(mds[1].Variables.Overrides[0].Value.Raw) != `"g1.xlarge"`) {
		t.Errorf("gpu overrides = %+v", mds[1].Variables.Overrides)
	}
	for name, want := range map[string]string{
		"imageID": `"img-1"`, "controlPlaneFlavor": `"m1.medium"`, "flavor": `"m1.large"`, "sshKeyName": `"kp"`,
		"externalNetworkId": `"ext-net"`, "identityRefName": `"` + r.Name + `-cloud-credentials"`,
	} {
		if got, _ := json.Marshal(variableValue(t, topo.Variables, name)); string(got) != want {
			t.Errorf("variable %s = %s, want %s", name, got, want)
		}
	}
	if got, _ := json.Marshal(variableValue(t, topo.Variables, "bootVolume")); string(got) != `{"size":40,"type":""}` {
		t.Errorf("bootVolume = %s", got)
	}
	if got, _ := json.Marshal(variableValue(t, topo.Variables, "apiServerLoadBalancer")); !strings.Contains(string(got), `"enabled":true`) {
		t.Errorf("apiServerLoadBalancer = %s", got)
	}
	if got, _ := json.Marshal(variableValue(t, topo.Variables, "dnsNameservers")); string(got) != `["8.8.8.8","1.1.1.1"]` {
		t.Errorf("dnsNameservers = %s", got)
	}
	if cl.Labels[LabelClusterUUID] != *c.UUID || cl.Labels[LabelProjectID] != e.project ||
		topo.ControlPlane.Metadata.Labels[LabelClusterUUID] != *c.UUID || mds[0].Metadata.Labels[LabelNodeGroupUUID] == "" {
		t.Errorf("labels: cluster %v, control plane %v", cl.Labels, topo.ControlPlane.Metadata.Labels)
	}
	if cl.Annotations[annotationTemplateID] != *c.ClusterTemplateID || cl.Annotations[annotationCreateDeadline] == "" {
		t.Errorf("annotations = %v", cl.Annotations)
	}
	// The labels Cluster API copies to the Nodes, as the API server keeps them.
	if topo.ControlPlane.Metadata.Labels[LabelNodeNodeGroup] != "default-master" {
		t.Errorf("control plane node labels: %v", topo.ControlPlane.Metadata.Labels)
	}
	for _, md := range mds {
		if v, ok := md.Metadata.Labels["node-role.kubernetes.io/worker"]; !ok || v != "" || md.Metadata.Labels[LabelNodeNodeGroup] != md.Name {
			t.Errorf("machine deployment %s node labels: %v", md.Name, md.Metadata.Labels)
		}
	}
	applied := false
	for _, mf := range cl.ManagedFields {
		applied = applied || (mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !applied {
		t.Errorf("Cluster not server-side applied by %s: %+v", FieldManager, cl.ManagedFields)
	}
	// The ClusterClass bundle lives in the project namespace.
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{
		{gvrClusterClass, "magnum-" + LatestClassVersion},
		{gvrOSClusterTemplate, "magnum-" + LatestClassVersion},
		{gvrOSMachineTemplate, "magnum-" + LatestClassVersion + "-worker"},
		{schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanetemplates"}, "magnum-" + LatestClassVersion + "-control-plane"},
		{schema.GroupVersionResource{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmconfigtemplates"}, "magnum-" + LatestClassVersion + "-worker"},
	} {
		if _, err := e.dyn.Resource(o.gvr).Namespace(r.Namespace).Get(ctx, o.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s: %v", o.gvr.Resource, o.name, err)
		}
	}
	// The project namespace, created by the driver with its labels.
	ns := e.namespace(t, r.Namespace)
	if ns == nil {
		t.Fatalf("namespace %s not created", r.Namespace)
	}
	if ns.Labels[LabelProjectID] != e.project || !appliedBy(ns, FieldManager) {
		t.Errorf("namespace %s: labels %v, managed fields %+v", ns.Name, ns.Labels, ns.ManagedFields)
	}
	for k := range ns.Labels {
		if strings.HasPrefix(k, "magnum.openstack.org/") && k != LabelProjectID {
			t.Errorf("namespace %s carries %s: it is shared by the project's clusters", ns.Name, k)
		}
	}
	// CA Secrets as CAPI expects them, and the CAPO identity, as the API
	// server stores them.
	for _, kind := range []CAKind{CAKubernetes, CAEtcd, CAFrontProxy} {
		s := e.secret(t, r.Namespace, r.Name+"-"+string(kind))
		if s == nil {
			t.Errorf("secret %s-%s missing", r.Name, kind)
			continue
		}
		if s.Type != clusterv1.ClusterSecretType || string(s.Data["tls.crt"]) != "CERT "+string(kind)+" "+*c.UUID ||
			string(s.Data["tls.key"]) != "KEY "+string(kind) || len(s.Data) != 2 || s.Labels[clusterv1.ClusterNameLabel] != r.Name ||
			s.Labels[LabelClusterUUID] != *c.UUID || s.Labels[LabelProjectID] != e.project || s.Labels[LabelSecretKind] != "ca-"+string(kind) {
			t.Errorf("secret %s: type %s labels %v data keys %v", s.Name, s.Type, s.Labels, keys(s.Data))
		}
		if !appliedBy(s, FieldManager) {
			t.Errorf("secret %s not server-side applied by %s: %+v", s.Name, FieldManager, s.ManagedFields)
		}
	}
	cred := e.secret(t, r.Namespace, r.Name+"-cloud-credentials")
	if cred == nil {
		t.Fatal("cloud credentials secret missing")
	}
	if cred.Type != corev1.SecretTypeOpaque || !strings.Contains(string(cred.Data["clouds.yaml"]), `application_credential_id: "appcred-1"`) ||
		!strings.Contains(string(cred.Data["clouds.yaml"]), `application_credential_secret: "s3cret"`) || len(cred.Data) != 1 ||
		cred.Annotations[annotationCredentialID] != "appcred-1" || cred.Labels[LabelSecretKind] != "cloud-credentials" ||
		cred.Labels[LabelClusterUUID] != *c.UUID || cred.Labels[clusterv1.ClusterNameLabel] != r.Name {
		t.Errorf("cloud credentials secret: type %s labels %v annotations %v data keys %v", cred.Type, cred.Labels, cred.Annotations, keys(cred.Data))
	}
	// Exactly these four carry the cluster's label, and none leaked elsewhere.
	want := []string{r.Name + "-ca", r.Name + "-cloud-credentials", r.Name + "-etcd", r.Name + "-proxy"}
	if got := e.secretNames(t, "", LabelClusterUUID+"="+*c.UUID); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("labelled secrets = %v, want %v", got, want)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCreateClusterRejectsInvalidLabelBeforeWriting(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster("bad", map[string]string{"kube_tag": "latest"}, &objects.NodeGroup{Name: "w", NodeCount: 1})
	err := e.create(context.Background(), c, 0)
	if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) || !strings.Contains(err.Error(), "kube_tag") {
		t.Fatalf("err = %v, want InvalidParameterValue naming kube_tag", err)
	}
	if c.StackID != nil {
		t.Errorf("stack_id set before validating: %v", *c.StackID)
	}
	// Nothing reached the API server: no project namespace, no Secrets.
	if ns := e.namespace(t, "magnum-"+e.project); ns != nil {
		t.Errorf("wrote before validating: namespace %s exists", ns.Name)
	}
	if got := e.secretNames(t, "", LabelClusterUUID+"="+*c.UUID); len(got) != 0 {
		t.Errorf("wrote before validating: secrets %v", got)
	}
	c2 := e.newCluster("even", nil, &objects.NodeGroup{Name: "w", NodeCount: 1})
	e.store.ngs[*c2.UUID][0].NodeCount = 2
	if err := e.create(context.Background(), c2, 0); !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) {
		t.Errorf("even master count: err = %v", err)
	}
	if ns := e.namespace(t, "magnum-"+e.project); ns != nil || len(e.secretNames(t, "", LabelClusterUUID+"="+*c2.UUID)) != 0 {
		t.Errorf("even master count: wrote before validating")
	}
}

// capi plays the Cluster API controllers: it writes objects and /status.
type capi struct {
	t testing.TB
	e *env
	r ref
	c *objects.Cluster
}

func (p *capi) create(gvr schema.GroupVersionResource, obj any) *unstructured.Unstructured {
	p.t.Helper()
	u, err := toUnstructured(obj)
	if err != nil {
		p.t.Fatal(err)
	}
	got, err := p.e.dyn.Resource(gvr).Namespace(p.r.Namespace).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return got
}

// status replaces the status of an object (retrying on conflicts).
func (p *capi) status(gvr schema.GroupVersionResource, name string, mutate func(u *unstructured.Unstructured) any) {
	p.t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		u, err := p.e.dyn.Resource(gvr).Namespace(p.r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			p.t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
		}
		st, err := toUnstructuredMap(mutate(u))
		if err != nil {
			p.t.Fatal(err)
		}
		u.Object["status"] = st
		_, err = p.e.dyn.Resource(gvr).Namespace(p.r.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 5 {
			p.t.Fatalf("update status of %s %s: %v", gvr.Resource, name, err)
		}
	}
}

func toUnstructuredMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(b, &m)
}

func (p *capi) ownedMeta(name string, extra map[string]string) metav1.ObjectMeta {
	l := map[string]string{clusterv1.ClusterNameLabel: p.r.Name, LabelClusterUUID: *p.c.UUID}
	for k, v := range extra {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: p.r.Namespace, Labels: l}
}

func infraRef(kind, name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: kind, Name: name}
}

func (p *capi) machineDeployment(ng string, replicas int32) {
	md := &clusterv1.MachineDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineDeployment"},
		ObjectMeta: p.ownedMeta(p.r.Name+"-"+ng, map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: ng}),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: p.r.Name, Replicas: &replicas,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: ng}},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{ClusterName: p.r.Name,
				Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr("bootstrap")}, InfrastructureRef: infraRef("OpenStackMachineTemplate", "w")}},
		},
	}
	p.create(gvrMD, md)
}

func (p *capi) mdStatus(ng string, replicas, upToDate, available int32, conds ...metav1.Condition) {
	p.status(gvrMD, p.r.Name+"-"+ng, func(u *unstructured.Unstructured) any {
		return clusterv1.MachineDeploymentStatus{ObservedGeneration: u.GetGeneration(), Replicas: &replicas,
			UpToDateReplicas: &upToDate, AvailableReplicas: &available, ReadyReplicas: &available, Conditions: conds}
	})
}

func (p *capi) machine(name, ng, serverID, ip string, controlPlane bool) {
	extra := map[string]string{}
	if controlPlane {
		extra[clusterv1.MachineControlPlaneLabel] = ""
	} else {
		extra[clusterv1.ClusterTopologyMachineDeploymentNameLabel] = ng
	}
	m := &clusterv1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: p.ownedMeta(name, extra),
		Spec: clusterv1.MachineSpec{ClusterName: p.r.Name, Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr("bootstrap")},
			InfrastructureRef: infraRef("OpenStackMachine", name), ProviderID: "openstack:///" + serverID},
	}
	p.create(gvrMachine, m)
	p.status(gvrMachine, name, func(*unstructured.Unstructured) any {
		return clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: ip}},
			NodeRef: clusterv1.MachineNodeReference{Name: name + "-node"}}
	})
}

func (p *capi) controlPlane(replicas int32, version string) {
	kcp := map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
		"metadata": p.ownedMeta(p.r.Name+"-cp", nil),
		"spec": map[string]any{"replicas": replicas, "version": version,
			"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef("OpenStackMachineTemplate", "cp")}}},
	}
	p.create(gvrKCP, kcp)
	p.status(gvrKCP, p.r.Name+"-cp", func(u *unstructured.Unstructured) any {
		return map[string]any{"observedGeneration": u.GetGeneration(), "replicas": replicas, "readyReplicas": replicas,
			"availableReplicas": replicas, "upToDateReplicas": replicas, "version": version,
			"conditions": []metav1.Condition{condition("Available", T, "Available", ""), condition("RollingOut", F, "NotRollingOut", ""),
				condition("ScalingUp", F, "NotScalingUp", ""), condition("ScalingDown", F, "NotScalingDown", "")}}
	})
}

// kubeconfigSecret writes <cluster>-kubeconfig as CAPI's kubeconfig
// controller does: type cluster.x-k8s.io/secret, the cluster-name label, an
// owner reference to the Cluster, the kubeconfig under "value".
func (p *capi) kubeconfigSecret(server string) {
	p.t.Helper()
	cl := p.e.getCluster(p.t, p.r)
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: " + p.r.Name + "\n  cluster:\n    server: " + server +
		"\ncontexts:\n- name: admin\n  context: {cluster: " + p.r.Name + ", user: admin}\ncurrent-context: admin\n" +
		"users:\n- name: admin\n  user: {token: workload-admin-token}\n"
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: p.r.Name + "-kubeconfig", Namespace: p.r.Namespace,
			Labels: map[string]string{clusterv1.ClusterNameLabel: p.r.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
				Name: cl.Name, UID: cl.UID, Controller: ptr(true)}}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": []byte(kc)},
	}
	u, err := toUnstructured(s)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.e.dyn.Resource(secretsResource).Namespace(p.r.Namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		p.t.Fatalf("create kubeconfig secret: %v", err)
	}
}

func (p *capi) clusterStatus(mutate func(st *clusterv1.ClusterStatus)) {
	p.status(gvrCluster, p.r.Name, func(u *unstructured.Unstructured) any {
		st := clusterv1.ClusterStatus{ObservedGeneration: u.GetGeneration()}
		mutate(&st)
		return st
	})
}

// createNodeGroup stores ng as nodegroup_create does, then has the driver
// create it.
func (e *env) createNodeGroup(t *testing.T, c *objects.Cluster, ng *objects.NodeGroup) {
	t.Helper()
	e.store.mu.Lock()
	e.store.ngs[*c.UUID] = append(e.store.ngs[*c.UUID], ng)
	e.store.mu.Unlock()
	if err := e.createNG(context.Background(), c, ng); err != nil {
		t.Fatal(err)
	}
}

// heldDeletion deletes c while a finalizer held by "CAPI" keeps its Cluster
// around, reporting Deleting with message.
func (p *capi) heldDeletion(c *objects.Cluster, message string) {
	p.t.Helper()
	ctx := context.Background()
	if _, err := p.e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Patch(ctx, p.r.Name, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":["cluster.cluster.x-k8s.io"]}}`), metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		p.t.Fatal(err)
	}
	c.Status = objects.DeleteInProgress
	if err := p.e.deleteCluster(ctx, c); err != nil {
		p.t.Fatal(err)
	}
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = []metav1.Condition{condition("Deleting", T, "WaitingForWorkersDeletion", message)}
	})
}

// createdCluster creates a cluster with one master and the given workers and
// plays CAPI until it is CREATE_COMPLETE.
func createdCluster(t *testing.T, e *env, workers map[string]int32) (*objects.Cluster, *capi) {
	t.Helper()
	var ngs []*objects.NodeGroup
	for _, name := range []string{"default-worker", "extra"} {
		if n, ok := workers[name]; ok {
			ngs = append(ngs, &objects.NodeGroup{Name: name, NodeCount: int64(n)})
		}
	}
	c := e.newCluster("lifecycle", map[string]string{"kube_tag": "v1.33.4"}, ngs...)
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	p := &capi{t: t, e: e, r: r, c: c}
	p.controlPlane(1, "v1.33.4")
	p.machine(r.Name+"-cp-0", "", "srv-cp-0", "10.0.0.10", true)
	for _, ng := range ngs {
		n := int32(ng.NodeCount)
		p.machineDeployment(ng.Name, n)
		p.mdStatus(ng.Name, n, n, n, settledMDConds()...)
		for i := int32(0); i < n; i++ {
			p.machine(fmt.Sprintf("%s-%s-%d", r.Name, ng.Name, i), ng.Name, fmt.Sprintf("srv-%s-%d", ng.Name, i), fmt.Sprintf("10.0.1.%d", 10+i), false)
		}
	}
	// CAPI sets the endpoint in spec (a generation bump), writes the
	// workload cluster's kubeconfig Secret, then reports.
	patch := `{"spec":{"controlPlaneEndpoint":{"host":"203.0.113.7","port":6443}}}`
	if _, err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Patch(context.Background(), r.Name, "application/merge-patch+json",
		[]byte(patch), metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		t.Fatal(err)
	}
	p.kubeconfigSecret("https://203.0.113.7:6443")
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = healthyConds()
		st.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}
	})
	e.syncUntil(t, c, objects.CreateComplete, "")
	// Every Machine is in the cache (each informer has its own watch).
	eventually(t, "machines cached", func() (bool, string) {
		_ = e.updateStatus(context.Background(), c, e.nodeGroups(c))
		for _, ng := range e.nodeGroups(c) {
			if int64(len(ng.NodeAddresses)) != ng.NodeCount {
				return false, fmt.Sprintf("%s has %v", ng.Name, ng.NodeAddresses)
			}
		}
		return true, ""
	})
	return c, p
}

func TestStatusFollowsCAPIThroughCreate(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster("status", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 2})
	// Before the create handed it to the driver (no stack_id), the
	// driver reports it pending, and the status machine does not judge it.
	obs, err := e.d.Observe(context.Background(), drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: c, NodeGroups: e.nodeGroups(c)}})
	if err != nil || obs.Phase != drivers.PhasePending || obs.Reason != "waiting for Cluster" {
		t.Errorf("before create: %v %s %q", err, obs.Phase, obs.Reason)
	}
	if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil || c.Status != objects.CreateInProgress {
		t.Errorf("before create: %v %s", err, c.Status)
	}
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	p := &capi{t: t, e: e, r: r, c: c}
	e.syncUntil(t, c, objects.CreateInProgress, "InfrastructureReady not reported yet")

	// The infrastructure reports a quota problem on a machine.
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = []metav1.Condition{condition("InfrastructureReady", F, "NotReady", "OpenStackCluster is not ready")}
	})
	// As CAPO v0.14 writes it: v1beta1, its conditions Cluster API's
	// v1beta1 ones (with a severity), Ready summing them up.
	osm := map[string]any{"apiVersion": gvrOSM.GroupVersion().String(), "kind": "OpenStackMachine",
		"metadata": p.ownedMeta(r.Name+"-cp-x", nil), "spec": map[string]any{"flavor": "m1.medium", "image": map[string]any{"id": "6f4b2d36-0d3c-4b8e-9a57-3c2d1e0f9a11"}}}
	p.create(gvrOSM, osm)
	p.status(gvrOSM, r.Name+"-cp-x", func(*unstructured.Unstructured) any {
		cond := func(typ string) map[string]any {
			return map[string]any{"type": typ, "status": "False", "severity": "Error", "reason": "InstanceCreateFailed",
				"message": "Quota exceeded for cores: Requested 4, but already used 20 of 20 cores", "lastTransitionTime": "2026-12-02T10:00:00Z"}
		}
		return map[string]any{"ready": false, "conditions": []any{cond("Ready"), cond("InstanceReady")}}
	})
	e.syncUntil(t, c, objects.CreateInProgress, "Quota exceeded for cores")
	if !strings.Contains(deref(c.StatusReason), "InfrastructureReady False (NotReady): OpenStackCluster is not ready") {
		t.Errorf("reason = %q", deref(c.StatusReason))
	}

	// Past the create timeout the cluster fails with that reason.
	later := time.Now().Add(2 * time.Hour)
	e.now.Store(&later)
	e.syncUntil(t, c, objects.CreateFailed, "timed out: InfrastructureReady False")
	now := time.Now()
	e.now.Store(&now)
	if err := e.dyn.Resource(gvrOSM).Namespace(r.Namespace).Delete(context.Background(), r.Name+"-cp-x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// CAPI catches up: objects exist, the cluster is available.
	c.Status = objects.CreateInProgress
	for _, ng := range e.nodeGroups(c) {
		ng.Status = objects.CreateInProgress
	}
	p.controlPlane(1, "v1.33.4")
	p.machine(r.Name+"-cp-0", "", "srv-cp-0", "10.0.0.10", true)
	p.machineDeployment("default-worker", 2)
	p.mdStatus("default-worker", 2, 1, 1, condition("Available", F, "NotAvailable", "1 available replicas, at least 2 required"))
	p.machine(r.Name+"-w-0", "default-worker", "srv-w-0", "10.0.1.10", false)
	p.machine(r.Name+"-w-1", "default-worker", "srv-w-1", "10.0.1.11", false)
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = withCond(healthyConds(), condition("WorkersAvailable", F, "NotAvailable", "MachineDeployment default-worker: 1 available replicas, at least 2 required"))
		st.Conditions = withCond(st.Conditions, condition("Available", F, "NotAvailable", "WorkersAvailable is False"))
	})
	e.syncUntil(t, c, objects.CreateInProgress, "WorkersAvailable False (NotAvailable): MachineDeployment default-worker")
	p.mdStatus("default-worker", 2, 2, 2, settledMDConds()...)
	if _, err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Patch(context.Background(), r.Name, "application/merge-patch+json",
		[]byte(`{"spec":{"controlPlaneEndpoint":{"host":"203.0.113.7","port":6443}}}`), metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		t.Fatal(err)
	}
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = healthyConds()
		st.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}
	})
	e.syncUntil(t, c, objects.CreateComplete, "")
	if c.StatusReason != nil {
		t.Errorf("status_reason not cleared: %q", *c.StatusReason)
	}
	if deref(c.APIAddress) != "https://203.0.113.7:6443" || deref(c.CoeVersion) != "v1.33.4" {
		t.Errorf("api_address %q coe_version %q", deref(c.APIAddress), deref(c.CoeVersion))
	}
	for _, ng := range e.nodeGroups(c) {
		want := []string{"10.0.1.10", "10.0.1.11"}
		if ng.Role == objects.RoleMaster {
			want = []string{"10.0.0.10"}
		}
		if ng.Status != objects.CreateComplete || strings.Join(ng.NodeAddresses, ",") != strings.Join(want, ",") {
			t.Errorf("nodegroup %s: %s %v, want CREATE_COMPLETE %v", ng.Name, ng.Status, ng.NodeAddresses, want)
		}
	}
	// Monitor: the probe is not reported, so the api component says so.
	mon, err := e.d.Monitor(context.Background(), e.request(c))
	if err != nil {
		t.Fatal(err)
	}
	h, err := mon.PollHealth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != objects.Unhealthy || h.Reason["api"] != "RemoteConnectionProbe not reported" || h.Reason["default-worker"] != "ok" || h.Reason["controlplane"] != "ok" {
		t.Errorf("health = %+v", h)
	}
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = append(healthyConds(), condition("RemoteConnectionProbe", T, "ProbeSucceeded", ""))
	})
	eventually(t, "HEALTHY", func() (bool, string) {
		h, _ := mon.PollHealth(context.Background())
		return h.Status == objects.Healthy, fmt.Sprint(h)
	})
	// The status sync stores the same health with the status, from the
	// same cache read: the row says what the poll says, without waiting
	// for the health poll's next cycle.
	if c.HealthStatus != objects.Unhealthy || c.HealthStatusReason["api"] != "RemoteConnectionProbe not reported" {
		t.Errorf("health stored with CREATE_COMPLETE: %s %v, want the observation's UNHEALTHY", c.HealthStatus, c.HealthStatusReason)
	}
	eventually(t, "HEALTHY stored by the status sync", func() (bool, string) {
		if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil {
			return false, err.Error()
		}
		return c.HealthStatus == objects.Healthy && c.Status == objects.CreateComplete, c.Status + " " + c.HealthStatus
	})
}

func TestStatusSyncSurvivesMissingAndHalfDeletedObjects(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1, "extra": 1})
	// The extra nodegroup's MachineDeployment disappears while its row says
	// UPDATE_IN_PROGRESS, and a nodegroup the topology never had is listed.
	if err := e.dyn.Resource(gvrMD).Namespace(p.r.Namespace).Delete(context.Background(), p.r.Name+"-extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "extra MD gone from the cache", func() (bool, string) {
		obs := e.d.cache.Load().observe(p.r.Namespace, p.r.Name)
		_, ok := obs.Deployments["extra"]
		return !ok, fmt.Sprint(len(obs.Deployments))
	})
	c.Status = objects.UpdateInProgress
	ngs := e.nodeGroups(c)
	ngs[2].Status = objects.UpdateInProgress
	ghost := &objects.NodeGroup{Name: "ghost", Role: objects.RoleWorker, Status: objects.DeleteInProgress, UUID: "ghost"}
	ngs = append(ngs, ghost)
	if err := e.updateStatus(context.Background(), c, ngs); err != nil {
		t.Fatal(err)
	}
	if ngs[2].Status != objects.UpdateInProgress || deref(ngs[2].StatusReason) != "waiting for the MachineDeployment" {
		t.Errorf("extra nodegroup = %s %q", ngs[2].Status, deref(ngs[2].StatusReason))
	}
	if ghost.Status != objects.DeleteComplete {
		t.Errorf("ghost nodegroup = %s, want DELETE_COMPLETE", ghost.Status)
	}
	if c.Status != objects.UpdateInProgress || !strings.Contains(deref(c.StatusReason), "waiting for nodegroups: extra") {
		t.Errorf("cluster = %s %q", c.Status, deref(c.StatusReason))
	}
	// A cluster whose stack_id points nowhere: a create the back end does
	// not hold (the conductor resumes it after its bound), waiting.
	lost := &objects.Cluster{UUID: ptr("lost"), StackID: ptr("magnum-nowhere/none"), Status: objects.CreateInProgress}
	obs, err := e.d.Observe(context.Background(), drivers.ObserveRequest{ClusterRequest: drivers.ClusterRequest{Cluster: lost}})
	if err != nil || obs.Phase != drivers.PhasePending || obs.Reason != "waiting for Cluster" || obs.Request == nil || obs.Request.Exists {
		t.Errorf("lost cluster: %v %s %q %+v", err, obs.Phase, obs.Reason, obs.Request)
	}
	if err := e.updateStatus(context.Background(), lost, nil); err != nil || lost.Status != objects.CreateInProgress {
		t.Errorf("lost cluster: %v %s", err, lost.Status)
	}
	// Settled states keep their status and reason.
	failed := &objects.Cluster{UUID: ptr("failed"), StackID: ptr("magnum-nowhere/none"), Status: objects.CreateFailed, StatusReason: ptr("quota")}
	if err := e.updateStatus(context.Background(), failed, nil); err != nil || failed.Status != objects.CreateFailed || deref(failed.StatusReason) != "quota" {
		t.Errorf("failed cluster: %v %s %q", err, failed.Status, deref(failed.StatusReason))
	}
}

func TestResizeWithNodesToRemove(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 3})
	ng := e.nodeGroups(c)[1]
	// Unknown nodes are refused before any write.
	err := e.resize(context.Background(), c, 2, []string{"srv-nope"}, ng)
	if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) {
		t.Fatalf("unknown node: err = %v", err)
	}
	if ng.NodeCount != 3 {
		t.Errorf("node_count changed on refusal: %d", ng.NodeCount)
	}
	// More nodes to remove than the shrink, with the nodegroup as the
	// conductor passes it (node_count already the new size): refused, and
	// no Machine is marked.
	asSent := *ng
	asSent.NodeCount = 2
	err = e.resize(context.Background(), c, 2, []string{"srv-default-worker-1", "srv-default-worker-2"}, &asSent)
	if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) || !strings.Contains(err.Error(), "only shrinks by 1") {
		t.Fatalf("two nodes to remove for a shrink by one: err = %v", err)
	}
	for i := range 3 {
		u, err := e.dyn.Resource(gvrMachine).Namespace(p.r.Namespace).Get(context.Background(), fmt.Sprintf("%s-default-worker-%d", p.r.Name, i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.GetAnnotations()[clusterv1.DeleteMachineAnnotation]; got != "" {
			t.Fatalf("machine %d marked for deletion by a refused resize", i)
		}
	}
	// By server UUID and by node name.
	if err := e.resize(context.Background(), c, 1, []string{"srv-default-worker-1", p.r.Name + "-default-worker-2-node"}, ng); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "yes", "yes"} {
		u, err := e.dyn.Resource(gvrMachine).Namespace(p.r.Namespace).Get(context.Background(), fmt.Sprintf("%s-default-worker-%d", p.r.Name, i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.GetAnnotations()[clusterv1.DeleteMachineAnnotation]; got != want {
			t.Errorf("machine %d delete annotation = %q, want %q", i, got, want)
		}
	}
	cl := e.getCluster(t, p.r)
	if got := deref(cl.Spec.Topology.Workers.MachineDeployments[0].Replicas); got != 1 {
		t.Errorf("replicas = %d, want 1", got)
	}
	if ng.NodeCount != 1 || ng.Status != objects.UpdateInProgress {
		t.Errorf("nodegroup = %d %s", ng.NodeCount, ng.Status)
	}
	// Master resizes keep an odd count.
	if err := e.resize(context.Background(), c, 2, nil, e.nodeGroups(c)[0]); !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) {
		t.Errorf("even master resize: %v", err)
	}
}

// An autoscaled nodegroup's topology carries the autoscaler's range and
// never replicas (the Cluster webhook refuses both together): Cluster API
// creates the MachineDeployment at its minimum, the status sync sizes it
// once to node_count, and the autoscaler owns replicas from then on; a
// re-apply takes nothing back. With auto_scaling_enabled only in the
// template's labels, resize and status sync treat the nodegroup the same
// way: a resize is sized once, and settled, node_count reads the
// autoscaler's count.
func TestAutoscaledNodeGroupIsSizedOnceThenLeftToTheAutoscaler(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster("tmplauto", map[string]string{"kube_tag": "v1.33.4"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 2, MinNodeCount: 1, MaxNodeCount: ptr(int64(5))})
	e.store.mu.Lock()
	e.store.templates[*c.ClusterTemplateID].Labels["auto_scaling_enabled"] = "true"
	e.store.mu.Unlock()
	ctx := context.Background()
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	p := &capi{t: t, e: e, r: r, c: c}
	topo := e.getCluster(t, r).Spec.Topology.Workers.MachineDeployments[0]
	if topo.Replicas != nil || topo.Metadata.Annotations[clusterv1.AutoscalerMinSizeAnnotation] != "1" ||
		topo.Metadata.Annotations[clusterv1.AutoscalerMaxSizeAnnotation] != "5" {
		t.Fatalf("applied topology is not autoscaled, or carries replicas: %+v", topo)
	}
	p.controlPlane(1, "v1.33.4")
	p.machine(r.Name+"-cp-0", "", "srv-cp-0", "10.0.0.10", true)
	// Cluster API creates the MachineDeployment at the minimum size.
	p.machineDeployment("default-worker", 1)
	mdName := r.Name + "-default-worker"
	setAnnotations := func(a map[string]string) {
		u, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Get(ctx, mdName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		for k, v := range a {
			ann[k] = v
		}
		u.SetAnnotations(ann)
		if _, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setAnnotations(topo.Metadata.Annotations)
	p.mdStatus("default-worker", 1, 1, 1, settledMDConds()...)
	mdReplicas := func() int64 {
		u, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Get(ctx, mdName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return n
	}
	// Its settled minimum size is not the nodegroup's: the sync sizes it.
	e.syncUntil(t, c, objects.CreateInProgress, "")
	eventually(t, "the MachineDeployment sized to node_count 2", func() (bool, string) {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		return mdReplicas() == 2, fmt.Sprintf("replicas %d, nodegroup %s (%s)", mdReplicas(), e.nodeGroups(c)[1].Status, deref(e.nodeGroups(c)[1].StatusReason))
	})
	if ng := e.nodeGroups(c)[1]; ng.Status != objects.CreateInProgress {
		t.Fatalf("nodegroup %s before its 2 machines are available", ng.Status)
	}
	p.mdStatus("default-worker", 2, 2, 2, settledMDConds()...)
	p.clusterStatus(func(st *clusterv1.ClusterStatus) { st.Conditions = healthyConds() })
	e.syncUntil(t, c, objects.CreateComplete, "")

	// The autoscaler moves it to 4; settled, node_count follows, and a
	// re-apply takes nothing back.
	if _, err := e.dyn.Resource(gvrMD).Namespace(r.Namespace).Patch(ctx, mdName, "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{FieldManager: "cluster-autoscaler"}); err != nil {
		t.Fatal(err)
	}
	p.mdStatus("default-worker", 4, 4, 4, settledMDConds()...)
	c.Status = objects.UpdateInProgress // an unrelated update in progress: the sync reads settled nodegroups
	eventually(t, "node_count read from the autoscaled MachineDeployment", func() (bool, string) {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		n := e.nodeGroups(c)[1].NodeCount
		return n == 4, fmt.Sprintf("node_count %d", n)
	})
	if err := e.updateNG(ctx, c, e.nodeGroups(c)[1]); err != nil {
		t.Fatal(err)
	}
	if got := mdReplicas(); got != 4 {
		t.Errorf("replicas after re-apply = %d, want the autoscaler's 4", got)
	}
	if topo := e.getCluster(t, r).Spec.Topology.Workers.MachineDeployments[0]; topo.Replicas != nil {
		t.Errorf("re-apply wrote topology replicas %d beside the autoscaler's annotations", *topo.Replicas)
	}

	// A resize to 3 is sized once (the topology still has no replicas).
	ng := e.nodeGroups(c)[1]
	if err := e.resize(ctx, c, 3, nil, ng); err != nil {
		t.Fatal(err)
	}
	if topo := e.getCluster(t, r).Spec.Topology.Workers.MachineDeployments[0]; topo.Replicas != nil {
		t.Fatalf("resize wrote topology replicas %d beside the autoscaler's annotations", *topo.Replicas)
	}
	eventually(t, "the MachineDeployment sized to the resize's 3", func() (bool, string) {
		if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		return mdReplicas() == 3, fmt.Sprintf("replicas %d", mdReplicas())
	})
}

func TestUpgradeRefusedThenAccepted(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 2})
	oldTemplate := deref(c.ClusterTemplateID)
	skip := &objects.ClusterTemplate{UUID: ptr("tmpl-skip"), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"),
		Labels: map[string]string{"kube_tag": "v1.35.0"}}
	before := e.getCluster(t, p.r)
	err := e.upgrade(context.Background(), c, skip, 1, nil)
	if !errors.Is(err, exception.ClassNotSupported.New(nil)) || !strings.Contains(err.Error(), "skips a minor version") {
		t.Fatalf("minor skip: err = %v", err)
	}
	down := &objects.ClusterTemplate{UUID: ptr("tmpl-down"), ImageID: ptr("img-0"), Labels: map[string]string{"kube_tag": "v1.32.0"}}
	if err := e.upgrade(context.Background(), c, down, 1, nil); !errors.Is(err, exception.ClassNotSupported.New(nil)) {
		t.Fatalf("downgrade: err = %v", err)
	}
	if after := e.getCluster(t, p.r); after.ResourceVersion != before.ResourceVersion || deref(c.ClusterTemplateID) != oldTemplate || c.Status != objects.CreateComplete {
		t.Fatalf("refused upgrade wrote: rv %s→%s template %s status %s", before.ResourceVersion, after.ResourceVersion, deref(c.ClusterTemplateID), c.Status)
	}

	// Accepted from UPDATE_FAILED (mcapi#373).
	c.Status = objects.UpdateFailed
	next := &objects.ClusterTemplate{UUID: ptr("tmpl-next"), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"),
		Labels: map[string]string{"kube_tag": "v1.34.1", "boot_volume_type": "fast"}}
	worker := e.nodeGroups(c)[1]
	worker.Labels = map[string]string{"kube_tag": "v1.33.4", "other": "kept"}
	if err := e.upgrade(context.Background(), c, next, 2, nil); err != nil {
		t.Fatal(err)
	}
	// Only kube_tag comes from the new template into the records' labels.
	if _, ok := c.Labels["boot_volume_type"]; ok {
		t.Errorf("the new template's other labels were copied into the cluster's: %v", c.Labels)
	}
	if worker.Labels["kube_tag"] != "v1.34.1" || worker.Labels["other"] != "kept" {
		t.Errorf("worker nodegroup labels after the upgrade: %v", worker.Labels)
	}
	cl := e.getCluster(t, p.r)
	if cl.Spec.Topology.Version != "v1.34.1" || variableValue(t, cl.Spec.Topology.Variables, "imageID") != "img-2" ||
		cl.Annotations[annotationPreviousTemplateID] != oldTemplate || cl.Annotations[annotationTemplateID] != "tmpl-next" {
		t.Errorf("upgraded cluster: version %s annotations %v", cl.Spec.Topology.Version, cl.Annotations)
	}
	if ms := cl.Spec.Topology.Workers.MachineDeployments[0].Rollout.Strategy.RollingUpdate.MaxSurge; ms == nil || ms.IntValue() != 2 {
		t.Errorf("max_batch_size not honoured: maxSurge %v", ms)
	}
	if deref(c.ClusterTemplateID) != "tmpl-next" || c.Labels["kube_tag"] != "v1.34.1" {
		t.Errorf("cluster record: template %s labels %v", deref(c.ClusterTemplateID), c.Labels)
	}
	// Every nodegroup moved to the new version (recorded as the conductor
	// records an upgrade: the driver saves nothing, nor changes its request).
	for _, ng := range e.nodeGroups(c) {
		if deref(ng.Version) != "v1.34.1" || ng.Status != objects.UpdateInProgress {
			t.Errorf("nodegroup %s after the upgrade: %s %s", ng.Name, deref(ng.Version), ng.Status)
		}
	}
	// CAPI rejects the change: UPDATE_FAILED and the template id rolls back.
	c.Status = objects.UpdateInProgress
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = withCond(healthyConds(), condition("TopologyReconciled", F, "ReconcileFailed", "admission webhook denied the request"))
	})
	e.syncUntil(t, c, objects.UpdateFailed, "admission webhook denied")
	if deref(c.ClusterTemplateID) != oldTemplate {
		t.Errorf("template id = %s, want it rolled back to %s", deref(c.ClusterTemplateID), oldTemplate)
	}
	if c.Labels["kube_tag"] != "v1.33.4" || !strings.Contains(deref(c.StatusReason), "kube_tag to v1.33.4") {
		t.Errorf("kube_tag = %s (reason %q), want it rolled back with the template to v1.33.4", c.Labels["kube_tag"], deref(c.StatusReason))
	}
}

// TestUpgradeRecordsThePreviousKubeTagOnlyWhenThereIsOne: the Cluster
// keeps the kube_tag a rejected upgrade rolls back to; an upgrade of a
// cluster whose labels carry none removes the record of an earlier one
// (an annotation with an empty value is not written).
func TestUpgradeRecordsThePreviousKubeTagOnlyWhenThereIsOne(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	tmpl := func(tag string) *objects.ClusterTemplate {
		return &objects.ClusterTemplate{UUID: ptr("tmpl-" + tag), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"),
			MasterFlavorID: ptr("m1.medium"), Labels: map[string]string{"kube_tag": tag}}
	}
	if err := e.upgrade(context.Background(), c, tmpl("v1.34.1"), 1, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := e.getCluster(t, p.r).Annotations[annotationPreviousKubeTag]; !ok || got != "v1.33.4" {
		t.Fatalf("previous kube_tag = %q (present %v), want v1.33.4", got, ok)
	}
	delete(c.Labels, "kube_tag")
	if err := e.upgrade(context.Background(), c, tmpl("v1.35.0"), 1, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := e.getCluster(t, p.r).Annotations[annotationPreviousKubeTag]; ok {
		t.Fatalf("previous kube_tag %q kept from the earlier upgrade", got)
	}
}

func TestNodeGroupCreateAndDelete(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ng := &objects.NodeGroup{UUID: "ng-new", Name: "new-pool", NodeCount: 2, Role: objects.RoleWorker, ClusterID: *c.UUID, Status: objects.CreateInProgress}
	if err := e.createNG(context.Background(), c, ng); err != nil {
		t.Fatal(err)
	}
	mds := e.getCluster(t, p.r).Spec.Topology.Workers.MachineDeployments
	if len(mds) != 2 || mds[1].Name != "new-pool" || deref(mds[1].Replicas) != 2 {
		t.Fatalf("after create: %+v", mds)
	}
	e.store.mu.Lock()
	e.store.ngs[*c.UUID] = append(e.store.ngs[*c.UUID], ng)
	e.store.mu.Unlock()
	if err := e.deleteNG(context.Background(), c, ng); err != nil {
		t.Fatal(err)
	}
	if mds := e.getCluster(t, p.r).Spec.Topology.Workers.MachineDeployments; len(mds) != 1 || mds[0].Name != "default-worker" {
		t.Fatalf("after delete: %+v", mds)
	}
	if ng.Status != objects.DeleteInProgress {
		t.Errorf("status = %s", ng.Status)
	}
	if err := e.deleteNG(context.Background(), c, e.nodeGroups(c)[0]); !errors.Is(err, exception.ClassNotSupported.New(nil)) {
		t.Errorf("deleting the master nodegroup: %v", err)
	}
}

func TestDeleteWaitsForTheClusterThenRemovesSecrets(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ctx := context.Background()
	p.heldDeletion(c, "MachineDeployments default-worker are being deleted")
	e.syncUntil(t, c, objects.DeleteInProgress, "Deleting True (WaitingForWorkersDeletion): MachineDeployments default-worker")
	if cl := e.getCluster(t, p.r); cl.DeletionTimestamp == nil {
		t.Fatal("Cluster not marked for deletion")
	}
	labelled := LabelClusterUUID + "=" + *c.UUID
	if n := e.secretNames(t, p.r.Namespace, labelled); len(n) != 4 {
		t.Fatalf("secrets removed while the Cluster still exists: %v left", n)
	}
	if len(e.creds.revoked) != 0 {
		t.Fatalf("credential revoked while the Cluster still exists: %v", e.creds.revoked)
	}
	// CAPI finishes: finalizers go (the test server runs no garbage collector).
	if _, err := e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Patch(ctx, p.r.Name, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.syncUntil(t, c, objects.DeleteComplete, "")
	if _, err := e.dyn.Resource(gvrCluster).Namespace(p.r.Namespace).Get(ctx, p.r.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Cluster still there at DELETE_COMPLETE: %v", err)
	}
	if n := e.secretNames(t, "", labelled); len(n) != 0 {
		t.Errorf("labelled secrets left after DELETE_COMPLETE: %v", n)
	}
	// What the driver did not write stays: CAPI's kubeconfig Secret (its
	// garbage collector removes it through the owner reference, and none
	// runs here) and the project namespace, shared by the project's clusters.
	if e.secret(t, p.r.Namespace, p.r.Name+"-kubeconfig") == nil {
		t.Error("the driver deleted CAPI's kubeconfig Secret")
	}
	if ns := e.namespace(t, p.r.Namespace); ns == nil || ns.DeletionTimestamp != nil {
		t.Errorf("project namespace deleted with the cluster: %+v", ns)
	}
	if len(e.creds.revoked) != 1 || e.creds.revoked[0] != "appcred-1" {
		t.Errorf("revoked = %v", e.creds.revoked)
	}
	// Nothing of the cluster stays in the driver's memory.
	e.d.deleteMu.Lock()
	_, held := e.d.deleteRequested[p.r.String()]
	e.d.deleteMu.Unlock()
	if n, m := e.d.written.size(), e.d.addOnsWritten.size(); n != 0 || m != 0 || held {
		t.Errorf("after DELETE_COMPLETE the driver still holds %d Cluster and %d add-on write records, delete record %v", n, m, held)
	}
	// Deleting again is harmless.
	if err := e.deleteCluster(ctx, c); err != nil {
		t.Error(err)
	}
}

func TestRotateCredential(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ctx := context.Background()
	if err := e.d.RotateCredential(ctx, e.request(c)); err != nil {
		t.Fatal(err)
	}
	ref := variableValue(t, e.getCluster(t, p.r).Spec.Topology.Variables, "identityRefName").(string)
	if !strings.HasPrefix(ref, p.r.Name+"-cloud-credentials-") {
		t.Fatalf("identityRefName = %s", ref)
	}
	s := e.secret(t, p.r.Namespace, ref)
	if s == nil {
		t.Fatalf("new secret %s missing", ref)
	}
	if s.Annotations[annotationCredentialID] != "appcred-2" || s.Type != corev1.SecretTypeOpaque ||
		!strings.Contains(string(s.Data["clouds.yaml"]), `application_credential_id: "appcred-2"`) ||
		s.Labels[LabelSecretKind] != "cloud-credentials" || s.Labels[LabelClusterUUID] != *c.UUID || !appliedBy(s, FieldManager) {
		t.Errorf("new secret: type %s labels %v annotations %v", s.Type, s.Labels, s.Annotations)
	}
	if e.secret(t, p.r.Namespace, p.r.Name+"-cloud-credentials") != nil || len(e.creds.revoked) != 1 || e.creds.revoked[0] != "appcred-1" {
		t.Errorf("old credential not dropped: revoked %v", e.creds.revoked)
	}
	credSecrets := LabelClusterUUID + "=" + *c.UUID + "," + LabelSecretKind + "=cloud-credentials"
	if got := e.secretNames(t, p.r.Namespace, credSecrets); len(got) != 1 || got[0] != ref {
		t.Errorf("cloud-credentials secrets after rotation = %v, want only %s", got, ref)
	}
	// A credential that does not verify changes nothing.
	e.creds.verifyErr = errors.New("401")
	if err := e.d.RotateCredential(ctx, e.request(c)); err == nil {
		t.Fatal("want an error")
	}
	if got := variableValue(t, e.getCluster(t, p.r).Spec.Topology.Variables, "identityRefName").(string); got != ref {
		t.Errorf("identity moved to %s after a failed rotation", got)
	}
	if got := e.secretNames(t, p.r.Namespace, credSecrets); len(got) != 1 || got[0] != ref {
		t.Errorf("cloud-credentials secrets after a failed rotation = %v, want only %s", got, ref)
	}

	// A project member other than the owner rotates: the credential is
	// theirs, the Secret says so, and the next rotation (by the owner)
	// revokes it under that member, not under the owner.
	e.creds.verifyErr = nil
	member := request.With(ctx, &request.Context{UserID: "member-2", ProjectID: e.project, AuthToken: "tok"})
	if err := e.d.RotateCredential(member, e.request(c)); err != nil {
		t.Fatal(err)
	}
	byMember := variableValue(t, e.getCluster(t, p.r).Spec.Topology.Variables, "identityRefName").(string)
	if s := e.secret(t, p.r.Namespace, byMember); s == nil || s.Annotations[annotationCredentialUserID] != "member-2" {
		t.Fatalf("secret of the member's credential: %+v", s)
	}
	owner := request.With(ctx, &request.Context{UserID: "user-1", ProjectID: e.project, AuthToken: "tok"})
	if err := e.d.RotateCredential(owner, e.request(c)); err != nil {
		t.Fatal(err)
	}
	if last := e.creds.revokedRefs[len(e.creds.revokedRefs)-1]; last.ID != "appcred-4" || last.UserID != "member-2" {
		t.Errorf("the member's credential was revoked as %+v, want appcred-4 of member-2", last)
	}
	if _, err := e.d.RotateCACertificate(ctx, e.request(c)); !errors.Is(err, exception.ClassNotSupported.New(nil)) || !strings.Contains(err.Error(), "Cluster API cannot roll out new cluster CAs") {
		t.Errorf("RotateCACertificate: %v", err)
	}
}

// BenchmarkUpdateClusterStatus1000 syncs 1,000 clusters from the informer
// cache and reports API requests per cycle (target: none).
func BenchmarkUpdateClusterStatus1000(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const n = 1000
	ns := "magnum-bench-" + randHex(4)
	if err := e.core.EnsureNamespace(ctx, ns, nil); err != nil {
		b.Fatal(err)
	}
	clusters := make([]*objects.Cluster, n)
	nodegroups := make([][]*objects.NodeGroup, n)
	// Seed directly (not through CreateCluster) to keep the setup short.
	for i := range n {
		uuid := fmt.Sprintf("bench-%04d", i)
		name := fmt.Sprintf("c-%04d", i)
		cl := &clusterv1.Cluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelClusterUUID: uuid}},
			Spec:       clusterv1.ClusterSpec{Topology: clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: "magnum-v1"}, Version: "v1.33.4"}},
		}
		u, _ := toUnstructured(cl)
		if _, err := e.dyn.Resource(gvrCluster).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		clusters[i] = &objects.Cluster{UUID: ptr(uuid), StackID: ptr(ns + "/" + name), Status: objects.CreateInProgress}
		nodegroups[i] = []*objects.NodeGroup{
			{Name: "default-master", Role: objects.RoleMaster, Status: objects.CreateInProgress},
			{Name: "default-worker", Role: objects.RoleWorker, Status: objects.CreateInProgress, NodeCount: 1},
		}
	}
	eventually(b, "1,000 clusters in the cache", func() (bool, string) {
		got := len(e.d.cache.Load().clusters.GetIndexer().List())
		return got >= n, fmt.Sprint(got)
	})
	before := e.requests.Load()
	cycles := 0
	for b.Loop() { // the setup above runs once
		cycles++
		for i := range n {
			if err := e.updateStatus(ctx, clusters[i], nodegroups[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	reqs := e.requests.Load() - before
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(cycles*n), "ns/cluster")
	b.ReportMetric(float64(reqs)/float64(cycles), "requests/cycle")
	if reqs != 0 {
		b.Errorf("%d API requests during %d sync cycles, want none", reqs, cycles)
	}
	if deref(clusters[0].StatusReason) != "InfrastructureReady not reported yet" {
		b.Errorf("reason = %q", deref(clusters[0].StatusReason))
	}
}

// TestStatusWaitsForTheCacheToSeeOurWrite: right after an apply the
// informer cache may still hold the Cluster before our change, whose
// status describes the old spec; the sync must not judge the update by it
// (it would call an upgrade complete before Cluster API has seen it).
func TestStatusWaitsForTheCacheToSeeOurWrite(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	gen := e.getCluster(t, p.r).Generation
	c.Status = objects.UpdateInProgress
	uid := string(e.getCluster(t, p.r).UID)
	e.d.written.note(p.r, uid, gen+1, e.d.now()) // our apply produced a spec the cache has not seen
	for i := 0; i < 3; i++ {
		if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		if c.Status != objects.UpdateInProgress {
			t.Fatalf("judged from a stale cache: %s (%s)", c.Status, deref(c.StatusReason))
		}
	}
	e.d.written.note(p.r, uid, gen, e.d.now()) // the cache holds what we wrote
	e.syncUntil(t, c, objects.UpdateComplete, "")
}

// TestNodeGroupAddedLaterHasItsOwnCreateDeadline: a nodegroup created after
// the cluster's create deadline has passed gets its own (created_at + the
// create timeout); it is not failed at its first status sync.
func TestNodeGroupAddedLaterHasItsOwnCreateDeadline(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	later := time.Now().Add(3 * time.Hour)
	e.now.Store(&later)
	c.Status = objects.UpdateInProgress
	ng := &objects.NodeGroup{UUID: "ng-late", Name: "late", NodeCount: 1, Role: objects.RoleWorker, ClusterID: *c.UUID,
		Status: objects.CreateInProgress, CreatedAt: &later}
	e.createNodeGroup(t, c, ng)
	eventually(t, "the new MachineDeployment cached", func() (bool, string) {
		mds := e.getCluster(t, p.r).Spec.Topology.Workers.MachineDeployments
		return len(mds) == 2, fmt.Sprintf("%d machine deployments", len(mds))
	})
	// A sync judges the nodegroup once the cache has seen the apply (until
	// then it leaves everything as it is).
	eventually(t, "the new nodegroup judged", func() (bool, string) {
		if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		return deref(ng.StatusReason) != "", ng.Status
	})
	if ng.Status != objects.CreateInProgress {
		t.Fatalf("a nodegroup created 3 h after its cluster is %s right away: %s", ng.Status, deref(ng.StatusReason))
	}
	// Past its own deadline it fails, as any create does.
	much := later.Add(2 * time.Hour)
	e.now.Store(&much)
	eventually(t, "the nodegroup failed past its own deadline", func() (bool, string) {
		if err := e.updateStatus(context.Background(), c, e.nodeGroups(c)); err != nil {
			t.Fatal(err)
		}
		return ng.Status == objects.CreateFailed, ng.Status + ": " + deref(ng.StatusReason)
	})
}

// TestFailedNodeGroupsAndUpdates: a nodegroup that failed before an update
// does not hold the cluster in UPDATE_IN_PROGRESS; one that fails during
// it (here: past its create deadline) fails the update, naming it.
func TestFailedNodeGroupsAndUpdates(t *testing.T) {
	e := newEnv(t)
	c, _ := createdCluster(t, e, map[string]int32{"default-worker": 1})
	old := &objects.NodeGroup{UUID: "ng-old", Name: "old", NodeCount: 1, Role: objects.RoleWorker, ClusterID: *c.UUID,
		Status: objects.CreateFailed, StatusReason: ptr("quota exceeded")}
	e.store.mu.Lock()
	e.store.ngs[*c.UUID] = append(e.store.ngs[*c.UUID], old)
	e.store.mu.Unlock()
	c.Status = objects.UpdateInProgress
	e.syncUntil(t, c, objects.UpdateComplete, "")
	if old.Status != objects.CreateFailed {
		t.Fatalf("the old failed nodegroup became %s", old.Status)
	}

	now := time.Now()
	late := &objects.NodeGroup{UUID: "ng-late", Name: "late", NodeCount: 1, Role: objects.RoleWorker, ClusterID: *c.UUID,
		Status: objects.CreateInProgress, CreatedAt: &now}
	e.createNodeGroup(t, c, late)
	c.Status = objects.UpdateInProgress
	past := now.Add(2 * time.Hour)
	e.now.Store(&past)
	e.syncUntil(t, c, objects.UpdateFailed, "nodegroup late failed: timed out")
}

// TestDeleteRetriedAfterDeleteFailedGetsANewTimeout: delete_timeout runs
// from the start of each delete attempt, so a delete retried after
// DELETE_FAILED is not failed again at its first sync; the start is on the
// Cluster for other conductors.
func TestDeleteRetriedAfterDeleteFailedGetsANewTimeout(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	ctx := context.Background()
	p.heldDeletion(c, "x")
	e.syncUntil(t, c, objects.DeleteInProgress, "WaitingForWorkersDeletion")
	later := time.Now().Add(2 * time.Hour)
	e.now.Store(&later)
	e.syncUntil(t, c, objects.DeleteFailed, "timed out")

	c.Status = objects.DeleteInProgress // the operator deletes again
	if err := e.deleteCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := e.updateStatus(ctx, c, e.nodeGroups(c)); err != nil {
		t.Fatal(err)
	}
	if c.Status != objects.DeleteInProgress {
		t.Fatalf("a retried delete is %s at its first sync: %s", c.Status, deref(c.StatusReason))
	}
	if got := e.getCluster(t, p.r).Annotations[annotationDeleteRequested]; got != later.UTC().Format(time.RFC3339) {
		t.Fatalf("delete-requested annotation %q, want %s", got, later.UTC().Format(time.RFC3339))
	}
	much := later.Add(2 * time.Hour)
	e.now.Store(&much)
	e.syncUntil(t, c, objects.DeleteFailed, "timed out")
}

// secretFailingCore fails writing the cloud-credentials Secret.
type secretFailingCore struct{ Core }

func (c secretFailingCore) ApplySecret(ctx context.Context, s *corev1.Secret) error {
	if strings.HasSuffix(s.Name, "-cloud-credentials") {
		return errors.New("admission webhook denied the request")
	}
	return c.Core.ApplySecret(ctx, s)
}

// TestCredentialRevokedWhenItsSecretCannotBeWritten: a cloud credential
// issued for a create whose Secret write fails is revoked at once; no
// Secret names it, so the clean-up at deletion would never find it.
func TestCredentialRevokedWhenItsSecretCannotBeWritten(t *testing.T) {
	e := newEnv(t)
	d, err := New(Options{CreateTimeout: time.Hour}, Deps{Dynamic: e.dyn, Core: secretFailingCore{e.core}, Certs: fakeCerts{},
		Credentials: e.creds, Now: func() time.Time { return *e.now.Load() }}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := e.newCluster("no-secret", map[string]string{"kube_tag": "v1.33.4"})
	if _, err := d.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: e.request(c)}); err == nil || !strings.Contains(err.Error(), "webhook denied") {
		t.Fatalf("create: %v", err)
	}
	e.creds.mu.Lock()
	defer e.creds.mu.Unlock()
	if e.creds.n != 1 || len(e.creds.revoked) != 1 || e.creds.revoked[0] != "appcred-1" {
		t.Fatalf("issued %d, revoked %v; want the one issued revoked", e.creds.n, e.creds.revoked)
	}
}

// TestCreateCalledAgainIssuesNoSecondCredential: a create repeated with
// the same request (a lost reply, a resumed operation) keeps the cloud
// credential its first call issued: a second one would be named by no
// Secret, and never revoked.
func TestCreateCalledAgainIssuesNoSecondCredential(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster("again", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	for i := range 2 {
		if err := e.create(context.Background(), objects.Clone(c), 60); err != nil {
			t.Fatalf("create %d: %v", i+1, err)
		}
	}
	e.creds.mu.Lock()
	issued := e.creds.n
	e.creds.mu.Unlock()
	ns := namespaceFor("magnum", e.project)
	secrets := e.secretNames(t, ns, LabelClusterUUID+"="+deref(c.UUID)+","+LabelSecretKind+"=cloud-credentials")
	if issued != 1 || len(secrets) != 1 {
		t.Fatalf("issued %d credentials, Secrets %v; want one of each", issued, secrets)
	}
	if id := e.secret(t, ns, secrets[0]).Annotations[annotationCredentialID]; id != "appcred-1" {
		t.Errorf("the Secret names credential %q, want the first one", id)
	}
}

// TestUpgradeCalledAgainKeepsThePreviousTemplate: an upgrade repeated with
// the same request (a lost reply) records the same previous template, the
// one a failed upgrade rolls back to; the driver leaves its request as it
// got it.
func TestUpgradeCalledAgainKeepsThePreviousTemplate(t *testing.T) {
	e := newEnv(t)
	c, p := createdCluster(t, e, map[string]int32{"default-worker": 1})
	old := deref(c.ClusterTemplateID)
	next := &objects.ClusterTemplate{UUID: ptr("tmpl-again"), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"),
		MasterFlavorID: ptr("m1.medium"), Labels: map[string]string{"kube_tag": "v1.34.1"}}
	req := drivers.UpgradeRequest{ClusterRequest: e.request(c), NewTemplate: next, MaxBatchSize: 1}
	for i := range 2 {
		if _, err := e.d.UpgradeCluster(context.Background(), req); err != nil {
			t.Fatalf("upgrade %d: %v", i+1, err)
		}
	}
	if deref(req.Cluster.ClusterTemplateID) != old || deref(req.NodeGroups[0].Version) != "" {
		t.Errorf("the request was changed: template %s, version %q", deref(req.Cluster.ClusterTemplateID), deref(req.NodeGroups[0].Version))
	}
	if cl := e.getCluster(t, p.r); cl.Annotations[annotationPreviousTemplateID] != old || cl.Annotations[annotationTemplateID] != "tmpl-again" {
		t.Errorf("annotations after the repeated upgrade: %v, want previous %s", cl.Annotations, old)
	}
}
