package addons

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// Object is one rendered Kubernetes object.
type Object = map[string]any

// Release is what a chart is rendered for.
type Release struct {
	// Name is the release name (the add-on's name).
	Name string
	// Namespace is the workload cluster namespace of the add-on's
	// namespaced objects; the renderer sets it where a template leaves it
	// out, as `helm install -n` would.
	Namespace string
	// KubeVersion is the workload cluster's Kubernetes version (vX.Y.Z),
	// for the chart's kubeVersion constraint and .Capabilities.
	KubeVersion string
}

// Chart hooks. A chart's hooks are manifests Helm applies at a moment of
// a release's life (install, upgrade, delete, rollback, test) instead of
// with the chart's other objects. The add-ons reach a workload cluster
// through a ClusterResourceSet (package capi): Cluster API creates the
// objects of its resource Secrets in the order they are listed, in one
// pass, without waiting for any of them; it re-applies a Secret whose
// content changed and never deletes anything. That is a one-shot install,
// so:
//   - pre-install and post-install hooks are rendered as objects before
//     and after the chart's other objects (after the CRDs of crds/, which
//     Helm installs before the pre-install hooks), each group in Helm's
//     order (hook weight, then name). HookGroup tells them apart, so that
//     they are delivered in resource Secrets of their own (Parts): Cluster
//     API sorts the objects of one Secret by kind, which would otherwise
//     move a post-install Job before the chart's Deployments. What a
//     ClusterResourceSet cannot do is wait: Helm runs a hook Job or Pod to
//     completion before going on, here the chart's objects are created
//     right after it and converge once what it makes exists (a Pod waits
//     for the Secret it mounts); nor does it delete hooks
//     (helm.sh/hook-delete-policy), which stay in the cluster. Delivering
//     them all the same, rather than reporting them too, is what makes a
//     chart whose install depends on a hook (a Job generating a
//     certificate, or patching a webhook) work at all, as `helm template`
//     output applied by another tool does.
//     A hook of both ("pre-install,post-install", which Helm runs twice)
//     is one object, applied once, with the pre-install hooks. A hook of
//     install and other events ("pre-install,pre-upgrade") is applied as
//     an install hook; a changed rendering of it (an upgrade's chart
//     version) is re-applied like the chart's other objects.
//   - every other hook (pre/post-upgrade, pre/post-delete,
//     pre/post-rollback, test, and types Helm does not know, which it skips
//     itself) has no moment in that delivery: it is left out and returned,
//     named with its hook types, for the operator to see (AddOn.Skipped:
//     the capi driver logs every one, and the upgrade hooks, whose moment
//     does come with cluster_upgrade, are warnings in the cluster's
//     status_reason: AddOn.Warning), never dropped silently.

// Hook is a chart hook left out of a rendering.
type Hook struct {
	Kind, Name string
	// Types is its helm.sh/hook annotation, as written.
	Types string
}

func (h Hook) String() string { return fmt.Sprintf("%s/%s (%s)", h.Kind, h.Name, h.Types) }

// onUpgrade says whether h runs at an upgrade (pre-upgrade, post-upgrade).
func (h Hook) onUpgrade() bool {
	for t := range strings.SplitSeq(h.Types, ",") {
		if t = strings.TrimSpace(t); t == "pre-upgrade" || t == "post-upgrade" {
			return true
		}
	}
	return false
}

