package capi

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The infrastructure objects (OpenStackCluster and OpenStackMachine with
// the released classes; DevCluster and DevMachine with the in-memory
// provider's) are watched by kind as the driver meets them, never from a
// fixed list: the kinds the class bundles' infrastructure templates
// instantiate (a template's kind is its object's kind with "Template"
// appended, by Cluster API's provider contract), and any other kind a
// Cluster's or a Machine's infrastructureRef names. Each kind is resolved
// to its resource through discovery (Deps.Mapper) once, and gets an
// informer of its own, filtered by the cluster-name label as Cluster API
// labels every infrastructure object.

// infraRole says whether a kind is an infrastructure cluster's or an
// infrastructure machine's.
type infraRole int

const (
	infraClusterRole infraRole = iota
	infraMachineRole
)

// infraKind is a kind the driver wants watched, with the version a class
// bundle names (empty for a kind met through an infrastructureRef, which
// names none): the newest bundle's when several name the kind at different
// versions (magnum-v1 to v4 name CAPO's kinds at v1beta2, magnum-v5 at
// v1beta1). The driver reads only the provider contract's status fields,
// which every version has, so a kind is watched at whichever version the
// management cluster serves (infraResolver).
type infraKind struct {
	GroupKind schema.GroupKind
	Version   string
	Role      infraRole
}

// infraKindsOf lists the infrastructure kinds the bundles' ClusterClasses
// instantiate: the infrastructure cluster template's, and every machine
// template's (control plane and workers), each once, with the version of
// the newest bundle that names it. A template reference it cannot read
// (an apiVersion that does not parse, a kind not ending in "Template") is
// left out and reported in problems.
func infraKindsOf(classes classSet) (out []infraKind, problems []error) {
	add := func(class string, ref map[string]any, role infraRole) {
		apiVersion, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err == nil && (!strings.HasSuffix(kind, "Template") || len(kind) == len("Template")) {
			err = fmt.Errorf("kind %q does not name a template (<Kind>Template)", kind)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("ClusterClass %s: infrastructure template %s %s: %w", class, apiVersion, kind, err))
			return
		}
		k := infraKind{GroupKind: schema.GroupKind{Group: gv.Group, Kind: strings.TrimSuffix(kind, "Template")}, Version: gv.Version, Role: role}
		if !slices.ContainsFunc(out, func(o infraKind) bool { return o.GroupKind == k.GroupKind && o.Role == k.Role }) {
			out = append(out, k)
		}
	}
	versions := make([]string, 0, len(classes))
	for v := range classes {
		versions = append(versions, v)
	}
	// Newest first: its versions win (ClassVersions' order, reversed).
	slices.Sort(versions)
	slices.Reverse(versions)
	for _, v := range versions {
		for _, o := range classes[v] {
			if o.GetKind() != "ClusterClass" {
				continue
			}
			class := o.GetName()
			if ref, ok, _ := unstructured.NestedMap(o.Object, "spec", "infrastructure", "templateRef"); ok {
				add(class, ref, infraClusterRole)
			}
			if ref, ok, _ := unstructured.NestedMap(o.Object, "spec", "controlPlane", "machineInfrastructure", "templateRef"); ok {
				add(class, ref, infraMachineRole)
			}
			mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "workers", "machineDeployments")
			for _, md := range mds {
				m, _ := md.(map[string]any)
				if ref, ok, _ := unstructured.NestedMap(m, "infrastructure", "templateRef"); ok {
					add(class, ref, infraMachineRole)
				}
			}
		}
	}
	return out, problems
}

