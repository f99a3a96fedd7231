package apitest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// A server with the controllers is started by the first test that needs
// it (the unit tests of this package do not pay for it) and stopped by
// TestMain, or by a test that needs the other kind: one with the
// Cluster API managers (needControllers), one with the CAPO manager too
// (needCAPO). Two
// controller sets at once starve each other on two cores
// (DEVELOPERS.md), so only one runs at a time; the tests of one kind are
// in one file, and Go runs a package's tests file by file.
var (
	serverMu   sync.Mutex
	server     *apitest.Server
	serverKind string
	startErrs  = map[string]error{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	code := m.Run()
	if server != nil {
		if code != 0 {
			fmt.Fprint(os.Stderr, "apitest: test API server output:\n", server.Output())
		}
		server.Stop()
	}
	os.Exit(code)
}

// needServer returns the running server of kind, started by start (and
// the other kind's stopped) if it is not the one running.
func needServer(t *testing.T, kind string, start func(context.Context) (*apitest.Server, error)) (*apitest.Server, dynamic.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the test kube-apiserver and the Cluster API controllers (not started with -short)")
	}
	serverMu.Lock()
	defer serverMu.Unlock()
	if err := startErrs[kind]; err != nil {
		t.Fatal(err)
	}
	if serverKind != kind {
		if server != nil {
			server.Stop()
			server, serverKind = nil, ""
		}
		// The first build of the managers takes minutes (BuildManagers,
		// BuildCAPO).
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
		defer cancel()
		begin := time.Now()
		s, err := start(ctx)
		if err != nil {
			startErrs[kind] = err
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "apitest: API server with the %s controllers ready in %s\n", kind, time.Since(begin).Round(time.Millisecond))
		server, serverKind = s, kind
	}
	s := server
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Controllers().Logs(3000))
		}
	})
	return s, dyn
}

// needControllers returns the server with the Cluster API controllers and
// CAPO's released CRDs (no CAPO manager).
func needControllers(t *testing.T) (*apitest.Server, dynamic.Interface) {
	t.Helper()
	return needServer(t, "Cluster API", func(ctx context.Context) (*apitest.Server, error) {
		return apitest.StartWithControllers(ctx, testing.Verbose())
	})
}

var (
	clusterGVR      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	clusterClassGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusterclasses"}
	mdGVR           = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	machineGVR      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	namespaceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// waitFor polls cond every 200 ms until it holds, fails the test when ctx
// ends first (with cond's last answer) or when cond returns an error.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string, error)) {
	t.Helper()
	if err := testkit.Await(ctx, 200*time.Millisecond, what, func() (bool, string) {
		ok, state, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ok, state
	}); err != nil {
		t.Fatal(err)
	}
}

func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", "not reported"
}

// applyClass creates a bundle in ns and waits for the ClusterClass
// controller to accept its variables (which it does only when it finds
// the templates' CRDs by their contract labels).
func applyClass(ctx context.Context, t *testing.T, s *apitest.Server, dyn dynamic.Interface, ns string, bundle []byte) string {
	t.Helper()
	objs, err := apitest.ApplyObjects(ctx, s, ns, bundle)
	if err != nil {
		t.Fatal(err)
	}
	class := objs[len(objs)-1]
	if class.GetKind() != "ClusterClass" {
		t.Fatalf("last object applied is a %s", class.GetKind())
	}
	waitFor(ctx, t, "ClusterClass "+class.GetName()+" VariablesReady", func() (bool, string, error) {
		got, err := dyn.Resource(clusterClassGVR).Namespace(ns).Get(ctx, class.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st, msg := condition(got, "VariablesReady")
		return st == "True", st + ": " + msg, nil
	})
	return class.GetName()
}

// topologyCluster is a Cluster of the magnum-v1 class, as an operator would
// write it by hand: every required variable without a default is set.
func topologyCluster(ns, name, class string, workers int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"clusterNetwork": map[string]any{
				"pods":     map[string]any{"cidrBlocks": []any{"10.100.0.0/16"}},
				"services": map[string]any{"cidrBlocks": []any{"10.254.0.0/16"}},
			},
			"topology": map[string]any{
				"classRef":     map[string]any{"name": class},
				"version":      "v1.33.4",
				"controlPlane": map[string]any{"replicas": int64(1)},
				"workers": map[string]any{"machineDeployments": []any{
					map[string]any{"class": "default-worker", "name": "md-0", "replicas": workers},
				}},
				"variables": []any{
					map[string]any{"name": "identityRefName", "value": "cloud-credentials"},
					map[string]any{"name": "apiServerLoadBalancer", "value": map[string]any{}},
					map[string]any{"name": "controlPlaneFlavor", "value": "m1.medium"},
					map[string]any{"name": "flavor", "value": "m1.small"},
					map[string]any{"name": "imageID", "value": "ubuntu-2404-kube-v1.33.4"},
					map[string]any{"name": "bootVolume", "value": map[string]any{}},
				},
			},
		},
	}}
}

