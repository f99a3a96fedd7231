package capi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

// newAddOnsLifecycle is newLifecycle (lifecycle_realcapi_test.go) with
// add-on delivery on, with settings.
func newAddOnsLifecycle(ctx context.Context, t *testing.T, settings addons.Settings) *lifecycle {
	s, dyn := needRealCAPI(t)
	dir, mapper, log := inMemoryDriverSetup(t, s)
	l := &lifecycle{t: t, ctx: ctx, s: s, dyn: dyn, creds: &fakeCreds{}, classDir: dir}
	d, err := New(Options{NamespacePrefix: "addons", ClassDir: dir, CreateTimeout: 10 * time.Minute,
		AddOns: AddOnOptions{Enabled: true, CacheDir: t.TempDir(), Settings: settings}},
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

// liveCRS reads the cluster's ClusterResourceSet and its binding from the
// API server.
func (l *lifecycle) liveCRS(r ref) (*addonsv1.ClusterResourceSet, *addonsv1.ClusterResourceSetBinding) {
	var crs *addonsv1.ClusterResourceSet
	if u, err := l.dyn.Resource(gvrCRS).Namespace(r.Namespace).Get(l.ctx, crsName(r.Name), metav1.GetOptions{}); err == nil {
		crs = &addonsv1.ClusterResourceSet{}
		if err := fromUnstructured(u.Object, crs); err != nil {
			l.t.Fatal(err)
		}
	}
	var b *addonsv1.ClusterResourceSetBinding
	if u, err := l.dyn.Resource(gvrCRSBinding).Namespace(r.Namespace).Get(l.ctx, r.Name, metav1.GetOptions{}); err == nil {
		b = &addonsv1.ClusterResourceSetBinding{}
		if err := fromUnstructured(u.Object, b); err != nil {
			l.t.Fatal(err)
		}
	}
	return crs, b
}

func appliedResources(b *addonsv1.ClusterResourceSetBinding) map[string]bool {
	out := map[string]bool{}
	if b == nil {
		return out
	}
	for _, rs := range b.Spec.Bindings {
		for _, res := range rs.Resources {
			out[res.Name] = res.Applied != nil && *res.Applied
		}
	}
	return out
}

// TestRealCAPIAddOnsGateCreateAndNameWhatIsNotApplied, against the real
// Cluster API controllers on the in-memory provider: (a) the real
// ClusterResourceSet controller applies the cluster's add-ons to the
// simulated workload cluster (the cloud-config Secret, the real
// openstack-cloud-controller-manager chart of cloud-provider-openstack
// v1.34.1 fetched from a Helm repository, whose kinds that API server all
// serves, and a site add-on of a ConfigMap and a Deployment), and the
// create completes only once it reports them applied; (b) an add-on the
// workload cluster cannot take (a StorageClass: the simulated API server
// serves none) keeps the next update in progress with a reason naming it.
func TestRealCAPIAddOnsGateCreateAndNameWhatIsNotApplied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	extra := extraAddOnsDir(t, map[string]string{"hello": helloAddOn})
	repo := addonstest.NewRepo(t)
	repo.AddDir(t, filepath.Join(addonstest.ModuleDir(t, "k8s.io/cloud-provider-openstack@v1.34.1"), "charts/openstack-cloud-controller-manager"))
	l := newAddOnsLifecycle(ctx, t, addons.Settings{Builtin: []string{"cloud-provider"}, ExtraDir: extra,
		Repos: map[string]string{addons.CloudProvider: repo.Server.URL}, Versions: map[string]string{addons.CloudProvider: "2.34.0"}})

	c, tmpl, ngs := defaultMagnumCluster()
	c.UUID, c.ProjectID = ptr(randHex(4)+"-"+randHex(2)+"-"+randHex(2)+"-"+randHex(2)+"-"+randHex(6)), ptr(randHex(16))
	c.Status, c.CreatedAt = objects.CreateInProgress, ptr(time.Now())
	for _, ng := range ngs {
		ng.ClusterID, ng.Status, ng.CreatedAt = deref(c.UUID), objects.CreateInProgress, ptr(time.Now())
	}
	l.cluster, l.tmpl, l.ngs = c, tmpl, ngs
	res, err := l.drv.CreateCluster(ctx, drivers.CreateClusterRequest{ClusterRequest: l.request()})
	if err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	l.cluster.StackID = ptr(res.StackID)
	r := l.ref()
	crs, _ := l.liveCRS(r)
	if crs == nil || len(crs.Spec.Resources) != 3 || !strings.Contains(crs.Spec.Resources[1].Name, "-addon-openstack-cloud-controller-manager-") {
		t.Fatalf("ClusterResourceSet after the create: %+v", crs)
	}
	sawAddOnsReason := false
	l.await("create", objects.CreateInProgress, 4*time.Minute, func() string {
		if strings.Contains(deref(l.cluster.StatusReason), "add-ons") {
			sawAddOnsReason = true
		}
		return ""
	})
	if l.cluster.Status != objects.CreateComplete {
		t.Fatalf("create ended %s; %s", l.cluster.Status, l.state())
	}
	crs, binding := l.liveCRS(r)
	cond := meta.FindStatusCondition(crs.Status.Conditions, addonsv1.ClusterResourceSetResourcesAppliedCondition)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("CREATE_COMPLETE while the ClusterResourceSet reports %+v", cond)
	}
	applied := appliedResources(binding)
	for _, res := range crs.Spec.Resources {
		if !applied[res.Name] {
			t.Errorf("CREATE_COMPLETE while %s is not applied (binding %v)", res.Name, applied)
		}
	}
	t.Logf("create complete; the add-ons were the status reason on the way: %v", sawAddOnsReason)

	// (b) An add-on of a kind the workload cluster does not serve.
	bad := filepath.Join(extra, "needs-sc")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "manifests.yaml"), []byte("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: needs-sc\nprovisioner: cinder.csi.openstack.org\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := l.ng("default-worker")
	worker.Status, l.cluster.Status = objects.UpdateInProgress, objects.UpdateInProgress
	if _, err := l.drv.ResizeCluster(ctx, drivers.ResizeRequest{ClusterRequest: l.request(), NodeGroup: objects.Clone(worker),
		NodeCount: int(worker.NodeCount)}); err != nil {
		t.Fatalf("ResizeCluster: %v", err)
	}
	// Cluster API tries and fails; the update stays in progress naming it.
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	eventuallyCtx(waitCtx, t, "a failed needs-sc binding and the reason naming it", func() (bool, string) {
		l.sync()
		if l.cluster.Status != objects.UpdateInProgress {
			t.Fatalf("the update left UPDATE_IN_PROGRESS with an add-on not applied: %s", l.state())
		}
		_, b := l.liveCRS(r)
		failed := false
		for name, ok := range appliedResources(b) {
			if strings.Contains(name, "-addon-needs-sc-") && !ok {
				failed = true
			}
		}
		return failed && strings.Contains(deref(l.cluster.StatusReason), "add-ons not applied yet: needs-sc"), l.state()
	})
	t.Logf("update held: %s", deref(l.cluster.StatusReason))
}
