// Package e2e holds the Cluster API driver's end-to-end test (issues 7
// and 22): magnum-api-style casts travel over RabbitMQ to the real
// conductor (its handlers behind the oslo RPC server, and its periodic
// sync_cluster_status), which runs the Cluster API driver against a real
// kube-apiserver with the real Cluster API controllers and webhooks on the
// in-memory infrastructure provider (drivers/capi/internal/apitest). A
// whole lifecycle (create, update, resize, nodegroup create and delete,
// upgrade, delete) is judged on the database rows the conductor writes and
// on what the controllers report. It lives under drivers/capi to use
// drivers/capi/internal/apitest.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/conductor"
	"github.com/openstack/magnum-conductor/conductor/indirection"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi"
	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone"
	"github.com/openstack/magnum-conductor/drivers/capi/keystone/keystonetest"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/internal/wiring"
	"github.com/openstack/magnum-conductor/periodic"
)

// server is the test binary's API server, started by TestMain unless -short.
var server *apitest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	// The first build of the test server and of the controllers takes
	// minutes (apitest); they are cached after.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	begin := time.Now()
	// The CAPO manager too, for the real-OpenStack test (it reconciles
	// nothing of the in-memory clusters).
	s, err := apitest.StartWithControllers(ctx, testing.Verbose(), apitest.WithCAPO())
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "capi e2e: cannot start the test API server with the Cluster API controllers:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "capi e2e: API server with the Cluster API controllers ready in %s\n", time.Since(begin).Round(time.Millisecond))
	server = s
	code := m.Run()
	if code != 0 {
		fmt.Fprint(os.Stderr, "capi e2e: test API server output:\n", s.Output())
	}
	s.Stop()
	os.Exit(code)
}

var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrSecret    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrCluster   = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	gvrMD        = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	gvrMachine   = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	h := randHex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

// recorder is a conductor.Notifier keeping each CADF event's type and
// outcome.
type recorder struct {
	mu     sync.Mutex
	events []string // "<priority> <event type> <outcome> <status>"
}