// infraResolver maps an infrastructure kind to its resource: through
// discovery when the driver has a RESTMapper, at the version a class
// bundle names if the management cluster serves it, else at any version it
// serves (a kind not found is looked up again after the mapper forgets
// what it discovered: a provider's CRDs installed after the driver
// started); without one, from the version a class bundle names and the
// plural a CRD conventionally has.
func infraResolver(mapper meta.RESTMapper) func(infraKind) (schema.GroupVersionResource, error) {
	return func(k infraKind) (schema.GroupVersionResource, error) {
		if mapper == nil {
			if k.Version == "" {
				return schema.GroupVersionResource{}, fmt.Errorf("capi: no version known for %s without discovery", k.GroupKind)
			}
			gvr, _ := meta.UnsafeGuessKindToResource(k.GroupKind.WithVersion(k.Version))
			return gvr, nil
		}
		lookup := func() (*meta.RESTMapping, error) {
			if k.Version != "" {
				mapping, err := mapper.RESTMapping(k.GroupKind, k.Version)
				if !meta.IsNoMatchError(err) {
					return mapping, err
				}
			}
			return mapper.RESTMapping(k.GroupKind)
		}
		mapping, err := lookup()
		if meta.IsNoMatchError(err) {
			if r, ok := mapper.(meta.ResettableRESTMapper); ok {
				r.Reset()
				mapping, err = lookup()
			}
		}
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("capi: the management cluster serves no %s: %w", k.GroupKind, err)
		}
		return mapping.Resource, nil
	}
}

// infraRetry is how long a kind whose resource could not be resolved
// waits before a reference to it tries again.
const infraRetry = 30 * time.Second

// watchedInfra is one infrastructure kind's informer.
type watchedInfra struct {
	kind infraKind
	inf  toolscache.SharedIndexInformer
}

// infraInformers are the informers of the infrastructure kinds, added as
// kinds are met (want) and started with the cache.
type infraInformers struct {
	resolve  func(infraKind) (schema.GroupVersionResource, error)
	informer func(schema.GroupVersionResource) (toolscache.SharedIndexInformer, error)
	now      func() time.Time
	log      *slog.Logger

	mu        sync.Mutex
	ctx       context.Context // nil until the cache starts
	watched   []watchedInfra
	byGK      map[schema.GroupKind]int // index in watched
	resolving map[schema.GroupKind]bool
	failed    map[schema.GroupKind]time.Time
	// warned is the error last logged for a kind that fails: a kind that
	// keeps failing alike is logged once, not at every retry.
	warned map[schema.GroupKind]string
	// pending are the kinds wanted before the cache started.
	pending []infraKind
}

func newInfraInformers(resolve func(infraKind) (schema.GroupVersionResource, error),
	informer func(schema.GroupVersionResource) (toolscache.SharedIndexInformer, error), seeds []infraKind, log *slog.Logger) *infraInformers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &infraInformers{resolve: resolve, informer: informer, now: time.Now, log: log, pending: slices.Clone(seeds),
		byGK: map[schema.GroupKind]int{}, resolving: map[schema.GroupKind]bool{}, failed: map[schema.GroupKind]time.Time{},
		warned: map[schema.GroupKind]string{}}
}

// start resolves and starts the kinds wanted so far (the class bundles',
// synchronously, so that the cache's sync covers them); later ones start
// as they are met.
func (x *infraInformers) start(ctx context.Context) {
	x.mu.Lock()
	x.ctx = ctx
	pending := x.pending
	x.pending = nil
	x.mu.Unlock()
	for _, k := range pending {
		x.add(k)
	}
}

// want asks for kind k to be watched: a kind already watched, being
// resolved, or that failed less than infraRetry ago is left alone; else it
// is resolved and its informer started in the background.
func (x *infraInformers) want(k infraKind) {
	if k.GroupKind.Kind == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.byGK[k.GroupKind]; ok || x.resolving[k.GroupKind] {
		return
	}
	if t, ok := x.failed[k.GroupKind]; ok && x.now().Sub(t) < infraRetry {
		return
	}
	if x.ctx == nil {
		if !slices.ContainsFunc(x.pending, func(p infraKind) bool { return p.GroupKind == k.GroupKind }) {
			x.pending = append(x.pending, k)
		}
		return
	}
	x.resolving[k.GroupKind] = true
	go x.add(k)
}

