package capi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// The kinds watched from the start are those the class bundles'
// infrastructure templates instantiate: CAPO's for the released bundles
// (at the newest bundle's version, v1beta1: magnum-v1 to v4 name v1beta2),
// the in-memory provider's for their in-memory variants.
func TestInfraKindsOfTheClassBundles(t *testing.T) {
	released, err := loadClasses("")
	if err != nil {
		t.Fatal(err)
	}
	infra := "infrastructure.cluster.x-k8s.io"
	want := []infraKind{
		{GroupKind: schema.GroupKind{Group: infra, Kind: "OpenStackCluster"}, Version: "v1beta1", Role: infraClusterRole},
		{GroupKind: schema.GroupKind{Group: infra, Kind: "OpenStackMachine"}, Version: "v1beta1", Role: infraMachineRole},
	}
	if got, problems := infraKindsOf(released); !slices.Equal(got, want) || len(problems) != 0 {
		t.Errorf("released bundles' kinds = %+v (problems %v), want %+v", got, problems, want)
	}
	delete(released, LatestClassVersion)
	want[0].Version, want[1].Version = "v1beta2", "v1beta2"
	if got, problems := infraKindsOf(released); !slices.Equal(got, want) || len(problems) != 0 {
		t.Errorf("magnum-v1 to v4's kinds = %+v (problems %v), want %+v", got, problems, want)
	}
	dev, err := apitest.InMemoryClass(classBundleYAML(t, LatestClassVersion))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseClassBundle(LatestClassVersion, dev)
	if err != nil {
		t.Fatal(err)
	}
	want = []infraKind{
		{GroupKind: schema.GroupKind{Group: infra, Kind: "DevCluster"}, Version: "v1beta2", Role: infraClusterRole},
		{GroupKind: schema.GroupKind{Group: infra, Kind: "DevMachine"}, Version: "v1beta2", Role: infraMachineRole},
	}
	if got, problems := infraKindsOf(classSet{LatestClassVersion: objs}); !slices.Equal(got, want) || len(problems) != 0 {
		t.Errorf("in-memory variant's kinds = %+v (problems %v), want %+v", got, problems, want)
	}
}

// A class's template reference that cannot be read is left out and
// reported, naming the class and the reference.
func TestInfraKindsOfReportsUnreadableTemplateRefs(t *testing.T) {
	class := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "ClusterClass",
		"metadata": map[string]any{"name": "bad"},
		"spec": map[string]any{
			"infrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": "a/b/c", "kind": "OpenStackClusterTemplate"}},
			"controlPlane": map[string]any{"machineInfrastructure": map[string]any{"templateRef": map[string]any{
				"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "OpenStackMachine"}}},
			"workers": map[string]any{"machineDeployments": []any{map[string]any{"infrastructure": map[string]any{"templateRef": map[string]any{
				"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "OpenStackMachineTemplate"}}}}},
		}}}
	got, problems := infraKindsOf(classSet{"v9": {class}})
	want := []infraKind{{GroupKind: schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "OpenStackMachine"}, Version: "v1beta2", Role: infraMachineRole}}
	if !slices.Equal(got, want) {
		t.Errorf("kinds = %+v, want %+v", got, want)
	}
	if len(problems) != 2 || !strings.Contains(problems[0].Error(), "ClusterClass bad: infrastructure template a/b/c OpenStackClusterTemplate") ||
		!strings.Contains(problems[1].Error(), `kind "OpenStackMachine" does not name a template`) {
		t.Errorf("problems = %v", problems)
	}
}

// A kind that cannot be resolved is logged at its first failure and when
// its error changes, not at every retry; once watched, that is logged too.
func TestInfraKindFailureLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	resolveErr := errors.New("capi: the management cluster serves no NoSuchMachine.infrastructure.cluster.x-k8s.io: no matches")
	x := newInfraInformers(func(infraKind) (schema.GroupVersionResource, error) {
		if resolveErr != nil {
			return schema.GroupVersionResource{}, resolveErr
		}
		return schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "nosuchmachines"}, nil
	}, func(schema.GroupVersionResource) (toolscache.SharedIndexInformer, error) {
		return toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0, toolscache.Indexers{}), nil
	}, nil, log)
	now := time.Unix(1000, 0)
	x.now = func() time.Time { return now }
	k := infraKind{GroupKind: schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "NoSuchMachine"}, Role: infraMachineRole}
	warns := func() int { return strings.Count(buf.String(), "level=WARN") }

	x.add(k)
	if warns() != 1 || !strings.Contains(buf.String(), "kind=NoSuchMachine.infrastructure.cluster.x-k8s.io") ||
		!strings.Contains(buf.String(), "no matches") {
		t.Fatalf("first failure: log %q, want one warning naming the kind and the error", buf.String())
	}
	now = now.Add(infraRetry + time.Second)
	x.add(k)
	if warns() != 1 {
		t.Errorf("the same failure again: log %q, want it logged once", buf.String())
	}
	resolveErr = errors.New("capi: discovery: connection refused")
	now = now.Add(infraRetry + time.Second)
	x.add(k)
	if warns() != 2 || !strings.Contains(buf.String(), "connection refused") {
		t.Errorf("a different failure: log %q, want it logged", buf.String())
	}
	resolveErr = nil
	now = now.Add(infraRetry + time.Second)
	x.add(k)
	if len(x.informers()) != 1 || !strings.Contains(buf.String(), "level=INFO msg=\"infrastructure kind watched after failing\"") {
		t.Errorf("resolved: %d informers, log %q", len(x.informers()), buf.String())
	}
}

