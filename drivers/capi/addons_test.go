package capi

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/addons"
)

// addOnsDriver is a driver with add-ons whose cache holds crs and binding
// (either nil), never started.
func addOnsDriver(t *testing.T, crs *addonsv1.ClusterResourceSet, binding *addonsv1.ClusterResourceSetBinding) *Driver {
	t.Helper()
	c, err := newStateCache(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), 0, nil, true, infraConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if crs != nil {
		if err := c.crs.GetIndexer().Add(crs); err != nil {
			t.Fatal(err)
		}
	}
	if binding != nil {
		if err := c.crsBindings.GetIndexer().Add(binding); err != nil {
			t.Fatal(err)
		}
	}
	d := &Driver{opts: Options{AddOns: AddOnOptions{Enabled: true}}, now: time.Now}
	d.cache.Store(c)
	return d
}

func testCRS(generation, observed int64, cond *metav1.Condition, resources ...string) *addonsv1.ClusterResourceSet {
	crs := &addonsv1.ClusterResourceSet{ObjectMeta: metav1.ObjectMeta{Name: "k8s-x-addons", Namespace: "magnum-p", Generation: generation,
		Annotations: map[string]string{annotationAddOnResources: `{"k8s-x-addon-cloud-config-aa":"cloud-config","k8s-x-addon-calico-bb":"calico","k8s-x-addon-openstack-cloud-controller-manager-cc":"openstack-cloud-controller-manager","k8s-x-addon-openstack-cloud-controller-manager-dd":"openstack-cloud-controller-manager"}`}}}
	for _, r := range resources {
		crs.Spec.Resources = append(crs.Spec.Resources, addonsv1.ResourceRef{Kind: "Secret", Name: r})
	}
	crs.Status.ObservedGeneration = observed
	if cond != nil {
		crs.Status.Conditions = []metav1.Condition{*cond}
	}
	return crs
}

func testBinding(applied map[string]bool) *addonsv1.ClusterResourceSetBinding {
	b := &addonsv1.ClusterResourceSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "k8s-x", Namespace: "magnum-p"}}
	rs := addonsv1.ResourceSetBinding{ClusterResourceSetName: "k8s-x-addons"}
	for name, ok := range applied {
		rs.Resources = append(rs.Resources, addonsv1.ResourceBinding{ResourceRef: addonsv1.ResourceRef{Kind: "Secret", Name: name}, Applied: ptr(ok)})
	}
	b.Spec.Bindings = []addonsv1.ResourceSetBinding{rs}
	return b
}

// TestAddOnsPendingUntilEveryResourceIsApplied: the gate reads the
// ClusterResourceSet's ResourcesApplied condition and, per resource, its
// binding, and names the add-ons not applied.
func TestAddOnsPendingUntilEveryResourceIsApplied(t *testing.T) {
	applied := &metav1.Condition{Type: "ResourcesApplied", Status: metav1.ConditionTrue, Reason: "Applied"}
	notApplied := &metav1.Condition{Type: "ResourcesApplied", Status: metav1.ConditionFalse, Reason: "NotApplied",
		Message: "Failed to apply ClusterResourceSet resources to Cluster"}
	all := []string{"k8s-x-addon-cloud-config-aa", "k8s-x-addon-calico-bb", "k8s-x-addon-openstack-cloud-controller-manager-cc"}
	for _, tc := range []struct {
		name    string
		crs     *addonsv1.ClusterResourceSet
		binding *addonsv1.ClusterResourceSetBinding
		pending bool
		reason  []string
	}{
		{"no ClusterResourceSet yet", nil, nil, true, []string{"waiting for the add-ons' ClusterResourceSet k8s-x-addons"}},
		{"no binding yet", testCRS(1, 0, nil, all...), nil, true,
			[]string{"add-ons not applied yet: cloud-config, calico, openstack-cloud-controller-manager"}},
		{"one failed", testCRS(1, 1, notApplied, all...), testBinding(map[string]bool{all[0]: true, all[1]: false, all[2]: true}), true,
			[]string{"add-ons not applied yet: calico (NotApplied: Failed to apply"}},
		{"all applied", testCRS(1, 1, applied, all...), testBinding(map[string]bool{all[0]: true, all[1]: true, all[2]: true}), false, nil},
		{"a new rendering not seen yet", testCRS(2, 1, applied, all[0], all[1], "k8s-x-addon-openstack-cloud-controller-manager-dd"),
			testBinding(map[string]bool{all[0]: true, all[1]: true, all[2]: true}), true,
			[]string{"add-ons not applied yet: openstack-cloud-controller-manager"}},
		{"binding complete but generation not observed", testCRS(2, 1, applied, all...),
			testBinding(map[string]bool{all[0]: true, all[1]: true, all[2]: true}), true, []string{"waiting for Cluster API to apply the add-ons"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := addOnsDriver(t, tc.crs, tc.binding)
			reason, pending := d.addOnsPending(ref{"magnum-p", "k8s-x"})
			if pending != tc.pending {
				t.Fatalf("pending %v (%q), want %v", pending, reason, tc.pending)
			}
			for _, want := range tc.reason {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q lacks %q", reason, want)
				}
			}
		})
	}
	d := addOnsDriver(t, nil, nil)
	d.opts.AddOns.Enabled = false
	if reason, pending := d.addOnsPending(ref{"magnum-p", "k8s-x"}); pending {
		t.Errorf("add-ons disabled yet pending: %s", reason)
	}
}

