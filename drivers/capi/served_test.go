package capi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// Every kind a ClusterClass names (its template references and its
// patches' selectors) is one of its bundle's objects' kinds at the same
// version: a selector at another version selects nothing, and Cluster API
// leaves the patch out without a word. Each bundle names CAPO's kinds at
// one version only (magnum-v5: v1beta1; the older ones: v1beta2).
func TestClassBundlesNameTheirOwnKindsOnly(t *testing.T) {
	for _, v := range ClassVersions() {
		objs, err := classBundle(v)
		if err != nil {
			t.Fatal(err)
		}
		own := map[schema.GroupVersionKind]bool{}
		for _, o := range objs {
			own[o.GroupVersionKind()] = true
		}
		infraVersions := map[string]bool{}
		for _, gvk := range bundleKinds(objs) {
			if !own[gvk] {
				t.Errorf("%s names %s, which is not one of its objects' kinds", className(v), gvk)
			}
			if gvk.Group == "infrastructure.cluster.x-k8s.io" {
				infraVersions[gvk.Version] = true
			}
		}
		want := "v1beta2"
		if v >= "v5" {
			want = "v1beta1"
		}
		if len(infraVersions) != 1 || !infraVersions[want] {
			t.Errorf("%s names CAPO's kinds at %v, want %s only", className(v), infraVersions, want)
		}
	}
}

// CAPO v0.14's template resources (v1beta1, its only version).
var (
	gvrOSClusterTemplate = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackclustertemplates"}
	gvrOSMachineTemplate = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackmachinetemplates"}
)

// capoV014Mapper is the RESTMapper of a management cluster with Cluster API
// (v1beta2) and CAPO v0.14 (v1beta1 only).
func capoV014Mapper() meta.RESTMapper {
	gvs := []schema.GroupVersion{{Group: "cluster.x-k8s.io", Version: "v1beta2"}, {Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2"},
		{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2"}, {Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1"}}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, k := range []struct{ gv, kind string }{{"cluster.x-k8s.io", "ClusterClass"}, {"cluster.x-k8s.io", "Cluster"},
		{"controlplane.cluster.x-k8s.io", "KubeadmControlPlaneTemplate"}, {"bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate"},
		{"infrastructure.cluster.x-k8s.io", "OpenStackClusterTemplate"}, {"infrastructure.cluster.x-k8s.io", "OpenStackMachineTemplate"}} {
		for _, gv := range gvs {
			if gv.Group == k.gv {
				m.Add(gv.WithKind(k.kind), meta.RESTScopeNamespace)
			}
		}
	}
	return m
}

// On CAPO v0.14 (v1beta1 only) magnum-v1 to v4 are refused, naming what
// is missing and magnum-v5, which is served; magnum-v5 is not. Without
// OpenStack kinds at all no class is served, and the refusal says so.
// Without a RESTMapper the driver cannot tell, and does not refuse.
func TestClassNotServedNamesTheMissingKindsAndTheClassToUse(t *testing.T) {
	d := &Driver{deps: Deps{Mapper: capoV014Mapper()}}
	for _, v := range ClassVersions() {
		err := d.classNotServed("upgrade_cluster", v)
		if v == LatestClassVersion {
			if err != nil {
				t.Errorf("%s: %v", v, err)
			}
			continue
		}
		if !errors.Is(err, exception.ClassNotSupported.New(nil)) {
			t.Fatalf("%s: err = %v, want NotSupported", v, err)
		}
		for _, want := range []string{"ClusterClass magnum-" + v + " cannot be applied",
			"OpenStackClusterTemplate infrastructure.cluster.x-k8s.io/v1beta2 (served at v1beta1)",
			"OpenStackMachineTemplate infrastructure.cluster.x-k8s.io/v1beta2 (served at v1beta1)",
			"Use ClusterClass magnum-v5", "cluster_class_version = v5", "cluster upgrade"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", v, err, want)
			}
		}
		if strings.Contains(err.Error(), "KubeadmControlPlaneTemplate") || strings.Contains(err.Error(), "ClusterClass cluster.x-k8s.io") {
			t.Errorf("%s: %q names a served kind", v, err)
		}
	}

	noCAPO := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "cluster.x-k8s.io", Version: "v1beta2"}})
	noCAPO.Add(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"}, meta.RESTScopeNamespace)
	d = &Driver{deps: Deps{Mapper: noCAPO}}
	err := d.classNotServed("create_cluster", LatestClassVersion)
	if !errors.Is(err, exception.ClassNotSupported.New(nil)) || !strings.Contains(err.Error(), "OpenStackMachineTemplate infrastructure.cluster.x-k8s.io/v1beta1.") ||
		!strings.Contains(err.Error(), "Install provider versions that serve them") || strings.Contains(err.Error(), "served at") {
		t.Errorf("no CAPO: err = %v", err)
	}

	if err := (&Driver{}).classNotServed("create_cluster", "v1"); err != nil {
		t.Errorf("without a RESTMapper: %v", err)
	}
}