// A hand-written Cluster on the in-memory variant of the released class is
// created, becomes Available, is scaled, and is deleted (background
// propagation) with nothing left behind: the controllers, the webhooks and
// the garbage collector are real.
func TestControllersRunAClusterLifecycle(t *testing.T) {
	s, dyn := needControllers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bundles, err := apitest.ReleasedClasses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	variant, err := apitest.InMemoryClass(bundles["v1"])
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.NewNamespace(ctx, "lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	class := applyClass(ctx, t, s, dyn, ns, variant)
	// What the namespace holds besides what the Cluster brings.
	before := namespaceObjects(ctx, t, s, dyn, ns)

	begin := time.Now()
	clusters := dyn.Resource(clusterGVR).Namespace(ns)
	if _, err := clusters.Create(ctx, topologyCluster(ns, "demo", class, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "Cluster Available", func() (bool, string, error) {
		got, err := clusters.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st, msg := condition(got, "Available")
		return st == "True", st + ": " + msg, nil
	})
	t.Logf("created and Available in %s", time.Since(begin).Round(time.Millisecond))
	machines := func() (int, error) {
		l, err := dyn.Resource(machineGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=demo"})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	if n, err := machines(); err != nil || n != 2 {
		t.Fatalf("Machines of an Available 1+1 cluster: %d (%v)", n, err)
	}

	begin = time.Now()
	patch := `[{"op":"replace","path":"/spec/topology/workers/machineDeployments/0/replicas","value":3}]`
	if _, err := clusters.Patch(ctx, "demo", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "MachineDeployment at 3 available replicas", func() (bool, string, error) {
		l, err := dyn.Resource(mdGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=demo"})
		if err != nil || len(l.Items) != 1 {
			return false, fmt.Sprintf("%d MachineDeployments", len(l.Items)), err
		}
		md := l.Items[0]
		want, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		avail, _, _ := unstructured.NestedInt64(md.Object, "status", "availableReplicas")
		upToDate, _, _ := unstructured.NestedInt64(md.Object, "status", "upToDateReplicas")
		return want == 3 && avail == 3 && upToDate == 3, fmt.Sprintf("spec %d, available %d, up to date %d", want, avail, upToDate), nil
	})
	if n, err := machines(); err != nil || n != 4 {
		t.Fatalf("Machines after scaling to 3 workers: %d (%v)", n, err)
	}
	t.Logf("scaled 1 -> 3 in %s", time.Since(begin).Round(time.Millisecond))

	// What the controllers made: the Cluster's Secrets (CA, kubeconfig)
	// are owned by the control plane, and only a garbage collector deletes
	// them.
	during := namespaceObjects(ctx, t, s, dyn, ns)
	var secrets []string
	for _, o := range during {
		if strings.HasPrefix(o, "Secret ") {
			secrets = append(secrets, o)
		}
	}
	if !slices.Contains(secrets, "Secret demo-kubeconfig") || !slices.Contains(secrets, "Secret demo-ca") {
		t.Fatalf("the controllers made no kubeconfig and CA Secrets: %v", secrets)
	}

	begin = time.Now()
	bg := metav1.DeletePropagationBackground
	if err := clusters.Delete(ctx, "demo", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "Cluster gone", func() (bool, string, error) {
		got, err := clusters.Get(ctx, "demo", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		st, msg := condition(got, "Deleting")
		return false, st + ": " + msg, nil
	})
	waitFor(ctx, t, "nothing left of the Cluster", func() (bool, string, error) {
		left := slices.DeleteFunc(namespaceObjects(ctx, t, s, dyn, ns), func(o string) bool { return slices.Contains(before, o) })
		return len(left) == 0, fmt.Sprint(left), nil
	})
	t.Logf("deleted in %s, with everything it owned", time.Since(begin).Round(time.Millisecond))

	// The namespace controller empties and removes a deleted namespace.
	if err := dyn.Resource(namespaceGVR).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "namespace gone", func() (bool, string, error) {
		_, err := dyn.Resource(namespaceGVR).Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
}

// namespaceObjects is s.NamespaceObjects, failing t on an error.
func namespaceObjects(ctx context.Context, t *testing.T, s *apitest.Server, _ dynamic.Interface, ns string) []string {
	t.Helper()
	out, err := s.NamespaceObjects(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The webhooks judge what the schema cannot: a topology variable of the
// wrong type is refused by the Cluster webhook, against magnum-v1's
// variables, and the same Cluster with the right type is accepted. The
// class is magnum-v1's in-memory variant (the same variables): its
// OpenStack kinds (CAPO v1beta2) are not served by the released CAPO's
// CRDs the server runs.
func TestWebhooksRefuseAVariableOfTheWrongType(t *testing.T) {
	s, dyn := needControllers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bundles, err := apitest.ReleasedClasses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.NewNamespace(ctx, "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	variant, err := apitest.InMemoryClass(bundles["v1"])
	if err != nil {
		t.Fatal(err)
	}
	class := applyClass(ctx, t, s, dyn, ns, variant)
	clusters := dyn.Resource(clusterGVR).Namespace(ns)

	bad := topologyCluster(ns, "wrong-type", class, 1)
	vars, _, _ := unstructured.NestedSlice(bad.Object, "spec", "topology", "variables")
	vars = append(vars, map[string]any{"name": "apiServerFloatingIP", "value": "yes"})
	if err := unstructured.SetNestedSlice(bad.Object, vars, "spec", "topology", "variables"); err != nil {
		t.Fatal(err)
	}
	_, err = clusters.Create(ctx, bad, metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("create with apiServerFloatingIP \"yes\": err = %v, want Invalid from the webhook", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`admission webhook "default.cluster.cluster.x-k8s.io" denied the request`,
		`spec.topology.variables[apiServerFloatingIP].value: Invalid value: "\"yes\"": must be of type boolean: "string"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q\nlacks %q", msg, want)
		}
	}

	vars[len(vars)-1] = map[string]any{"name": "apiServerFloatingIP", "value": true}
	if err := unstructured.SetNestedSlice(bad.Object, vars, "spec", "topology", "variables"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the same Cluster with apiServerFloatingIP true: %v", err)
	}
}