// TestHoldForAddOns: a create or update that Cluster API reports ready
// stays in progress while the add-ons are pending, and a create fails at
// its deadline; other phases and operations, and an update of a cluster
// without a set yet, pass through.
func TestHoldForAddOns(t *testing.T) {
	applied := &metav1.Condition{Type: "ResourcesApplied", Status: metav1.ConditionFalse, Reason: "NotApplied"}
	d2 := addOnsDriver(t, testCRS(1, 1, applied, "k8s-x-addon-calico-bb"), nil)
	now2 := time.Now()
	if got := d2.holdForAddOns(objects.UpdateInProgress, ref{"magnum-p", "k8s-x"}, statusResult{Phase: drivers.PhaseReady}, now2, now2); got.Phase != drivers.PhaseInProgress || !strings.Contains(got.Reason, "calico") {
		t.Errorf("update with a set not applied: %+v", got)
	}
	d := addOnsDriver(t, nil, nil)
	r := ref{"magnum-p", "k8s-x"}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		current  string
		mapped   drivers.Phase
		deadline time.Time
		want     drivers.Phase
	}{
		{objects.CreateInProgress, drivers.PhaseReady, now.Add(time.Hour), drivers.PhaseInProgress},
		{objects.CreateInProgress, drivers.PhaseReady, now.Add(-time.Minute), drivers.PhaseFailed},
		{objects.UpdateInProgress, drivers.PhaseReady, now.Add(-time.Minute), drivers.PhaseReady}, // no set: written before add-ons
		{objects.CreateInProgress, drivers.PhaseFailed, now.Add(time.Hour), drivers.PhaseFailed},
		{objects.CreateInProgress, drivers.PhaseInProgress, now.Add(time.Hour), drivers.PhaseInProgress},
		{objects.DeleteInProgress, drivers.PhaseGone, now.Add(time.Hour), drivers.PhaseGone},
		{objects.CreateComplete, drivers.PhaseReady, now.Add(time.Hour), drivers.PhaseReady},
	} {
		got := d.holdForAddOns(tc.current, r, statusResult{Phase: tc.mapped}, now, tc.deadline)
		if got.Phase != tc.want {
			t.Errorf("%s, %s: %s (%s), want %s", tc.current, tc.mapped, got.Phase, got.Reason, tc.want)
		}
		if got.Phase != tc.mapped && !strings.Contains(got.Reason, "k8s-x-addons") {
			t.Errorf("%s, %s: reason %q does not name the add-ons", tc.current, tc.mapped, got.Reason)
		}
	}
}

func TestAddOnPartsSplitLargeAddOns(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	var objs []addons.Object
	for i := range 5 {
		objs = append(objs, addons.Object{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm" + string(rune('a'+i))}, "data": map[string]any{"v": big}})
	}
	parts, err := addOnParts(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	for _, p := range parts {
		if len(p) > maxAddOnSecret {
			t.Errorf("part of %d bytes", len(p))
		}
	}
	objs = append(objs, addons.Object{"kind": "ConfigMap", "metadata": map[string]any{"name": "huge"}, "data": map[string]any{"v": strings.Repeat("y", 1<<20)}})
	if _, err := addOnParts(objs); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Errorf("an object too large for a Secret: %v", err)
	}
}

func TestAddOnOptionsValidate(t *testing.T) {
	o := AddOnOptions{Enabled: true, Settings: addons.Settings{Builtin: []string{"cni", "dns"}, Repos: map[string]string{"flannel": "https://x"}}}
	err := o.validate()
	for _, want := range []string{"cache directory", `"dns"`, `"flannel"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
	if err := (AddOnOptions{}).validate(); err != nil {
		t.Errorf("disabled: %v", err)
	}
	// csi-driver-nfs, delivered with manila-csi, is an add-on name of
	// the per-add-on options (addon_chart_versions = csi-driver-nfs:4.12.1).
	o = AddOnOptions{Enabled: true, CacheDir: "/cache", Settings: addons.Settings{Builtin: []string{"manila-csi"},
		Versions: map[string]string{addons.NFSCSI: "4.12.1"}, Repos: map[string]string{addons.NFSCSI: "oci://mirror.example/charts"}}}
	if err := o.validate(); err != nil {
		t.Errorf("csi-driver-nfs options: %v", err)
	}
}
