package capi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Resources the driver writes or watches: Cluster API's at v1beta2 (its
// storage version), Cluster API Provider OpenStack's at v1beta1, the only
// version its releases serve (up to v0.14; the released classes from
// magnum-v5 on name it). The infrastructure objects are watched by kind at
// whatever version the management cluster serves (infra.go): gvrOSC and
// gvrOSM are what the tests that play CAPO write.
var (
	gvrCluster      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	gvrClusterClass = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusterclasses"}
	gvrMD           = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	gvrMachine      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	gvrKCP          = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"}
	gvrOSC          = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackclusters"}
	gvrOSM          = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackmachines"}
)

// resourceFor maps the kinds of the released ClusterClass bundles to
// resources, and any other kind to the plural a CRD conventionally has
// (lower-case kind, pluralised): the fallback of a driver built without a
// RESTMapper (Deps.Mapper).
func resourceFor(apiVersion, kind string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	plural := map[string]string{
		"ClusterClass": "clusterclasses", "Cluster": "clusters",
		"OpenStackClusterTemplate": "openstackclustertemplates", "OpenStackMachineTemplate": "openstackmachinetemplates",
		"KubeadmControlPlaneTemplate": "kubeadmcontrolplanetemplates", "KubeadmConfigTemplate": "kubeadmconfigtemplates",
	}[kind]
	if plural == "" {
		if kind == "" {
			return schema.GroupVersionResource{}, fmt.Errorf("capi: an object of %s without kind", apiVersion)
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gv.WithKind(kind))
		return gvr, nil
	}
	return gv.WithResource(plural), nil
}

// resource maps a kind of a ClusterClass bundle to its resource, through
// discovery when the driver has a RESTMapper: a class from Options.ClassDir
// may use any infrastructure provider's kinds. A kind not found is looked
// up again once, after the mapper forgets what it discovered (a provider's
// CRDs installed after the driver started).
func (d *Driver) resource(apiVersion, kind string) (schema.GroupVersionResource, error) {
	m := d.deps.Mapper
	if m == nil {
		return resourceFor(apiVersion, kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	mapping, err := m.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		if r, ok := m.(meta.ResettableRESTMapper); ok {
			r.Reset()
			mapping, err = m.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
		}
	}
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("capi: the management cluster serves no %s of %s: %w", kind, apiVersion, err)
	}
	return mapping.Resource, nil
}

const byClusterIndex = "capi-cluster"

// clusterKey is the index key namespace/capi-cluster-name.
func clusterKey(ns, name string) string { return ns + "/" + name }

func indexByClusterLabel(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if n := o.GetLabels()[clusterv1.ClusterNameLabel]; n != "" {
		return []string{clusterKey(o.GetNamespace(), n)}, nil
	}
	return nil, nil
}

// typed converts the informer's unstructured objects into typed ones once,
// at ingest, and drops managedFields; the cache then serves typed objects.
func typed[T any](into func() T) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil // tombstones and already-converted objects
		}
		u.SetManagedFields(nil)
		out := into()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, fmt.Errorf("capi: decode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		return out, nil
	}
}

// infraStatusKept are the status fields of an infrastructure object the
// cache keeps: the generic ones of Cluster API's provider contract, v1beta1
// (ready, failureReason, failureMessage, conditions with severity: CAPO
// v0.14's) and v1beta2 (initialization, conditions, and the v1beta2
// conditions some v1beta1 objects carry beside theirs). The rest of the
// status (on CAPO: networks, subnets, router, load balancer, bastion,
// resolved server parameters) and the whole spec are never read.
var infraStatusKept = []string{"conditions", "ready", "initialization", "failureReason", "failureMessage", "v1beta2"}