// add resolves k and starts its informer (unless another call did). A
// failure is logged when it is the kind's first, or differs from the
// last one logged; a kind watched after failing is logged too.
func (x *infraInformers) add(k infraKind) {
	gvr, err := x.resolve(k)
	var inf toolscache.SharedIndexInformer
	if err == nil {
		inf, err = x.informer(gvr)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.resolving, k.GroupKind)
	if err != nil {
		x.failed[k.GroupKind] = x.now()
		if msg := err.Error(); x.warned[k.GroupKind] != msg {
			x.warned[k.GroupKind] = msg
			x.log.Warn("infrastructure kind not watched: its objects' problems stay out of status reasons until it is",
				"kind", k.GroupKind.String(), "error", msg, "retry_after", infraRetry.String())
		}
		return
	}
	delete(x.failed, k.GroupKind)
	if _, ok := x.warned[k.GroupKind]; ok {
		delete(x.warned, k.GroupKind)
		x.log.Info("infrastructure kind watched after failing", "kind", k.GroupKind.String(), "resource", gvr.String())
	}
	if _, ok := x.byGK[k.GroupKind]; ok {
		return
	}
	x.byGK[k.GroupKind] = len(x.watched)
	x.watched = append(x.watched, watchedInfra{kind: k, inf: inf})
	if x.ctx != nil {
		go inf.RunWithContext(x.ctx)
	}
}

// informers are the informers started so far.
func (x *infraInformers) informers() []toolscache.SharedIndexInformer {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]toolscache.SharedIndexInformer, 0, len(x.watched))
	for _, w := range x.watched {
		out = append(out, w.inf)
	}
	return out
}

// observe fills obs's infrastructure objects of the cluster key: the one
// the Cluster's infrastructureRef names (else the first of an
// infrastructure cluster kind) and every infrastructure machine.
func (x *infraInformers) observe(key string, obs *observation) {
	x.mu.Lock()
	watched := slices.Clone(x.watched)
	x.mu.Unlock()
	var ref clusterv1.ContractVersionedObjectReference
	if obs.Cluster != nil {
		ref = obs.Cluster.Spec.InfrastructureRef
	}
	for _, w := range watched {
		for _, o := range byIndex(w.inf, key) {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			switch {
			case ref.Kind != "" && u.GetKind() == ref.Kind && u.GroupVersionKind().Group == ref.APIGroup:
				if u.GetName() == ref.Name || obs.InfraCluster == nil {
					obs.InfraCluster = u
				}
			case w.kind.Role == infraClusterRole && ref.Kind == "":
				if obs.InfraCluster == nil {
					obs.InfraCluster = u
				}
			case w.kind.Role == infraMachineRole:
				obs.InfraMachines = append(obs.InfraMachines, u)
			}
		}
	}
}

// infraRefHandler is the Cluster and Machine informers' handler: the kind
// of each infrastructureRef is wanted watched.
func (x *infraInformers) infraRefHandler() toolscache.ResourceEventHandler {
	seen := func(obj any) {
		switch o := obj.(type) {
		case *clusterv1.Cluster:
			r := o.Spec.InfrastructureRef
			x.want(infraKind{GroupKind: schema.GroupKind{Group: r.APIGroup, Kind: r.Kind}, Role: infraClusterRole})
		case *clusterv1.Machine:
			r := o.Spec.InfrastructureRef
			x.want(infraKind{GroupKind: schema.GroupKind{Group: r.APIGroup, Kind: r.Kind}, Role: infraMachineRole})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj) },
		UpdateFunc: func(_, obj any) { seen(obj) },
	}
}

// infraConfig is the cache's view of the infrastructure kinds: resolved
// through the driver's RESTMapper, the class bundles' watched from the
// start.
func (d *Driver) infraConfig() infraConfig {
	seeds, problems := infraKindsOf(d.classes)
	for _, err := range problems {
		d.log.Warn("infrastructure kind of a class bundle not watched from the start", "error", err.Error())
	}
	return infraConfig{resolve: infraResolver(d.deps.Mapper), seeds: seeds, log: d.log}
}