// RenderChart renders ch with values for rel into objects in Helm's
// install order: the chart's CRDs, its pre-install hooks, its other
// objects, its post-install hooks (see Chart hooks above); it returns the
// hooks it left out, in template order.
func RenderChart(ch *chart.Chart, values map[string]any, rel Release) ([]Object, []Hook, error) {
	kv, err := chartutil.ParseKubeVersion(rel.KubeVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("addons: %s: Kubernetes version %q: %w", rel.Name, rel.KubeVersion, err)
	}
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return nil, nil, fmt.Errorf("addons: chart %s %s requires Kubernetes %s, the cluster runs %s",
			ch.Metadata.Name, ch.Metadata.Version, c, rel.KubeVersion)
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, nil, fmt.Errorf("addons: chart %s dependencies: %w", ch.Metadata.Name, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, nil, fmt.Errorf("addons: chart %s values: %w", ch.Metadata.Name, err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, nil, fmt.Errorf("addons: render chart %s: %w", ch.Metadata.Name, err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, nil, fmt.Errorf("addons: chart %s manifests: %w", ch.Metadata.Name, err)
	}
	// Helm's order of a hook event's hooks (action.hookByWeight): by
	// weight, then name, stable over SortManifests' kind order.
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Weight != hooks[j].Weight {
			return hooks[i].Weight < hooks[j].Weight
		}
		return hooks[i].Name < hooks[j].Name
	})
	var docs, pre, post []string
	for _, crd := range ch.CRDObjects() {
		split := releaseutil.SplitManifests(string(crd.File.Data))
		keys := sortedKeys(split)
		sortManifestKeys(keys)
		for _, k := range keys {
			docs = append(docs, split[k])
		}
	}
	for _, h := range hooks {
		switch {
		case slices.Contains(h.Events, release.HookPreInstall):
			pre = append(pre, h.Manifest)
		case slices.Contains(h.Events, release.HookPostInstall):
			post = append(post, h.Manifest)
		}
	}
	docs = append(docs, pre...)
	for _, m := range manifests {
		docs = append(docs, m.Content)
	}
	docs = append(docs, post...)
	var out []Object
	for _, d := range docs {
		o, err := parseObject(d)
		if err != nil {
			return nil, nil, fmt.Errorf("addons: chart %s: %w", ch.Metadata.Name, err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
	setNamespaces(out, rel.Namespace)
	skipped, err := skippedHooks(files)
	if err != nil {
		return nil, nil, fmt.Errorf("addons: chart %s: %w", ch.Metadata.Name, err)
	}
	return out, skipped, nil
}

// skippedHooks are the hooks of the rendered templates that are neither
// pre-install nor post-install ones (see Chart hooks), in template order.
// They are read from the templates rather than from SortManifests' hooks,
// which leave out (with a log line only) those of a type Helm does not
// know.
func skippedHooks(files map[string]string) ([]Hook, error) {
	var out []Hook
	for _, path := range sortedKeys(files) {
		if strings.HasPrefix(filepath.Base(path), "_") {
			continue // partials, as SortManifests skips them
		}
		split := releaseutil.SplitManifests(files[path])
		keys := sortedKeys(split)
		sortManifestKeys(keys)
		for _, k := range keys {
			if !strings.Contains(split[k], release.HookAnnotation) {
				continue // no hook: parsed with the chart's objects
			}
			o, err := parseObject(split[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if o == nil || HookGroup(o) != GroupSkipped {
				continue
			}
			md, _ := o["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			types, _ := ann[release.HookAnnotation].(string)
			kind, _ := o["kind"].(string)
			out = append(out, Hook{Kind: kind, Name: objectName(o), Types: types})
		}
	}
	return out, nil
}

// Hook groups of an object (HookGroup).
const (
	GroupPreInstall  = -1 // a pre-install hook (whatever its other types)
	GroupObject      = 0  // not a hook
	GroupPostInstall = 1  // a post-install hook that is no pre-install one
	GroupSkipped     = 2  // a hook of other types only, or of a type Helm does not know
)

// HookGroup classifies o by its helm.sh/hook annotation, as Helm does
// (types comma-separated, case and spaces ignored; one type Helm does not
// know makes Helm skip the hook).
func HookGroup(o Object) int {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[release.HookAnnotation]
	if !ok {
		return GroupObject
	}
	types, _ := v.(string)
	var pre, post bool
	for _, t := range strings.Split(types, ",") {
		switch t = strings.ToLower(strings.TrimSpace(t)); t {
		case string(release.HookPreInstall):
			pre = true
		case string(release.HookPostInstall):
			post = true
		case string(release.HookPreUpgrade), string(release.HookPostUpgrade), string(release.HookPreDelete), string(release.HookPostDelete),
			string(release.HookPreRollback), string(release.HookPostRollback), string(release.HookTest), "test-success":
		default:
			return GroupSkipped
		}
	}
	switch {
	case pre:
		return GroupPreInstall
	case post:
		return GroupPostInstall
	}
	return GroupSkipped
}

// parseObject parses one YAML document (nil when it holds none).
func parseObject(doc string) (Object, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	var o Object
	if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
		return nil, fmt.Errorf("bad manifest: %w", err)
	}
	if len(o) == 0 {
		return nil, nil
	}
	if _, ok := o["kind"].(string); !ok {
		return nil, fmt.Errorf("manifest without kind: %.60q", doc)
	}
	return o, nil
}

// clusterScoped are the kinds without a namespace that charts create
// (besides those of the CustomResourceDefinitions rendered with them).
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"StorageClass": true, "CSIDriver": true, "PriorityClass": true, "APIService": true, "PersistentVolume": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "IngressClass": true,
	"RuntimeClass": true, "VolumeSnapshotClass": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "Node": true,
}

// setNamespaces puts ns on every namespaced object that has none.
func setNamespaces(objs []Object, ns string) {
	scoped := map[string]bool{}
	for _, o := range objs {
		if o["kind"] == "CustomResourceDefinition" {
			spec, _ := o["spec"].(map[string]any)
			names, _ := spec["names"].(map[string]any)
			if k, _ := names["kind"].(string); k != "" && spec["scope"] == "Cluster" {
				scoped[k] = true
			}
		}
	}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		if clusterScoped[kind] || scoped[kind] {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			o["metadata"] = md
		}
		if s, _ := md["namespace"].(string); s == "" {
			md["namespace"] = ns
		}
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortManifestKeys orders releaseutil.SplitManifests' keys as the
// documents were.
func sortManifestKeys(keys []string) { sort.Sort(releaseutil.BySplitManifestsOrder(keys)) }