// projectInfra keeps of an infrastructure object (OpenStackCluster,
// OpenStackMachine: unstructured, CAPO's types are not vendored) only its
// identity and the contract's status fields. Unstructured objects cost
// several KiB each as nested maps; with three of them per cluster the full
// objects were half of the informers' heap (BenchmarkScale: 28.9 KiB per
// cluster with them whole).
func projectInfra(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // tombstones and already-projected objects
	}
	meta := map[string]any{}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "generation", "labels", "deletionTimestamp"} {
			if v, ok := m[k]; ok {
				meta[k] = v
			}
		}
	}
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta}
	if st, ok := u.Object["status"].(map[string]any); ok {
		kept := map[string]any{}
		for _, k := range infraStatusKept {
			if v, ok := st[k]; ok {
				kept[k] = v
			}
		}
		out["status"] = kept
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// stateCache is the set of shared informers the driver reads from.
type stateCache struct {
	clusters, deployments, machines, controlPlanes toolscache.SharedIndexInformer
	// infra are the infrastructure kinds' informers (infra.go).
	infra *infraInformers
	// crs and crsBindings (nil without add-ons) are the clusters'
	// ClusterResourceSets and Cluster API's bindings of them (addons.go).
	crs, crsBindings toolscache.SharedIndexInformer
	cancel           context.CancelFunc
}

// infraConfig is how the cache finds the infrastructure kinds' resources
// (infraResolver) and the kinds watched from the start (infraKindsOf).
type infraConfig struct {
	resolve func(infraKind) (schema.GroupVersionResource, error)
	seeds   []infraKind
	log     *slog.Logger // of failures to watch a kind; nil: none
}

// newStateCache builds the informers: CAPI objects filtered by the magnum
// cluster label (propagated through the topology metadata), infrastructure
// objects (of the kinds infra resolves, infra.go) by the CAPI cluster-name
// label. onError hears about every list or watch request of theirs that
// fails (the informers retry by themselves). withAddOns adds the add-ons'
// ClusterResourceSets and their bindings.
func newStateCache(client dynamic.Interface, resync time.Duration, onError func(error), withAddOns bool, infra infraConfig) (*stateCache, error) {
	inf := func(gvr schema.GroupVersionResource, selector string) toolscache.SharedIndexInformer {
		return newInformer(client, gvr, selector, resync, onError)
	}
	c := &stateCache{
		clusters:      inf(gvrCluster, LabelClusterUUID),
		deployments:   inf(gvrMD, LabelClusterUUID),
		machines:      inf(gvrMachine, LabelClusterUUID),
		controlPlanes: inf(gvrKCP, LabelClusterUUID),
	}
	idx := toolscache.Indexers{byClusterIndex: indexByClusterLabel}
	resolve := infra.resolve
	if resolve == nil {
		resolve = infraResolver(nil)
	}
	c.infra = newInfraInformers(resolve, func(gvr schema.GroupVersionResource) (toolscache.SharedIndexInformer, error) {
		i := inf(gvr, clusterv1.ClusterNameLabel)
		if err := i.SetTransform(projectInfra); err != nil {
			return nil, err
		}
		if err := i.AddIndexers(idx); err != nil {
			return nil, err
		}
		return i, nil
	}, infra.seeds, infra.log)
	steps := []struct {
		inf toolscache.SharedIndexInformer
		tf  toolscache.TransformFunc
	}{
		{c.clusters, typed(func() *clusterv1.Cluster { return &clusterv1.Cluster{} })},
		{c.deployments, typed(func() *clusterv1.MachineDeployment { return &clusterv1.MachineDeployment{} })},
		{c.machines, typed(func() *clusterv1.Machine { return &clusterv1.Machine{} })},
		{c.controlPlanes, typedControlPlane},
	}
	if withAddOns {
		c.crs = inf(gvrCRS, LabelClusterUUID)
		// Cluster API labels no binding: every one is watched (one per
		// cluster with add-ons; they are small).
		c.crsBindings = inf(gvrCRSBinding, "")
		steps = append(steps, struct {
			inf toolscache.SharedIndexInformer
			tf  toolscache.TransformFunc
		}{c.crs, typed(func() *addonsv1.ClusterResourceSet { return &addonsv1.ClusterResourceSet{} })}, struct {
			inf toolscache.SharedIndexInformer
			tf  toolscache.TransformFunc
		}{c.crsBindings, typed(func() *addonsv1.ClusterResourceSetBinding { return &addonsv1.ClusterResourceSetBinding{} })})
	}
	for _, s := range steps {
		if err := s.inf.SetTransform(s.tf); err != nil {
			return nil, err
		}
		if s.inf != c.clusters && s.inf != c.crs && s.inf != c.crsBindings {
			if err := s.inf.AddIndexers(idx); err != nil {
				return nil, err
			}
		}
	}
	for _, i := range []toolscache.SharedIndexInformer{c.clusters, c.machines} {
		if _, err := i.AddEventHandler(c.infra.infraRefHandler()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// typedControlPlane projects a KubeadmControlPlane into controlPlane.
func typedControlPlane(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{}
	if err := json.Unmarshal(b, cp); err != nil {
		return nil, fmt.Errorf("capi: decode KubeadmControlPlane %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return cp, nil
}

// GetObjectKind lets the cache treat controlPlane as a runtime.Object.
func (c *controlPlane) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy (the cache never mutates it).
func (c *controlPlane) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// newInformer watches gvr in every namespace, limited to the objects that
// carry the selector's label. It is built on tools/cache directly: the
// dynamicinformer package imports client-go/informers, and with it every
// Kubernetes API group.
func newInformer(client dynamic.Interface, gvr schema.GroupVersionResource, selector string, resync time.Duration, onError func(error)) toolscache.SharedIndexInformer {
	res := client.Resource(gvr).Namespace(metav1.NamespaceAll)
	failed := func(ctx context.Context, err error) {
		if err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			l, err := res.List(ctx, o)
			failed(ctx, err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			w, err := res.Watch(ctx, o)
			failed(ctx, err)
			return w, err
		},
	}
	// A client that cannot serve a watch-list (a fake's) says so, and its
	// informers list instead of waiting for the list's end for ever.
	return toolscache.NewSharedIndexInformerWithOptions(toolscache.ToListWatcherWithWatchListSemantics(lw, client), &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{
		ResyncPeriod:      resync,
		Indexers:          toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		ObjectDescription: gvr.String(),
	})
}

func (c *stateCache) all() []toolscache.SharedIndexInformer {
	all := []toolscache.SharedIndexInformer{c.clusters, c.deployments, c.machines, c.controlPlanes}
	if c.crs != nil {
		all = append(all, c.crs, c.crsBindings)
	}
	return append(all, c.infra.informers()...)
}

// addOns returns the cached ClusterResourceSet of the Cluster ns/name and
// Cluster API's binding of it (nil when absent).
func (c *stateCache) addOns(ns, name string) (*addonsv1.ClusterResourceSet, *addonsv1.ClusterResourceSetBinding) {
	if c.crs == nil {
		return nil, nil
	}
	var crs *addonsv1.ClusterResourceSet
	var b *addonsv1.ClusterResourceSetBinding
	if o, ok, _ := c.crs.GetIndexer().GetByKey(ns + "/" + crsName(name)); ok {
		crs, _ = o.(*addonsv1.ClusterResourceSet)
	}
	if o, ok, _ := c.crsBindings.GetIndexer().GetByKey(ns + "/" + name); ok {
		b, _ = o.(*addonsv1.ClusterResourceSetBinding)
	}
	return crs, b
}

// start runs the informers until ctx ends or stop is called (cancel is
// ctx's own cancel function).
func (c *stateCache) start(ctx context.Context, cancel context.CancelFunc) {
	c.cancel = cancel
	for _, inf := range c.all() {
		go inf.RunWithContext(ctx)
	}
	// The class bundles' infrastructure kinds are resolved here, and their
	// informers started, before the caller waits for the sync.
	c.infra.start(ctx)
}

// stop ends the informers of a started cache.
func (c *stateCache) stop() {
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *stateCache) waitForSync(ctx context.Context) error {
	for _, inf := range c.all() {
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return fmt.Errorf("capi: informer caches did not sync: %w", context.Cause(ctx))
		}
	}
	return nil
}

// observe gathers what the cache knows about the CAPI cluster ns/name.
// It never calls the API server and tolerates any missing piece.
func (c *stateCache) observe(ns, name string) observation {
	key := clusterKey(ns, name)
	obs := observation{Deployments: map[string]*clusterv1.MachineDeployment{}}
	if o, ok, _ := c.clusters.GetIndexer().GetByKey(key); ok {
		obs.Cluster, _ = o.(*clusterv1.Cluster)
	}
	if objs, _ := c.deployments.GetIndexer().ByIndex(byClusterIndex, key); len(objs) > 0 {
		for _, o := range objs {
			if md, ok := o.(*clusterv1.MachineDeployment); ok {
				if n := md.Labels[clusterv1.ClusterTopologyMachineDeploymentNameLabel]; n != "" {
					obs.Deployments[n] = md
				}
			}
		}
	}
	for _, o := range byIndex(c.machines, key) {
		if m, ok := o.(*clusterv1.Machine); ok {
			obs.Machines = append(obs.Machines, m)
		}
	}
	for _, o := range byIndex(c.controlPlanes, key) {
		if cp, ok := o.(*controlPlane); ok && cp.DeletionTimestamp == nil || obs.ControlPlane == nil {
			obs.ControlPlane, _ = o.(*controlPlane)
		}
	}
	c.infra.observe(key, &obs)
	return obs
}

func byIndex(inf toolscache.SharedIndexInformer, key string) []any {
	objs, _ := inf.GetIndexer().ByIndex(byClusterIndex, key)
	return objs
}
