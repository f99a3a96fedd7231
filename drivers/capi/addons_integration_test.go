package capi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

// extraAddOnsDir writes an extra_addons_dir with one manifests.yaml add-on
// per name.
func extraAddOnsDir(t *testing.T, addOns map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range addOns {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "manifests.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const helloAddOn = `apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 1
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers:
      - name: hello
        image: registry.k8s.io/pause:3.10
`

func (e *env) crs(t *testing.T, r ref) *addonsv1.ClusterResourceSet {
	t.Helper()
	u, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(context.Background(), crsName(r.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crs := &addonsv1.ClusterResourceSet{}
	if err := fromUnstructured(u.Object, crs); err != nil {
		t.Fatal(err)
	}
	return crs
}

// TestAddOnsDeliveredByClusterResourceSet (test API server; the test plays
// Cluster API): the create writes the add-ons' Secrets and one
// ClusterResourceSet for the Cluster, owned by it; the cluster stays in
// CREATE_IN_PROGRESS, naming the add-ons, until the set's binding says
// they are applied; a credential rotation renders a new cloud-config and
// drops the old one.
func TestAddOnsDeliveredByClusterResourceSet(t *testing.T) {
	opts := Options{CreateTimeout: time.Hour, AddOns: AddOnOptions{Enabled: true, CacheDir: t.TempDir(), Settings: addons.Settings{
		Builtin: []string{}, ExtraDir: extraAddOnsDir(t, map[string]string{"hello": helloAddOn})}}}
	e := newEnvWith(t, opts, nil)
	ctx := context.Background()
	c := e.newCluster("addons", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	cl := e.getCluster(t, r)
	crs := e.crs(t, r)
	if crs.Spec.Strategy != "Reconcile" || crs.Spec.ClusterSelector.MatchLabels[LabelClusterUUID] != deref(c.UUID) ||
		cl.Labels[LabelClusterUUID] != deref(c.UUID) {
		t.Errorf("ClusterResourceSet %+v does not select the Cluster (labels %v)", crs.Spec, cl.Labels)
	}
	if len(crs.OwnerReferences) != 1 || crs.OwnerReferences[0].UID != cl.UID {
		t.Errorf("ClusterResourceSet owners %+v", crs.OwnerReferences)
	}
	var names []string
	for _, res := range crs.Spec.Resources {
		names = append(names, res.Name)
		s := e.secret(t, r.Namespace, res.Name)
		if s.Type != addonsv1.ClusterResourceSetSecretType || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != cl.UID {
			t.Errorf("Secret %s: type %s, owners %+v", s.Name, s.Type, s.OwnerReferences)
		}
	}
	if len(names) != 2 || !strings.HasPrefix(names[0], r.Name+"-addon-cloud-config-") || !strings.HasPrefix(names[1], r.Name+"-addon-hello-") {
		t.Fatalf("resources %v, want the cloud-config then hello", names)
	}
	cloudConfig := string(e.secret(t, r.Namespace, names[0]).Data["resources.yaml"])
	if !strings.Contains(cloudConfig, "application-credential-id=appcred-1") || !strings.Contains(cloudConfig, "name: cloud-config") {
		t.Errorf("cloud-config resource:\n%s", cloudConfig)
	}

	// Cluster API reports the cluster up: the add-ons hold the create.
	p := &capi{t: t, e: e, r: r, c: c}
	p.upWithOneWorker(ctx)
	e.syncUntil(t, c, objects.CreateInProgress, "add-ons not applied yet: cloud-config, hello")

	// Cluster API applies the first resource, then the second.
	binding := &addonsv1.ClusterResourceSetBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: addonsv1.GroupVersion.String(), Kind: "ClusterResourceSetBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
		Spec: addonsv1.ClusterResourceSetBindingSpec{ClusterName: r.Name, Bindings: []addonsv1.ResourceSetBinding{{
			ClusterResourceSetName: crs.Name, Resources: []addonsv1.ResourceBinding{
				{ResourceRef: crs.Spec.Resources[0], Applied: ptr(true), Hash: "x", LastAppliedTime: metav1.Now()}}}}},
	}
	u, err := toUnstructured(binding)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(gvrCRSBinding).Namespace(r.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.syncUntil(t, c, objects.CreateInProgress, "add-ons not applied yet: hello")
	binding.Spec.Bindings[0].Resources = append(binding.Spec.Bindings[0].Resources,
		addonsv1.ResourceBinding{ResourceRef: crs.Spec.Resources[1], Applied: ptr(true), Hash: "y", LastAppliedTime: metav1.Now()})
	patch, _ := json.Marshal(map[string]any{"spec": binding.Spec})
	if _, err := e.dyn.Resource(gvrCRSBinding).Namespace(r.Namespace).Patch(ctx, r.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The binding alone is not enough: the set's condition is still to come.
	e.syncUntil(t, c, objects.CreateInProgress, "waiting for Cluster API to apply the add-ons")
	setCRSApplied(t, e, r)
	e.syncUntil(t, c, objects.CreateComplete, "")

	// A rotated credential is a new cloud-config resource; the old one goes.
	if err := e.d.RotateCredential(ctx, e.request(c)); err != nil {
		t.Fatal(err)
	}
	rotated := e.crs(t, r)
	if len(rotated.Spec.Resources) != 2 || rotated.Spec.Resources[0].Name == names[0] || rotated.Spec.Resources[1].Name != names[1] {
		t.Fatalf("resources after the rotation %+v, before %v", rotated.Spec.Resources, names)
	}
	if !strings.Contains(string(e.secret(t, r.Namespace, rotated.Spec.Resources[0].Name).Data["resources.yaml"]), "application-credential-id=appcred-2") {
		t.Errorf("the new cloud-config does not hold the new credential")
	}
	left := e.secretNames(t, r.Namespace, LabelComponent+"="+componentAddOn)
	if slices.Contains(left, names[0]) || len(left) != 2 {
		t.Errorf("add-on Secrets after the rotation: %v", left)
	}
	// Until Cluster API applies it, the gate holds.
	eventually(t, "the rotated set cached", func() (bool, string) {
		reason, pending := e.d.addOnsPending(r)
		return pending && strings.Contains(reason, "cloud-config"), reason
	})
}

// setCRSApplied writes ResourcesApplied=True on the set, as Cluster API's
// controller does.
func setCRSApplied(t *testing.T, e *env, r ref) {
	t.Helper()
	ctx := context.Background()
	u, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "ResourcesApplied", "status": "True", "reason": "Applied",
		"message": "", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}, "status", "conditions")
	if _, err := e.dyn.Resource(gvrCRS).Namespace(r.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// upWithOneWorker writes what Cluster API reports for a cluster that is up
// with one control-plane machine and one worker (v1.33.4, endpoint
// 203.0.113.7:6443), as the add-on tests need it before the add-ons apply.
func (p *capi) upWithOneWorker(ctx context.Context) {
	t, e, r := p.t, p.e, p.r
	p.controlPlane(1, "v1.33.4")
	p.machine(r.Name+"-cp-0", "", "srv-cp-0", "10.0.0.10", true)
	p.machineDeployment("default-worker", 1)
	p.mdStatus("default-worker", 1, 1, 1, settledMDConds()...)
	p.machine(r.Name+"-default-worker-0", "default-worker", "srv-w-0", "10.0.1.10", false)
	if _, err := e.dyn.Resource(gvrCluster).Namespace(r.Namespace).Patch(ctx, r.Name, "application/merge-patch+json",
		[]byte(`{"spec":{"controlPlaneEndpoint":{"host":"203.0.113.7","port":6443}}}`), metav1.PatchOptions{FieldManager: "capi-controller"}); err != nil {
		t.Fatal(err)
	}
	p.kubeconfigSecret("https://203.0.113.7:6443")
	p.clusterStatus(func(st *clusterv1.ClusterStatus) {
		st.Conditions = healthyConds()
		st.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4", Replicas: 1}}}
	})
}

// TestAddOnChartHooksReported (test API server; the test plays Cluster
// API): an operator's chart with hooks is delivered with its pre-install
// and post-install hooks in resource Secrets of their own, before and
// after its other objects; the hooks a ClusterResourceSet has no moment
// for are named in an annotation of the set and, once the cluster is up,
// in its status_reason.
func TestAddOnChartHooksReported(t *testing.T) {
	dir := addonstest.HookedExtraDir(t)
	opts := Options{CreateTimeout: time.Hour, AddOns: AddOnOptions{Enabled: true, CacheDir: t.TempDir(), Settings: addons.Settings{
		Builtin: []string{}, ExtraDir: dir}}}
	e := newEnvWith(t, opts, nil)
	ctx := context.Background()
	c := e.newCluster("hooks", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	crs := e.crs(t, r)
	// Only the upgrade hook is a warning (its moment comes with
	// cluster_upgrade); every hook left out is logged.
	const want = "add-on hooked (chart hooked 1.0.0): Helm upgrade hooks not run: Job/upgrade (pre-upgrade)"
	if got := crs.Annotations[annotationAddOnWarnings]; got != want {
		t.Errorf("ClusterResourceSet warnings %q, want %q", got, want)
	}
	const leftOut = "add-on hooked (chart hooked 1.0.0): Helm hooks not run: Job/upgrade (pre-upgrade), Job/cleanup (pre-delete,post-delete), " +
		"Job/rollback (post-rollback), Job/legacy (crd-install), Pod/hooked-test (test)"
	if got := e.logs.lines("chart hooks left out", strconv.Quote(leftOut)); len(got) == 0 {
		t.Errorf("no log line naming every hook left out (%q)", leftOut)
	}
	// cloud-config, then the chart: its release namespace (which the
	// chart does not render) and CRD, three pre-install weights, the
	// objects, two post-install weights.
	var parts []string
	for _, res := range crs.Spec.Resources[1:] {
		var kinds []string
		for _, doc := range strings.Split(string(e.secret(t, r.Namespace, res.Name).Data["resources.yaml"]), "---\n") {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			md, _ := o["metadata"].(map[string]any)
			kinds = append(kinds, o["kind"].(string)+"/"+md["name"].(string))
		}
		parts = append(parts, strings.Join(kinds, " "))
	}
	wantParts := []string{"Namespace/site CustomResourceDefinition/widgets.example.com", "ServiceAccount/pre-sa", "Job/both", "Job/pre-a Job/pre-b",
		"ConfigMap/cfg Deployment/app", "ConfigMap/post-cm", "Job/post"}
	if !slices.Equal(parts, wantParts) {
		t.Errorf("resources of the chart\n%q\nwant\n%q", parts, wantParts)
	}
	p := &capi{t: t, e: e, r: r, c: c}
	p.upWithOneWorker(ctx)
	binding := &addonsv1.ClusterResourceSetBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: addonsv1.GroupVersion.String(), Kind: "ClusterResourceSetBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
		Spec:       addonsv1.ClusterResourceSetBindingSpec{ClusterName: r.Name, Bindings: []addonsv1.ResourceSetBinding{{ClusterResourceSetName: crs.Name}}},
	}
	for _, res := range crs.Spec.Resources {
		binding.Spec.Bindings[0].Resources = append(binding.Spec.Bindings[0].Resources,
			addonsv1.ResourceBinding{ResourceRef: res, Applied: ptr(true), Hash: "h", LastAppliedTime: metav1.Now()})
	}
	u, err := toUnstructured(binding)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(gvrCRSBinding).Namespace(r.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setCRSApplied(t, e, r)
	e.syncUntil(t, c, objects.CreateComplete, "Warning: "+want)
}
