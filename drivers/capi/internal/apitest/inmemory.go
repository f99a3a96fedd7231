package apitest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// InfrastructureGroup is the API group of Cluster API infrastructure
// providers' kinds (CAPO's and the in-memory provider's alike).
const InfrastructureGroup = "infrastructure.cluster.x-k8s.io"

// The in-memory provider's kinds.
const (
	DevClusterTemplate = "DevClusterTemplate"
	DevMachineTemplate = "DevMachineTemplate"
)

// devAPIVersion is the in-memory provider's API version (its CRDs' storage
// version).
const devAPIVersion = InfrastructureGroup + "/v1beta2"

// InMemoryClass derives, from a released ClusterClass bundle (the YAML of
// drivers/capi/classes/<version>.yaml: a ClusterClass and its templates),
// a variant that runs on the in-memory infrastructure provider, for tests
// of a whole lifecycle that cannot boot OpenStack servers:
//   - every infrastructure cluster template (OpenStackClusterTemplate)
//     becomes a DevClusterTemplate, every infrastructure machine template a
//     DevMachineTemplate, of the same name, with backend.inMemory (a
//     simulated VM, node, etcd member and API server that start within
//     seconds);
//   - the ClusterClass references them instead, and keeps its name, its
//     variables (a Cluster the driver builds for the released class is
//     valid for the variant), its control plane and bootstrap templates,
//     and every patch definition that does not select an infrastructure
//     kind (those patch OpenStack fields the Dev kinds do not have).
//
// Nothing is specific to one bundle: a new bundle gets its variant as it
// is released.
func InMemoryClass(bundle []byte) ([]byte, error) {
	objs, err := decodeObjects(bundle)
	if err != nil {
		return nil, fmt.Errorf("apitest: ClusterClass bundle: %w", err)
	}
	classes := 0
	var out bytes.Buffer
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "ClusterClass":
			classes++
			if err := devClass(obj); err != nil {
				return nil, err
			}
		case isInfra(obj.GetAPIVersion()):
			dev, ok := devTemplateKind(obj.GetKind())
			if !ok {
				return nil, fmt.Errorf("apitest: ClusterClass bundle: no in-memory kind for %s %s", obj.GetKind(), obj.GetName())
			}
			obj = devTemplate(obj, dev)
		}
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	if classes != 1 {
		return nil, fmt.Errorf("apitest: ClusterClass bundle: want one ClusterClass, found %d", classes)
	}
	return out.Bytes(), nil
}

func isInfra(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, InfrastructureGroup+"/")
}

// devTemplateKind maps an infrastructure template kind to its in-memory
// counterpart.
func devTemplateKind(kind string) (string, bool) {
	switch {
	case strings.HasSuffix(kind, "ClusterTemplate"):
		return DevClusterTemplate, true
	case strings.HasSuffix(kind, "MachineTemplate"):
		return DevMachineTemplate, true
	}
	return "", false
}

// devTemplate is the in-memory template standing for obj.
func devTemplate(obj *unstructured.Unstructured, kind string) *unstructured.Unstructured {
	backend := map[string]any{}
	if kind == DevMachineTemplate {
		// Short start-ups: a node is Ready within seconds.
		backend = map[string]any{
			"vm":        map[string]any{"provisioning": map[string]any{"startupDuration": "2s"}},
			"node":      map[string]any{"provisioning": map[string]any{"startupDuration": "1s"}},
			"apiServer": map[string]any{"provisioning": map[string]any{"startupDuration": "1s"}},
			"etcd":      map[string]any{"provisioning": map[string]any{"startupDuration": "1s"}},
		}
	}
	meta := map[string]any{"name": obj.GetName()}
	if len(obj.GetLabels()) > 0 {
		meta["labels"] = obj.GetLabels()
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": devAPIVersion, "kind": kind, "metadata": meta,
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"backend": map[string]any{"inMemory": backend}}}},
	}}
}

// devClass rewrites a ClusterClass in place: template references to Dev
// kinds, patch definitions selecting infrastructure kinds dropped.
func devClass(class *unstructured.Unstructured) error {
	spec, ok := class.Object["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("apitest: ClusterClass %s has no spec", class.GetName())
	}
	patches, _ := spec["patches"].([]any)
	delete(spec, "patches")
	if err := rewriteRefs(spec); err != nil {
		return fmt.Errorf("apitest: ClusterClass %s: %w", class.GetName(), err)
	}
	var kept []any
	for _, p := range patches {
		patch, _ := p.(map[string]any)
		defs, _ := patch["definitions"].([]any)
		if len(defs) == 0 {
			continue // an external patch: no extension runs here
		}
		var keep []any
		for _, d := range defs {
			def, _ := d.(map[string]any)
			sel, _ := def["selector"].(map[string]any)
			if v, _ := sel["apiVersion"].(string); !isInfra(v) {
				keep = append(keep, d)
			}
		}
		if len(keep) > 0 {
			patch["definitions"] = keep
			kept = append(kept, patch)
		}
	}
	if len(kept) > 0 {
		spec["patches"] = kept
	}
	return nil
}