func (r *recorder) Notify(_ context.Context, priority, eventType string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	var p struct {
		Outcome string `json:"outcome"`
		Target  struct {
			Attachments []struct {
				Content struct {
					Status string `json:"status"`
				} `json:"content"`
			} `json:"attachments"`
		} `json:"target"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	status := ""
	if len(p.Target.Attachments) > 0 {
		status = p.Target.Attachments[0].Content.Status
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, strings.Join([]string{priority, eventType, p.Outcome, status}, " "))
	return nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := testkit.Await(ctx, 50*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T, log *slog.Logger) *db.Store {
	t.Helper()
	return dbtest.MySQLStore(t, db.Options{MaxRetries: 1, RetryInterval: time.Second}, log)
}

// rpc starts the real oslo RPC server with the conductor's endpoints on a
// unique exchange and topic, and returns a conductorapi client.
func rpc(t *testing.T, disp *oslo.Dispatcher, log *slog.Logger) *conductorapi.API {
	t.Helper()
	opts := oslo.DefaultOptions()
	opts.TransportURL = "rabbit://guest:guest@127.0.0.1:5672/"
	opts.ControlExchange = "capi_e2e_" + randHex(6)
	opts.Host = "capi-e2e"
	opts.RPCResponseTimeout = 20 * time.Second
	topic := "capi_e2e_" + randHex(6)
	raw, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{GracePeriod: 5 * time.Second}, oslo.Target{Topic: topic}, disp, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := oslo.NewClient(opts, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		if ch, err := raw.Channel(); err == nil {
			for _, q := range []string{topic, topic + "." + srv.Target().Server} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_ = ch.ExchangeDelete(opts.ControlExchange, false, false)
			_ = ch.ExchangeDelete(topic+"_fanout", false, false)
			_ = ch.Close()
		}
		_ = raw.Close()
	})
	return conductorapi.New(client, topic)
}

// clusterPrimitive is the Cluster magnum-api casts with cluster_create
// (wire vector cast_cluster_create: version 1.23, no id or status), with
// the fields of set replacing the defaults.
func clusterPrimitive(uuid, name, project, user, templateID string, set map[string]any) json.RawMessage {
	data := map[string]any{
		"uuid": uuid, "name": name, "project_id": project, "user_id": user, "cluster_template_id": templateID,
		"keypair": "e2e-kp", "docker_volume_size": 10, "labels": map[string]string{"kube_tag": "v1.33.4"},
		"master_flavor_id": "m1.medium", "flavor_id": "m1.small", "create_timeout": 60,
		"discovery_url": nil, "coe_version": nil, "container_version": nil, "fixed_network": nil, "fixed_subnet": nil,
		"floating_ip_enabled": true, "master_lb_enabled": false,
	}
	maps.Copy(data, set)
	changes := make([]string, 0, len(data))
	for k := range data {
		changes = append(changes, k)
	}
	sort.Strings(changes)
	b, _ := json.Marshal(map[string]any{
		"magnum_object.name": "Cluster", "magnum_object.namespace": "magnum", "magnum_object.version": "1.23",
		"magnum_object.data": data, "magnum_object.changes": changes,
	})
	return b
}

// primitive is o's primitive as magnum-api sends it: the row as it read
// it.
func primitive(t *testing.T, o objects.Object) json.RawMessage {
	t.Helper()
	b, err := objects.EncodeJSON(o, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lifecycle is the conductor under test, in process, and what the test
// reads: the database rows it writes and the management cluster.
type lifecycle struct {
	t     *testing.T
	ctx   context.Context
	admin context.Context
	store *db.Store
	dyn   dynamic.Interface
	uuid  string
	// ns and name are the Cluster API Cluster's (the row's stack_id).
	ns, name string
	// reasons are the status_reasons the last operation's row showed in
	// progress.
	reasons []string
}

// rows reads the cluster's row and its nodegroups' (nil, nil once the
// cluster's row is gone).
func (l *lifecycle) rows() (*objects.Cluster, []*objects.NodeGroup) {
	l.t.Helper()
	c, err := l.store.GetClusterByUUID(l.admin, l.uuid)
	if errors.Is(err, exception.ClusterNotFound(l.uuid)) {
		return nil, nil
	}
	if err != nil {
		l.t.Fatal(err)
	}
	ngs, err := l.store.ListNodeGroups(l.admin, l.uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		l.t.Fatal(err)
	}
	return c, ngs
}

func ngNamed(ngs []*objects.NodeGroup, name string) *objects.NodeGroup {
	for _, ng := range ngs {
		if ng.Name == name {
			return ng
		}
	}
	return nil
}

// describe is the rows, for messages.
func describe(c *objects.Cluster, ngs []*objects.NodeGroup) string {
	if c == nil {
		return "no cluster row"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s (%s)", c.Status, objects.Deref(c.StatusReason))
	for _, ng := range ngs {
		fmt.Fprintf(&b, "; nodegroup %s %s node_count %d (%s)", ng.Name, ng.Status, ng.NodeCount, objects.Deref(ng.StatusReason))
	}
	return b.String()
}

// operation waits for the cluster's row to show inProgress (what the
// handler claimed on the cast), then polls it until it leaves it, which
// the conductor's periodic sync does once the controllers report the
// operation done. At the poll that sees it leave, settled is asked about
// the controllers' state (the row is read first, and what settled checks
// does not go back): an answer fails the test, for an operation ended
// before the controllers finished it. It returns the rows as they ended.
func (l *lifecycle) operation(what, inProgress string, within time.Duration, settled func(c *objects.Cluster, ngs []*objects.NodeGroup) string) (*objects.Cluster, []*objects.NodeGroup) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.ctx, within)
	defer cancel()
	begin := time.Now()
	if err := testkit.Await(ctx, 20*time.Millisecond, what+": the cast claims the cluster", func() (bool, string) {
		c, ngs := l.rows()
		return c != nil && c.Status == inProgress, describe(c, ngs)
	}); err != nil {
		l.t.Fatal(err)
	}
	var c *objects.Cluster
	var ngs []*objects.NodeGroup
	bad := ""
	l.reasons = nil
	if err := testkit.Await(ctx, 200*time.Millisecond, what+": the periodic sync ends it", func() (bool, string) {
		c, ngs = l.rows()
		if c != nil && c.Status == inProgress {
			if r := objects.Deref(c.StatusReason); r != "" && !slices.Contains(l.reasons, r) {
				l.reasons = append(l.reasons, r)
			}
			return false, describe(c, ngs)
		}
		if settled != nil {
			bad = settled(c, ngs)
		}
		return true, ""
	}); err != nil {
		l.t.Fatal(err)
	}
	if bad != "" {
		l.t.Fatalf("%s ended (%s) before the controllers had done it: %s", what, describe(c, ngs), bad)
	}
	l.t.Logf("%s: %s in %s; status_reason on the way: %q", what, describe(c, ngs), time.Since(begin).Round(time.Millisecond), l.reasons)
	return c, ngs
}

// live lists the cluster's objects of a kind, with selector (may be "").
func (l *lifecycle) live(gvr schema.GroupVersionResource, selector string) []unstructured.Unstructured {
	l.t.Helper()
	sel := clusterv1.ClusterNameLabel + "=" + l.name
	if selector != "" {
		sel += "," + selector
	}
	list, err := l.dyn.Resource(gvr).Namespace(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		l.t.Fatal(err)
	}
	return list.Items
}

// cluster is the live Cluster API Cluster (nil once gone).
func (l *lifecycle) cluster() *clusterv1.Cluster {
	l.t.Helper()
	u, err := l.dyn.Resource(gvrCluster).Namespace(l.ns).Get(l.ctx, l.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		l.t.Fatal(err)
	}
	cl := &clusterv1.Cluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cl); err != nil {
		l.t.Fatal(err)
	}
	return cl
}

// available is why the live Cluster is not Available ("" when it is).
func (l *lifecycle) available() string {
	cl := l.cluster()
	if cl == nil {
		return "no Cluster"
	}
	c := apimeta.FindStatusCondition(cl.Status.Conditions, clusterv1.AvailableCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Sprintf("Cluster not Available: %+v", c)
	}
	return ""
}

// deployment is the live MachineDeployment of a nodegroup (nil when none).
func (l *lifecycle) deployment(ng string) *clusterv1.MachineDeployment {
	l.t.Helper()
	items := l.live(gvrMD, clusterv1.ClusterTopologyMachineDeploymentNameLabel+"="+ng)
	if len(items) == 0 {
		return nil
	}
	md := &clusterv1.MachineDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[0].Object, md); err != nil {
		l.t.Fatal(err)
	}
	return md
}

func i32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// unsettled is why a nodegroup's MachineDeployment does not run want
// replicas, every one ready, available and up to date ("" when it does).
func (l *lifecycle) unsettled(ng string, want int32) string {
	md := l.deployment(ng)
	if md == nil {
		return "no MachineDeployment for " + ng
	}
	if i32(md.Spec.Replicas) == want && i32(md.Status.Replicas) == want && i32(md.Status.ReadyReplicas) == want &&
		i32(md.Status.AvailableReplicas) == want && i32(md.Status.UpToDateReplicas) == want {
		return ""
	}
	return fmt.Sprintf("MachineDeployment %s: spec %d, status %d, ready %d, available %d, up to date %d (want %d)", md.Name,
		i32(md.Spec.Replicas), i32(md.Status.Replicas), i32(md.Status.ReadyReplicas), i32(md.Status.AvailableReplicas),
		i32(md.Status.UpToDateReplicas), want)
}

// machines are a nodegroup's live Machines ("" for the control plane's).
func (l *lifecycle) machines(ng string) []clusterv1.Machine {
	l.t.Helper()
	sel := clusterv1.MachineControlPlaneLabel
	if ng != "" {
		sel = clusterv1.ClusterTopologyMachineDeploymentNameLabel + "=" + ng
	}
	var out []clusterv1.Machine
	for _, u := range l.live(gvrMachine, sel) {
		m := clusterv1.Machine{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
			l.t.Fatal(err)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func machineNames(ms []clusterv1.Machine) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// checkRows fails the test unless the cluster's row is in status without
// a status_reason, and
// each nodegroup named in counts is in ngStatus (any, for "") with that
// node_count.
func checkRows(t *testing.T, what string, c *objects.Cluster, ngs []*objects.NodeGroup, status, ngStatus string, counts map[string]int64) {
	t.Helper()
	if c == nil || c.Status != status {
		t.Fatalf("%s: %s, want the cluster %s", what, describe(c, ngs), status)
	}
	// Settled, nothing is waited for: no status_reason.
	if r := objects.Deref(c.StatusReason); r != "" {
		t.Errorf("%s: status_reason %q", what, r)
	}
	if len(ngs) != len(counts) {
		t.Errorf("%s: %d nodegroups, want %d: %s", what, len(ngs), len(counts), describe(c, ngs))
	}
	for name, n := range counts {
		ng := ngNamed(ngs, name)
		if ng == nil || (ngStatus != "" && ng.Status != ngStatus) || ng.NodeCount != n {
			t.Errorf("%s: nodegroup %s, want %s with node_count %d: %s", what, name, ngStatus, n, describe(c, ngs))
		}
	}
}

// TestClusterLifecycleCastsThroughCAPIControllers is issues 7 and 22: a
// whole Magnum lifecycle driven as magnum-api drives it, casts (and the
// upgrade's call) over RabbitMQ to the conductor's handlers, with the
// Cluster API driver on the real controllers (the in-memory variant of the
// newest released class, through [capi_driver] class_dir), and the
// conductor's own periodic sync_cluster_status moving the rows: create (1
// master, 1 worker), cluster_update to 2 workers, cluster_resize back to 1
// naming the node to remove, a nodegroup created and deleted, an upgrade to
// the next Kubernetes minor, delete. Each step is judged on the rows and on
// what the controllers report; after the delete nothing the driver created
// is left.
func TestClusterLifecycleCastsThroughCAPIControllers(t *testing.T) {
	if server == nil {
		t.Skip("end-to-end test: needs the test kube-apiserver and the Cluster API controllers (not started with -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
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
	const (
		project = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
		user    = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
		token   = "e2e-user-token-5ecret"
	)

	// Keystone (the user's token, and the service user that revokes the
	// credential at the end of the delete, from the periodic sync), the
	// database, certificates.
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.AddUserToken(user, token)
	ks.SetService("svc-id", "magnum", "Default", "s3cret")
	issuer, err := keystone.New(keystone.Options{AuthURL: ks.AuthURL(), Timeout: 5 * time.Second,
		Service: keystone.ServiceCredentials{AuthURL: ks.AuthURL(), Username: "magnum", Password: "s3cret",
			UserDomainName: "Default", ProjectName: "service", ProjectDomainName: "Default"}}, log)
	if err != nil {
		t.Fatal(err)
	}
	store, certs, _, dyn := conductorParts(t, log)

	// The driver, on the real controllers: the in-memory variant of the
	// newest released class in its class_dir, kinds resolved through
	// discovery.
	released, err := apitest.ReleasedClasses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	classDir := t.TempDir()
	bundle, err := apitest.WriteInMemoryClassDir(classDir, capi.LatestClassVersion, released[capi.LatestClassVersion])
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := server.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	nsPrefix := "e2e" + randHex(3)
	drv, err := capi.New(capi.Options{NamespacePrefix: nsPrefix, ClassDir: classDir, CreateTimeout: 10 * time.Minute},
		capi.Deps{Dynamic: dyn, Core: capi.NewCore(dyn), Certs: wiring.CertSource{Certs: certs}, Credentials: issuer, Mapper: mapper}, log)
	if err != nil {
		t.Fatal(err)
	}
	api, rec := startConductor(t, store, certs, drv, log)

	// A namespace with nothing of Magnum's in it, for what every namespace
	// holds.
	empty, err := server.NewNamespace(ctx, "e2e-empty")
	if err != nil {
		t.Fatal(err)
	}

	// magnum-api has stored the template; it casts cluster_create.
	admin := request.With(ctx, request.Admin())
	tmpl := &objects.ClusterTemplate{UUID: objects.Str(newUUID()), Name: objects.Str("capi-e2e"), ProjectID: objects.Str(project),
		UserID: objects.Str(user), ImageID: objects.Str("6f4b2d36-0d3c-4b8e-9a57-3c2d1e0f9a11"), FlavorID: objects.Str("m1.small"),
		MasterFlavorID: objects.Str("m1.medium"), ExternalNetworkID: objects.Str("ext-net"), DNSNameserver: objects.Str("8.8.8.8"),
		Coe: "kubernetes", ServerType: objects.Str("vm"), ClusterDistro: objects.Str("ubuntu"), Driver: objects.Str(capi.DriverName),
		Labels: map[string]string{"kube_tag": "v1.33.4"}}
	if err := store.CreateClusterTemplate(admin, tmpl); err != nil {
		t.Fatal(err)
	}
	uuid := newUUID()
	userCtx := func() context.Context {
		return request.With(ctx, &request.Context{UserID: user, ProjectID: project, UserName: "e2e-user", ProjectName: "e2e-project",
			AuthToken: token, AuthURL: ks.AuthURL() + "/v3", Roles: []string{"member", "reader"}, RequestID: request.NewRequestID()})
	}
	l := &lifecycle{t: t, ctx: ctx, admin: admin, store: store, dyn: dyn, uuid: uuid}
	createTimeout := 60
	if err := api.ClusterCreateAsync(userCtx(), clusterPrimitive(uuid, "E2E Cluster", project, user, *tmpl.UUID, nil), 1, 1, &createTimeout); err != nil {
		t.Fatal(err)
	}

	// The conductor creates the row, the certificates, the credential and
	// the CAPI Cluster; stack_id is <namespace>/<name> once the driver ran.
	var cluster *objects.Cluster
	eventually(t, "CAPI Cluster written", 60*time.Second, func() (bool, string) {
		c, ngs := l.rows()
		if c == nil {
			return false, "no cluster row"
		}
		cluster = c
		if objects.Deref(c.StackID) == "" || len(ks.Creds()) == 0 {
			return false, describe(c, ngs)
		}
		return true, ""
	})
	ns, name, ok := strings.Cut(objects.Deref(cluster.StackID), "/")
	if !ok || ns != nsPrefix+"-"+project {
		t.Fatalf("stack_id %q", objects.Deref(cluster.StackID))
	}
	l.ns, l.name = ns, name
	// The project namespace carries the project label.
	nsObj, err := dyn.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if nsObj.GetLabels()[capi.LabelProjectID] != project {
		t.Errorf("namespace %s labels %v", ns, nsObj.GetLabels())
	}
	// The credential is the user's, restricted, and its Secret holds it;
	// the CA Secrets carry Magnum's CAs with their decrypted keys.
	creds := ks.Creds()
	if len(creds) != 1 || creds[0].UserID != user || creds[0].Unrestricted || !strings.HasPrefix(creds[0].Name, "magnum-"+uuid) {
		t.Fatalf("Keystone credentials %+v", creds)
	}
	secret := func(n string) *corev1.Secret {
		t.Helper()
		u, err := dyn.Resource(gvrSecret).Namespace(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Secret %s/%s: %v", ns, n, err)
		}
		s := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
			t.Fatal(err)
		}
		if s.Labels[capi.LabelClusterUUID] != uuid || s.Labels[capi.LabelProjectID] != project || s.Labels["cluster.x-k8s.io/cluster-name"] != name {
			t.Errorf("Secret %s labels %v", n, s.Labels)
		}
		return s
	}
	cloud := secret(name + "-cloud-credentials")
	if cloud.Type != corev1.SecretTypeOpaque || !strings.Contains(string(cloud.Data["clouds.yaml"]), creds[0].ID) ||
		!strings.Contains(string(cloud.Data["clouds.yaml"]), ks.AuthURL()) {
		t.Fatalf("cloud-credentials Secret: type %s, clouds.yaml %q", cloud.Type, cloud.Data["clouds.yaml"])
	}
	wantCA, err := certs.GetCACertificate(admin, cluster, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ca", "etcd", "proxy"} {
		s := secret(name + "-" + kind)
		if s.Type != "cluster.x-k8s.io/secret" || len(s.Data) != 2 {
			t.Errorf("Secret %s-%s: type %s, %d data keys", name, kind, s.Type, len(s.Data))
		}
		if blk, _ := pem.Decode(s.Data["tls.crt"]); blk == nil || blk.Type != "CERTIFICATE" {
			t.Fatalf("Secret %s-%s: tls.crt is not a PEM certificate", name, kind)
		}
		if blk, _ := pem.Decode(s.Data["tls.key"]); blk == nil || blk.Type != "PRIVATE KEY" {
			t.Fatalf("Secret %s-%s: tls.key is not a decrypted PKCS#8 key", name, kind)
		}
		if kind == "ca" && string(s.Data["tls.crt"]) != wantCA {
			t.Fatal("the ca Secret does not hold the cluster's Kubernetes CA")
		}
	}

	// CREATE_COMPLETE comes from the periodic sync, once the controllers
	// made the Cluster Available with its machines running.
	c, ngs := l.operation("create", objects.CreateInProgress, 4*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		if why := l.available(); why != "" {
			return why
		}
		if cp := l.machines(""); len(cp) != 1 {
			return fmt.Sprintf("control plane Machines %v, want 1", machineNames(cp))
		}
		return l.unsettled("default-worker", 1)
	})
	checkRows(t, "create", c, ngs, objects.CreateComplete, objects.CreateComplete, map[string]int64{"default-master": 1, "default-worker": 1})
	if len(l.reasons) == 0 {
		t.Error("create: no status_reason said what the create waited for")
	}
	if objects.Deref(c.APIAddress) == "" || objects.Deref(c.CoeVersion) != "v1.33.4" {
		t.Errorf("api_address %q, coe_version %q after the create", objects.Deref(c.APIAddress), objects.Deref(c.CoeVersion))
	}
	if got, want := rec.all(), []string{"INFO magnum.cluster.create pending CREATE_IN_PROGRESS",
		"INFO magnum.cluster.create success CREATE_COMPLETE"}; !slices.Equal(got, want) {
		t.Errorf("notifications after the create: %q, want %q", got, want)
	}

	// PATCH node_count: cluster_update of the default worker to 2.
	reason, err := json.Marshal(c.HealthStatusReason)
	if err != nil {
		t.Fatal(err)
	}
	health := c.HealthStatus
	if err := api.ClusterUpdateAsync(userCtx(), primitive(t, c), 2, &health, reason, false); err != nil {
		t.Fatal(err)
	}
	c, ngs = l.operation("cluster_update to 2 workers", objects.UpdateInProgress, 2*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		return l.unsettled("default-worker", 2)
	})
	checkRows(t, "cluster_update", c, ngs, objects.UpdateComplete, objects.CreateComplete, map[string]int64{"default-master": 1, "default-worker": 2})

	// cluster_resize back to 1, naming the node to remove.
	before := l.machines("default-worker")
	if len(before) != 2 || before[1].Status.NodeRef.Name == "" {
		t.Fatalf("worker Machines %v, want 2 with nodes", machineNames(before))
	}
	victim := before[1].Status.NodeRef.Name
	if err := api.ClusterResizeAsync(userCtx(), primitive(t, c), 1, []string{victim}, primitive(t, ngNamed(ngs, "default-worker"))); err != nil {
		t.Fatal(err)
	}
	c, ngs = l.operation("cluster_resize to 1 worker", objects.UpdateInProgress, 2*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		return l.unsettled("default-worker", 1)
	})
	checkRows(t, "cluster_resize", c, ngs, objects.UpdateComplete, "", map[string]int64{"default-master": 1, "default-worker": 1})
	if w := ngNamed(ngs, "default-worker"); w == nil || w.Status != objects.UpdateComplete {
		t.Errorf("worker after the resize: %s", describe(c, ngs))
	}
	if after := machineNames(l.machines("default-worker")); !slices.Equal(after, []string{before[0].Name}) {
		t.Errorf("worker Machines after removing node %s (Machine %s): %v, want [%s]", victim, before[1].Name, after, before[0].Name)
	}

	// nodegroup_create: a second worker nodegroup of 1 node.
	extra := &objects.NodeGroup{UUID: newUUID(), Name: "extra", ClusterID: uuid, ProjectID: project, Role: objects.RoleWorker,
		NodeCount: 1, MinNodeCount: 1, Labels: map[string]string{}, ImageID: tmpl.ImageID, FlavorID: objects.Str("m1.small")}
	if err := api.NodeGroupCreateAsync(userCtx(), primitive(t, c), primitive(t, extra)); err != nil {
		t.Fatal(err)
	}
	c, ngs = l.operation("nodegroup_create", objects.UpdateInProgress, 2*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		return l.unsettled("extra", 1)
	})
	checkRows(t, "nodegroup_create", c, ngs, objects.UpdateComplete, "", map[string]int64{"default-master": 1, "default-worker": 1, "extra": 1})
	if ng := ngNamed(ngs, "extra"); ng == nil || ng.Status != objects.CreateComplete || ng.NodeCount != 1 {
		t.Fatalf("nodegroup_create: %s, want extra CREATE_COMPLETE with node_count 1", describe(c, ngs))
	}

	// nodegroup_delete: the row goes once the controllers removed its
	// MachineDeployment and Machines.
	if err := api.NodeGroupDeleteAsync(userCtx(), primitive(t, c), primitive(t, ngNamed(ngs, "extra"))); err != nil {
		t.Fatal(err)
	}
	c, ngs = l.operation("nodegroup_delete", objects.UpdateInProgress, 2*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		if md, ms := l.deployment("extra"), l.machines("extra"); md != nil || len(ms) > 0 {
			return fmt.Sprintf("MachineDeployment %v and Machines %v of the deleted nodegroup still there", md != nil, machineNames(ms))
		}
		return ""
	})
	checkRows(t, "nodegroup_delete", c, ngs, objects.UpdateComplete, "", map[string]int64{"default-master": 1, "default-worker": 1})

	// cluster_upgrade (a call, as magnum-api makes it) to a template of the
	// next minor, through the default master nodegroup: every nodegroup
	// completes only once all its Machines run the new version.
	next := &objects.ClusterTemplate{UUID: objects.Str(newUUID()), Name: objects.Str("capi-e2e-next"), ProjectID: objects.Str(project),
		UserID: objects.Str(user), ImageID: tmpl.ImageID, FlavorID: tmpl.FlavorID, MasterFlavorID: tmpl.MasterFlavorID,
		ExternalNetworkID: tmpl.ExternalNetworkID, DNSNameserver: tmpl.DNSNameserver, Coe: "kubernetes", ServerType: tmpl.ServerType,
		ClusterDistro: tmpl.ClusterDistro, Driver: tmpl.Driver, Labels: map[string]string{"kube_tag": "v1.34.1"}}
	if err := store.CreateClusterTemplate(admin, next); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ClusterUpgradeAsync(userCtx(), primitive(t, c), primitive(t, next), 1, primitive(t, ngNamed(ngs, "default-master"))); err != nil {
		t.Fatalf("cluster_upgrade: %v", err)
	}
	c, ngs = l.operation("cluster_upgrade to v1.34.1", objects.UpdateInProgress, 4*time.Minute, func(*objects.Cluster, []*objects.NodeGroup) string {
		for _, m := range append(l.machines(""), l.machines("default-worker")...) {
			if m.Spec.Version != "v1.34.1" {
				return fmt.Sprintf("Machine %s runs %s", m.Name, m.Spec.Version)
			}
		}
		return l.unsettled("default-worker", 1)
	})
	checkRows(t, "cluster_upgrade", c, ngs, objects.UpdateComplete, objects.UpdateComplete, map[string]int64{"default-master": 1, "default-worker": 1})
	if objects.Deref(c.ClusterTemplateID) != *next.UUID || objects.Deref(c.CoeVersion) != "v1.34.1" {
		t.Errorf("after the upgrade: cluster_template_id %s, coe_version %q", objects.Deref(c.ClusterTemplateID), objects.Deref(c.CoeVersion))
	}
	for _, ng := range ngs {
		if objects.Deref(ng.Version) != "v1.34.1" {
			t.Errorf("nodegroup %s version %q after the upgrade", ng.Name, objects.Deref(ng.Version))
		}
	}

	// cluster_delete: the rows go once the Cluster is gone, and with them
	// the credential and everything else the driver created.
	if err := api.ClusterDeleteAsync(userCtx(), uuid); err != nil {
		t.Fatal(err)
	}
	c, ngs = l.operation("cluster_delete", objects.DeleteInProgress, 4*time.Minute, func(c *objects.Cluster, _ []*objects.NodeGroup) string {
		if c != nil && c.Status != objects.DeleteComplete {
			return "" // failed: reported below
		}
		if l.cluster() != nil {
			return "the Cluster is still there"
		}
		return ""
	})
	if c != nil && c.Status != objects.DeleteComplete {
		t.Fatalf("cluster_delete: %s", describe(c, ngs))
	}
	eventually(t, "the cluster's rows removed", time.Minute, func() (bool, string) {
		c, ngs := l.rows()
		return c == nil, describe(c, ngs)
	})
	if ngs, err := store.ListNodeGroups(admin, uuid, db.ListOpts{}, db.NodeGroupFilters{}); err != nil || len(ngs) != 0 {
		t.Errorf("nodegroup rows after the delete: %d (%v)", len(ngs), err)
	}
	if creds := ks.Creds(); len(creds) != 0 {
		t.Errorf("Keystone credentials left after the delete: %+v", creds)
	}
	left, err := server.Leftovers(ctx, ns, empty, bundle, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left in namespace %s after the delete: %v", ns, left)
	}
	// Each operation's CADF events, as Magnum sends them: a pending one
	// from the handler with the status before the operation (nodegroup
	// operations send none), the outcome from the periodic sync.
	want := []string{
		"INFO magnum.cluster.create pending CREATE_IN_PROGRESS", "INFO magnum.cluster.create success CREATE_COMPLETE",
		"INFO magnum.cluster.update pending CREATE_COMPLETE", "INFO magnum.cluster.update success UPDATE_COMPLETE", // cluster_update
		"INFO magnum.cluster.update pending UPDATE_COMPLETE", "INFO magnum.cluster.update success UPDATE_COMPLETE", // cluster_resize
		"INFO magnum.cluster.update success UPDATE_COMPLETE",                                                       // nodegroup_create
		"INFO magnum.cluster.update success UPDATE_COMPLETE",                                                       // nodegroup_delete
		"INFO magnum.cluster.update pending UPDATE_COMPLETE", "INFO magnum.cluster.update success UPDATE_COMPLETE", // cluster_upgrade
		"INFO magnum.cluster.delete pending UPDATE_COMPLETE", "INFO magnum.cluster.delete success DELETE_COMPLETE",
	}
	if got := rec.all(); !slices.Equal(got, want) {
		t.Errorf("notifications: %q, want %q", got, want)
	}
}

// startConductor runs the conductor under test in process, as package
// service wires it: drv's background work (its informers), the handlers
// and the indirection API behind the real oslo RPC server, and
// sync_cluster_status in the periodic runner (a 1 s spacing instead of
// Magnum's 10 s, to keep the tests short). It returns the client
// magnum-api would use and the CADF events' recorder; all of it stops when
// the test ends.
func startConductor(t *testing.T, store *db.Store, certs *certmanager.Manager, drv drivers.Driver, log *slog.Logger) (*conductorapi.API, *recorder) {
	t.Helper()
	registry, err := drivers.NewRegistry(nil, drv)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	// As the conductor starts its drivers' background work (informers).
	waitDrivers := drivers.StartRunners(runCtx, registry.Drivers(), 10*time.Second, log)
	rec := &recorder{}
	events := conductor.NewNotifications(rec, store, "openstack", log)
	timeouts := statusmachine.Timeouts{Create: 10 * time.Minute, Update: 10 * time.Minute, Delete: 10 * time.Minute,
		Resume: time.Minute + time.Second, ResumeAttempts: 1}
	handlers, err := conductor.New(conductor.Deps{Store: store, Certs: certs, Drivers: registry, Notifications: events,
		Log: log, DriverTimeout: time.Minute, Timeouts: timeouts})
	if err != nil {
		t.Fatal(err)
	}
	disp := oslo.NewDispatcher()
	if err := indirection.New(store, log).Register(disp); err != nil {
		t.Fatal(err)
	}
	if err := handlers.Register(disp); err != nil {
		t.Fatal(err)
	}
	api := rpc(t, disp, log)
	sharder, err := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, periodic.RealClock{}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	syncJob, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{Timeouts: timeouts, Spacing: time.Second, Settled: true},
		periodic.Deps{Store: store, Drivers: registry, Notifier: events, Certs: certs, Sharder: sharder, Log: log, Resumer: handlers})
	if err != nil {
		t.Fatal(err)
	}
	runner := periodic.NewRunner(periodic.RunnerOptions{Jitter: -1}, log, nil)
	runner.Add(syncJob, true)
	runnerDone := make(chan struct{})
	go func() {
		defer close(runnerDone)
		runner.Run(runCtx)
	}()
	t.Cleanup(func() {
		stopRun()
		<-runnerDone
		waitDrivers()
	})
	return api, rec
}

// conductorParts are what a conductor under test is built from besides its
// driver: a database of its own (MariaDB), the certificate manager on it,
// and the test API server's client configuration (30 s per request) and
// dynamic client.
func conductorParts(t *testing.T, log *slog.Logger) (*db.Store, *certmanager.Manager, *rest.Config, dynamic.Interface) {
	t.Helper()
	store := openStore(t, log)
	certs, err := certmanager.New(certmanager.Options{CertManagerType: "x509keypair", KeyPoolSize: -1}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(server.Config)
	cfg.Timeout = 30 * time.Second
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store, certs, cfg, dyn
}
