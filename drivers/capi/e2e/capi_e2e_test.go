// Package e2e holds the Cluster API driver's end-to-end test (issue 7): a
// magnum-api-style cast travels over RabbitMQ to the real conductor and
// reaches CREATE_COMPLETE against a real kube-apiserver serving the core API
// (Namespaces, Secrets) and the CAPI and CAPO CRDs. It lives under
// drivers/capi to use the test server of drivers/capi/internal/apitest.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/openstack/magnum-conductor/api/conductorapi"
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
	"github.com/openstack/magnum-conductor/drivers/capi/wiring"
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
	// The first build of the test server takes minutes (apitest).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	s, err := startServer(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "capi e2e: cannot start the test API server:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if code != 0 {
		fmt.Fprint(os.Stderr, "capi e2e: test API server output:\n", s.Output())
	}
	s.Stop()
	os.Exit(code)
}

func startServer(ctx context.Context) (*apitest.Server, error) {
	return apitest.StartWithCRDs(ctx, filepath.Join("..", "testdata", "crds"), testing.Verbose())
}

var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrSecret    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrCluster   = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	gvrMD        = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	gvrKCP       = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"}
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

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s; last state: %s", what, timeout, state)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
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
// (wire vector cast_cluster_create: version 1.23, no id or status).
func clusterPrimitive(uuid, name, project, user, templateID string) json.RawMessage {
	data := map[string]any{
		"uuid": uuid, "name": name, "project_id": project, "user_id": user, "cluster_template_id": templateID,
		"keypair": "e2e-kp", "docker_volume_size": 10, "labels": map[string]string{"kube_tag": "v1.33.4"},
		"master_flavor_id": "m1.medium", "flavor_id": "m1.small", "create_timeout": 60,
		"discovery_url": nil, "coe_version": nil, "container_version": nil, "fixed_network": nil, "fixed_subnet": nil,
		"floating_ip_enabled": true, "master_lb_enabled": false,
	}
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

func condition(typ string, s metav1.ConditionStatus, reason string) map[string]any {
	return map[string]any{"type": typ, "status": string(s), "reason": reason, "message": "",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// TestClusterCreateCastReachesCreateCompleteThroughCAPI is issue 7: a
// magnum-api cast of cluster_create through RabbitMQ to the conductor's
// handlers, the Cluster API driver writing to a real API server, CAPI played
// by the test, and sync_cluster_status completing the cluster.
func TestClusterCreateCastReachesCreateCompleteThroughCAPI(t *testing.T) {
	if server == nil {
		t.Skip("end-to-end test: needs the test kube-apiserver (not started with -short)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	const (
		project = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
		user    = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
		token   = "e2e-user-token-5ecret"
	)

	// Keystone, the database, certificates, the driver.
	ks := keystonetest.New()
	t.Cleanup(ks.Close)
	ks.AddUserToken(user, token)
	issuer, err := keystone.New(keystone.Options{AuthURL: ks.AuthURL(), Timeout: 5 * time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t, log)
	certs, err := certmanager.New(certmanager.Options{CertManagerType: "x509keypair", KeyPoolSize: -1}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	nsPrefix := "e2e" + randHex(3)
	drv, err := capi.New(capi.Options{NamespacePrefix: nsPrefix}, capi.Deps{Dynamic: dyn, Core: capi.NewCore(dyn),
		Certs: wiring.CertSource{Certs: certs}, Credentials: issuer}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Start(ctx); err != nil { // informers live until the test ends
		t.Fatal(err)
	}
	registry, err := drivers.NewRegistry(nil, drv)
	if err != nil {
		t.Fatal(err)
	}

	// The conductor: handlers and indirection behind the real RPC server.
	rec := &recorder{}
	events := conductor.NewNotifications(rec, store, "openstack", log)
	handlers, err := conductor.New(conductor.Deps{Store: store, Certs: certs, Drivers: registry, Notifications: events,
		Log: log, DriverTimeout: time.Minute})
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
	userCtx := request.With(ctx, &request.Context{UserID: user, ProjectID: project, UserName: "e2e-user", ProjectName: "e2e-project",
		AuthToken: token, AuthURL: ks.AuthURL() + "/v3", Roles: []string{"member", "reader"}, RequestID: request.NewRequestID()})
	createTimeout := 60
	if err := api.ClusterCreateAsync(userCtx, clusterPrimitive(uuid, "E2E Cluster", project, user, *tmpl.UUID), 1, 2, &createTimeout); err != nil {
		t.Fatal(err)
	}

	// The conductor creates the row, the certificates, the credential and
	// the CAPI Cluster; stack_id is <namespace>/<name> once the driver ran.
	var cluster *objects.Cluster
	eventually(t, "CAPI Cluster written", 60*time.Second, func() (bool, string) {
		c, err := store.GetClusterByUUID(admin, uuid)
		if err != nil {
			return false, err.Error()
		}
		cluster = c
		if objects.Deref(c.StackID) == "" || len(ks.Creds()) == 0 {
			return false, c.Status + " " + objects.Deref(c.StatusReason)
		}
		return true, ""
	})
	if cluster.Status != objects.CreateInProgress {
		t.Fatalf("after the cast: %s %q", cluster.Status, objects.Deref(cluster.StatusReason))
	}
	ns, name, ok := strings.Cut(objects.Deref(cluster.StackID), "/")
	if !ok || ns != nsPrefix+"-"+project {
		t.Fatalf("stack_id %q", objects.Deref(cluster.StackID))
	}
	if _, err := dyn.Resource(gvrCluster).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("CAPI Cluster %s/%s: %v", ns, name, err)
	}
	// The project namespace carries the project label.
	nsObj, err := dyn.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if nsObj.GetLabels()[capi.LabelProjectID] != project {
		t.Errorf("namespace %s labels %v", ns, nsObj.GetLabels())
	}
	// The credential is the user's, restricted, and CAPO's Secret holds it;
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

	// Play Cluster API: control plane, workers, endpoint, then Available.
	owned := func(objName string, extra map[string]string) map[string]any {
		l := map[string]any{"cluster.x-k8s.io/cluster-name": name, capi.LabelClusterUUID: uuid}
		for k, v := range extra {
			l[k] = v
		}
		return map[string]any{"name": objName, "namespace": ns, "labels": l}
	}
	create := func(gvr schema.GroupVersionResource, obj map[string]any) {
		t.Helper()
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", gvr.Resource, err)
		}
	}
	setStatus := func(gvr schema.GroupVersionResource, objName string, status func(gen int64) map[string]any) {
		t.Helper()
		for i := 0; ; i++ {
			u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, objName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u.Object["status"] = status(u.GetGeneration())
			if _, err = dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err == nil {
				return
			}
			if !apierrors.IsConflict(err) || i > 5 {
				t.Fatalf("status of %s %s: %v", gvr.Resource, objName, err)
			}
		}
	}
	settled := []any{condition("Available", metav1.ConditionTrue, "Available"), condition("RollingOut", metav1.ConditionFalse, "NotRollingOut"),
		condition("ScalingUp", metav1.ConditionFalse, "NotScalingUp"), condition("ScalingDown", metav1.ConditionFalse, "NotScalingDown")}
	infraRef := func(kind, n string) map[string]any {
		return map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": n}
	}
	create(gvrKCP, map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
		"metadata": owned(name+"-cp", nil),
		"spec": map[string]any{"replicas": 1, "version": "v1.33.4",
			"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef("OpenStackMachineTemplate", "cp")}}}})
	setStatus(gvrKCP, name+"-cp", func(gen int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "replicas": 1, "readyReplicas": 1, "availableReplicas": 1,
			"upToDateReplicas": 1, "version": "v1.33.4", "conditions": settled}
	})
	mdLabel := map[string]string{"topology.cluster.x-k8s.io/deployment-name": "default-worker"}
	create(gvrMD, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
		"metadata": owned(name+"-default-worker", mdLabel),
		"spec": map[string]any{"clusterName": name, "replicas": 2,
			"selector": map[string]any{"matchLabels": mdLabel},
			"template": map[string]any{"spec": map[string]any{"clusterName": name,
				"bootstrap": map[string]any{"dataSecretName": "bootstrap"}, "infrastructureRef": infraRef("OpenStackMachineTemplate", "w")}}}})
	setStatus(gvrMD, name+"-default-worker", func(gen int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "replicas": 2, "upToDateReplicas": 2, "availableReplicas": 2,
			"readyReplicas": 2, "conditions": settled}
	})
	patch := `{"spec":{"controlPlaneEndpoint":{"host":"203.0.113.7","port":6443}}}`
	if _, err := dyn.Resource(gvrCluster).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", []byte(patch),
		metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		t.Fatal(err)
	}
	setStatus(gvrCluster, name, func(gen int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "conditions": []any{
			condition("InfrastructureReady", metav1.ConditionTrue, "Ready"),
			condition("ControlPlaneInitialized", metav1.ConditionTrue, "Initialized"),
			condition("ControlPlaneAvailable", metav1.ConditionTrue, "Available"),
			condition("WorkersAvailable", metav1.ConditionTrue, "Available"),
			condition("Available", metav1.ConditionTrue, "Available"),
			condition("RollingOut", metav1.ConditionFalse, "NotRollingOut"),
			condition("ScalingUp", metav1.ConditionFalse, "NotScalingUp"),
			condition("ScalingDown", metav1.ConditionFalse, "NotScalingDown"),
			condition("TopologyReconciled", metav1.ConditionTrue, "ReconcileSucceeded"),
		}, "controlPlane": map[string]any{"versions": []any{map[string]any{"version": "v1.33.4", "replicas": 1}}}}
	})

	// sync_cluster_status, one step at a time, until the row completes.
	sharder, err := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, periodic.RealClock{}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	sync, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, periodic.Deps{Store: store, Drivers: registry,
		Notifier: events, Certs: certs, Sharder: sharder, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "CREATE_COMPLETE", 60*time.Second, func() (bool, string) {
		if err := sync.RunOnce(ctx); err != nil {
			return false, "RunOnce: " + err.Error()
		}
		c, err := store.GetClusterByUUID(admin, uuid)
		if err != nil {
			return false, err.Error()
		}
		cluster = c
		return c.Status == objects.CreateComplete, c.Status + " " + objects.Deref(c.StatusReason)
	})
	if got := objects.Deref(cluster.APIAddress); got != "https://203.0.113.7:6443" {
		t.Errorf("api_address = %q", got)
	}
	if objects.Deref(cluster.CoeVersion) != "v1.33.4" {
		t.Errorf("coe_version = %q", objects.Deref(cluster.CoeVersion))
	}
	ngs, err := store.ListNodeGroups(admin, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ng := range ngs {
		if ng.Status != objects.CreateComplete {
			t.Errorf("nodegroup %s: %s", ng.Name, ng.Status)
		}
	}
	evs := rec.all()
	want := []string{"INFO magnum.cluster.create pending CREATE_IN_PROGRESS", "INFO magnum.cluster.create success CREATE_COMPLETE"}
	for _, w := range want {
		found := false
		for _, e := range evs {
			found = found || e == w
		}
		if !found {
			t.Errorf("notification %q not emitted; got %q", w, evs)
		}
	}
}