// rewriteRefs renames, anywhere under v, the kind of every reference to an
// infrastructure template.
func rewriteRefs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		if av, ok := v["apiVersion"].(string); ok && isInfra(av) {
			if kind, ok := v["kind"].(string); ok {
				dev, ok := devTemplateKind(kind)
				if !ok {
					return fmt.Errorf("no in-memory kind for a reference to %s", kind)
				}
				v["kind"], v["apiVersion"] = dev, devAPIVersion
			}
		}
		for _, e := range v {
			if err := rewriteRefs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := rewriteRefs(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// ClassesDir is where the driver's released ClusterClass bundles live,
// relative to the magnum-conductor root.
const ClassesDir = "drivers/capi/classes"

// ReleasedClasses reads every released ClusterClass bundle (by version:
// "v1" for classes/v1.yaml), for tests outside the driver's package (which
// use the driver's embedded copy).
func ReleasedClasses(ctx context.Context) (map[string][]byte, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, ClassesDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("apitest: no ClusterClass bundles under %s", ClassesDir)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = data
	}
	return out, nil
}

// ApplyObjects creates the objects of a YAML bundle in namespace, through
// the server's webhooks, and returns them as created.
func ApplyObjects(ctx context.Context, s *Server, namespace string, bundle []byte) ([]*unstructured.Unstructured, error) {
	objs, err := decodeObjects(bundle)
	if err != nil {
		return nil, err
	}
	dyn, mapper, err := s.clients()
	if err != nil {
		return nil, err
	}
	// Templates first, ClusterClasses last (they reference the templates).
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(b2i(a.GetKind() == "ClusterClass"), b2i(b.GetKind() == "ClusterClass"))
	})
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
		if err != nil {
			return nil, fmt.Errorf("apitest: %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		obj.SetNamespace(namespace)
		got, err := dyn.Resource(mapping.Resource).Namespace(namespace).Create(ctx, obj, createOpts)
		if err != nil {
			return nil, fmt.Errorf("apitest: create %s %s/%s: %w", obj.GetKind(), namespace, obj.GetName(), err)
		}
		out = append(out, got)
	}
	return out, nil
}

var createOpts = metav1.CreateOptions{FieldManager: "apitest"}

// clients are a dynamic client and a RESTMapper (through discovery) for the
// server.
func (s *Server) clients() (dynamic.Interface, meta.RESTMapper, error) {
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		return nil, nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return nil, nil, err
	}
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}

// NewNamespace creates a namespace named prefix-<random> and returns its
// name: each test gets its own.
func (s *Server) NewNamespace(ctx context.Context, prefix string) (string, error) {
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		return "", err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"generateName": prefix + "-"}}}
	got, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, createOpts)
	if err != nil {
		return "", fmt.Errorf("apitest: create namespace: %w", err)
	}
	return got.GetName(), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// NamespaceObjects lists "Kind name" of every object in ns, sorted, of
// every listable namespaced kind but Events (which nothing owns), found
// through discovery: what a test checks is left after a delete.
func (s *Server) NamespaceObjects(ctx context.Context, ns string) ([]string, error) {
	dyn, _, err := s.clients()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Kind == "Event" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("apitest: list %s: %w", r.Name, err)
			}
			for _, it := range items.Items {
				out = append(out, r.Kind+" "+it.GetName())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// WriteInMemoryClassDir writes the in-memory variant (InMemoryClass) of a
// released bundle into dir as <version>.yaml: the [capi_driver] class_dir
// of a driver on the real controllers, whose bundle of that version it
// replaces. It returns the variant, for what the driver applies.
func WriteInMemoryClassDir(dir, version string, bundle []byte) ([]byte, error) {
	variant, err := InMemoryClass(bundle)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".yaml"), variant, 0o600); err != nil {
		return nil, err
	}
	return variant, nil
}

// RESTMapper maps kinds to resources through the server's discovery (the
// driver's Deps.Mapper on the real controllers, whose kinds it must find).
func (s *Server) RESTMapper() (meta.RESTMapper, error) {
	_, mapper, err := s.clients()
	return mapper, err
}

// Leftovers waits up to within for namespace ns to hold nothing but what
// every namespace holds (the objects of namespace empty) and the objects
// of bundle (a class bundle the driver applied to ns, shared by the
// project's clusters), and returns what else is left ("Kind name"), once
// within has passed; nil when nothing is. What Cluster API owned goes
// through the garbage collector, a little after the Cluster.
func (s *Server) Leftovers(ctx context.Context, ns, empty string, bundle []byte, within time.Duration) ([]string, error) {
	allowed, err := s.NamespaceObjects(ctx, empty)
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(bundle)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		allowed = append(allowed, o.GetKind()+" "+o.GetName())
	}
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		objs, err := s.NamespaceObjects(ctx, ns)
		if err != nil {
			return nil, err
		}
		left := slices.DeleteFunc(objs, func(o string) bool { return slices.Contains(allowed, o) })
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left, nil
		}
	}
}