// On the test API server, which serves the CRDs of the released CAPO
// (v0.14.2: infrastructure.cluster.x-k8s.io/v1beta1 only), a driver whose
// class is magnum-v4 refuses a create before any write (no namespace, no
// Secret, no application credential) and an upgrade without touching the
// Cluster (NotSupported: the conductor leaves the status as it was), naming
// the kinds missing and magnum-v5; the default class, magnum-v5, is
// applied and its templates accepted by CAPO's schemas.
func TestClassNotServedIsRefusedBeforeAnyWrite(t *testing.T) {
	needServer(t)
	mapper, err := server.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	withMapper := func(_ *env, d *Deps) { d.Mapper = mapper }
	e := newEnvDeps(t, Options{CreateTimeout: time.Hour, ClusterClassVersion: "v4"}, nil, withMapper)
	c := e.newCluster("old-class", map[string]string{"kube_tag": "v1.33.4"}, &objects.NodeGroup{Name: "default-worker", NodeCount: 1})
	err = e.create(context.Background(), c, 60)
	if !errors.Is(err, exception.ClassNotSupported.New(nil)) ||
		!strings.Contains(err.Error(), "OpenStackClusterTemplate infrastructure.cluster.x-k8s.io/v1beta2 (served at v1beta1)") ||
		!strings.Contains(err.Error(), "Use ClusterClass magnum-v5") {
		t.Fatalf("create on magnum-v4: err = %v", err)
	}
	if c.StackID != nil {
		t.Errorf("stack_id set by a refused create: %s", *c.StackID)
	}
	if ns := e.namespace(t, "magnum-"+e.project); ns != nil {
		t.Errorf("a refused create wrote: namespace %s exists", ns.Name)
	}
	if got := e.secretNames(t, "", LabelClusterUUID+"="+*c.UUID); len(got) != 0 {
		t.Errorf("a refused create wrote Secrets %v", got)
	}
	if e.creds.n != 0 {
		t.Errorf("a refused create issued %d application credentials", e.creds.n)
	}
	if got := e.logs.lines("level=WARN", "the configured ClusterClass cannot be applied", "class=magnum-v4",
		"OpenStackClusterTemplate infrastructure.cluster.x-k8s.io/v1beta2 (served at v1beta1)"); len(got) != 1 {
		t.Errorf("the driver's start did not warn of its class once: %s", e.logs.String())
	}

	// The newest class is served: the cluster is created on it.
	latest := startDriver(t, Options{CreateTimeout: time.Hour}, e.d.deps, e.d.log)
	v4 := e.d
	e.d = latest
	if err := e.create(context.Background(), c, 60); err != nil {
		t.Fatalf("create on magnum-v5: %v", err)
	}
	if got := e.logs.lines("cannot be applied", "class=magnum-v5"); len(got) != 0 {
		t.Errorf("a driver on magnum-v5 warns: %v", got)
	}
	r, _ := refOf(c)
	before := e.getCluster(t, r)
	if before.Spec.Topology.ClassRef.Name != "magnum-v5" {
		t.Fatalf("class %s", before.Spec.Topology.ClassRef.Name)
	}
	for _, gvr := range []schema.GroupVersionResource{gvrOSClusterTemplate, gvrOSMachineTemplate} {
		l, err := e.dyn.Resource(gvr).Namespace(r.Namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			t.Errorf("%s in %s: %v (%v)", gvr.Resource, r.Namespace, l, err)
		}
	}

	// An upgrade by a driver still on magnum-v4 is refused and writes nothing.
	e.d = v4
	c.Status = objects.CreateComplete
	next := &objects.ClusterTemplate{UUID: ptr("tmpl-next"), ImageID: ptr("img-2"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.medium"),
		Labels: map[string]string{"kube_tag": "v1.34.1"}}
	err = e.upgrade(context.Background(), c, next, 1, nil)
	if !errors.Is(err, exception.ClassNotSupported.New(nil)) || !strings.Contains(err.Error(), "ClusterClass magnum-v4 cannot be applied") ||
		!strings.Contains(err.Error(), "OpenStackMachineTemplate infrastructure.cluster.x-k8s.io/v1beta2 (served at v1beta1)") {
		t.Fatalf("upgrade to magnum-v4: err = %v", err)
	}
	after := e.getCluster(t, r)
	if after.ResourceVersion != before.ResourceVersion || deref(c.ClusterTemplateID) == "tmpl-next" || c.Labels["kube_tag"] != "v1.33.4" {
		t.Errorf("a refused upgrade wrote: rv %s→%s, template %s, kube_tag %s", before.ResourceVersion, after.ResourceVersion,
			deref(c.ClusterTemplateID), c.Labels["kube_tag"])
	}
	l, err := e.dyn.Resource(gvrClusterClass).Namespace(r.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cc := range l.Items {
		names = append(names, cc.GetName())
	}
	if !slices.Equal(names, []string{"magnum-v5"}) {
		t.Errorf("ClusterClasses after the refused upgrade: %v, want magnum-v5 only", names)
	}
}
