package addons

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
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

// RenderChart renders ch with values for rel, as `helm template` would, into
// objects in Helm's install order (the chart's CRDs first). Hooks are left
// out: nothing runs them, and the charts installed here need none to work
// (the tests render each one).
func RenderChart(ch *chart.Chart, values map[string]any, rel Release) ([]Object, error) {
	kv, err := chartutil.ParseKubeVersion(rel.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("addons: %s: Kubernetes version %q: %w", rel.Name, rel.KubeVersion, err)
	}
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return nil, fmt.Errorf("addons: chart %s %s requires Kubernetes %s, the cluster runs %s",
			ch.Metadata.Name, ch.Metadata.Version, c, rel.KubeVersion)
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, fmt.Errorf("addons: chart %s dependencies: %w", ch.Metadata.Name, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("addons: chart %s values: %w", ch.Metadata.Name, err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("addons: render chart %s: %w", ch.Metadata.Name, err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("addons: chart %s manifests: %w", ch.Metadata.Name, err)
	}
	var docs []string
	for _, crd := range ch.CRDObjects() {
		split := releaseutil.SplitManifests(string(crd.File.Data))
		keys := sortedKeys(split)
		sortManifestKeys(keys)
		for _, k := range keys {
			docs = append(docs, split[k])
		}
	}
	for _, m := range manifests {
		docs = append(docs, m.Content)
	}
	var out []Object
	for _, d := range docs {
		o, err := parseObject(d)
		if err != nil {
			return nil, fmt.Errorf("addons: chart %s: %w", ch.Metadata.Name, err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
	setNamespaces(out, rel.Namespace)
	return out, nil
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