// An infrastructure kind no class bundle names is watched once a Cluster
// or a Machine references it, resolved through the RESTMapper; its
// objects' problems then reach the status reason, named by their kind.
func TestInfraKindsFollowTheInfrastructureRefs(t *testing.T) {
	gvCAPI := schema.GroupVersion{Group: "cluster.x-k8s.io", Version: "v1beta2"}
	gvInfra := schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gvInfra})
	for _, k := range []string{"DevCluster", "DevMachine"} {
		mapper.Add(gvInfra.WithKind(k), meta.RESTScopeNamespace)
	}
	listKinds := map[schema.GroupVersionResource]string{
		gvrCluster: "ClusterList", gvrMD: "MachineDeploymentList", gvrMachine: "MachineList", gvrKCP: "KubeadmControlPlaneList",
		gvInfra.WithResource("devclusters"): "DevClusterList", gvInfra.WithResource("devmachines"): "DevMachineList",
	}
	labels := map[string]any{LabelClusterUUID: "u-1", "cluster.x-k8s.io/cluster-name": "c"}
	obj := func(gv schema.GroupVersion, kind, name string, extra map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": gv.String(), "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "ns", "labels": labels}}
		for k, v := range extra {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	ref := func(kind, name string) map[string]any {
		return map[string]any{"infrastructureRef": map[string]any{"apiGroup": gvInfra.Group, "kind": kind, "name": name}}
	}
	bullets := "* VMProvisioned: Please check controller logs for errors\n* NodeProvisioned: Waiting for VMProvisioned"
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds,
		obj(gvCAPI, "Cluster", "c", map[string]any{"spec": ref("DevCluster", "c-x")}),
		obj(gvCAPI, "Machine", "m-1", map[string]any{"spec": map[string]any{"clusterName": "c", "infrastructureRef": ref("DevMachine", "m-1")["infrastructureRef"]}}),
		obj(gvInfra, "DevCluster", "c-x", map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}}}}),
		obj(gvInfra, "DevMachine", "m-1", map[string]any{"spec": map[string]any{"backend": map[string]any{}}, "status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "NotReady", "message": bullets}}}}),
	)
	// No bundle names these kinds (no seeds): the references alone bring
	// them in.
	c, err := newStateCache(dyn, 0, func(err error) { t.Logf("list or watch: %v", err) }, false, infraConfig{resolve: infraResolver(mapper)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.start(ctx, cancel)
	defer c.stop()
	if err := c.waitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	var obs observation
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if obs = c.observe("ns", "c"); obs.InfraCluster != nil && len(obs.InfraMachines) == 1 {
			break
		}
		if time.Now().After(deadline) {
			c.infra.mu.Lock()
			t.Fatalf("the DevCluster and DevMachine the refs name are not in the cache: %+v; watched %+v, failed %v",
				obs, c.infra.watched, c.infra.failed)
		}
	}
	if obs.InfraCluster.GetKind() != "DevCluster" || obs.InfraCluster.GetName() != "c-x" || obs.InfraMachines[0].GetName() != "m-1" {
		t.Errorf("infrastructure cluster %s %s, machine %s", obs.InfraCluster.GetKind(), obs.InfraCluster.GetName(), obs.InfraMachines[0].GetName())
	}
	msg, terminal := worstInfraMessage(obs)
	want := "DevMachine m-1: Ready False (NotReady): VMProvisioned: Please check controller logs for errors; NodeProvisioned: Waiting for VMProvisioned"
	if msg != want || terminal {
		t.Errorf("infrastructure message = %q (terminal %v), want %q", msg, terminal, want)
	}

	// A kind the management cluster does not serve is not watched, and
	// is tried again only after infraRetry.
	unknown := infraKind{GroupKind: schema.GroupKind{Group: gvInfra.Group, Kind: "NoSuchMachine"}, Role: infraMachineRole}
	c.infra.want(unknown)
	testkit.Eventually(t, 10*time.Second, func() bool {
		c.infra.mu.Lock()
		defer c.infra.mu.Unlock()
		_, failed := c.infra.failed[unknown.GroupKind]
		return failed
	}, "an unserved kind is not recorded as failed")
	if n := len(c.infra.informers()); n != 2 {
		t.Errorf("%d infrastructure informers, want the 2 served kinds'", n)
	}
	for _, i := range c.infra.informers() {
		if !strings.Contains(i.GetStore().ListKeys()[0], "ns/") {
			t.Errorf("keys %v", i.GetStore().ListKeys())
		}
	}
}

// A kind is watched at the version a class bundle names when the
// management cluster serves it, else at a version it does serve: CAPO
// v0.14 serves OpenStackMachine at v1beta1 only, which is what the driver
// must watch whatever the older bundles name; CAPO's main serves both.
func TestInfraResolverFallsBackToAServedVersion(t *testing.T) {
	infra := "infrastructure.cluster.x-k8s.io"
	v1beta1, v1beta2 := schema.GroupVersion{Group: infra, Version: "v1beta1"}, schema.GroupVersion{Group: infra, Version: "v1beta2"}
	released := meta.NewDefaultRESTMapper([]schema.GroupVersion{v1beta1})
	released.Add(v1beta1.WithKind("OpenStackMachine"), meta.RESTScopeNamespace)
	both := meta.NewDefaultRESTMapper([]schema.GroupVersion{v1beta2, v1beta1})
	both.Add(v1beta1.WithKind("OpenStackMachine"), meta.RESTScopeNamespace)
	both.Add(v1beta2.WithKind("OpenStackMachine"), meta.RESTScopeNamespace)
	gk := schema.GroupKind{Group: infra, Kind: "OpenStackMachine"}
	for _, tc := range []struct {
		name    string
		mapper  meta.RESTMapper
		version string
		want    schema.GroupVersionResource
	}{
		{"v1beta2 named, v1beta1 served", released, "v1beta2", v1beta1.WithResource("openstackmachines")},
		{"v1beta1 named and served", released, "v1beta1", v1beta1.WithResource("openstackmachines")},
		{"no version named", released, "", v1beta1.WithResource("openstackmachines")},
		{"v1beta1 named, both served", both, "v1beta1", v1beta1.WithResource("openstackmachines")},
		{"v1beta2 named, both served", both, "v1beta2", v1beta2.WithResource("openstackmachines")},
		{"no discovery", nil, "v1beta1", v1beta1.WithResource("openstackmachines")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := infraResolver(tc.mapper)(infraKind{GroupKind: gk, Version: tc.version, Role: infraMachineRole})
			if err != nil || got != tc.want {
				t.Errorf("resolved to %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	if _, err := infraResolver(released)(infraKind{GroupKind: schema.GroupKind{Group: infra, Kind: "NoSuchMachine"}, Version: "v1beta2"}); !meta.IsNoMatchError(err) {
		t.Errorf("a kind served at no version: %v, want no match", err)
	}
}
