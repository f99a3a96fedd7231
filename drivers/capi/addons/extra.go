package addons

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// ExtraChart is the chart.yaml of an operator's add-on.
type ExtraChart struct {
	ChartRef `json:",inline"`
	// Namespace of the release (default kube-system).
	Namespace string         `json:"namespace"`
	Values    map[string]any `json:"values"`
}

var extraNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// LoadExtra renders the operator's own add-ons from dir: one folder per
// add-on, named after it, holding either chart.yaml (an ExtraChart: a
// chart in a Helm repository and its values) or manifests.yaml (plain
// manifests, several documents). They are applied after the built-in
// add-ons, in the order of their names. An empty dir means none.
func LoadExtra(ctx context.Context, charts *Charts, dir string, cl Cluster) ([]AddOn, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("addons: extra add-ons: %w", err)
	}
	var out []AddOn
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if !extraNameRE.MatchString(name) {
			return nil, fmt.Errorf("addons: extra add-on %q: the name must be a DNS label of at most 40 characters", name)
		}
		a, err := loadExtraOne(ctx, charts, filepath.Join(dir, name), name, cl)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func loadExtraOne(ctx context.Context, charts *Charts, dir, name string, cl Cluster) (AddOn, error) {
	if raw, err := os.ReadFile(filepath.Join(dir, "chart.yaml")); err == nil {
		var ec ExtraChart
		if err := yaml.UnmarshalStrict(raw, &ec); err != nil {
			return AddOn{}, fmt.Errorf("addons: extra add-on %s: chart.yaml: %w", name, err)
		}
		if ec.Namespace == "" {
			ec.Namespace = "kube-system"
		}
		ch, err := charts.Get(ctx, ec.ChartRef)
		if err != nil {
			return AddOn{}, err
		}
		objs, skipped, err := RenderChart(ch, ec.Values, Release{Name: name, Namespace: ec.Namespace, KubeVersion: cl.KubeVersion})
		if err != nil {
			return AddOn{}, err
		}
		// Its release namespace, as for the built-in add-ons (and as
		// helm install --create-namespace and Cluster API's Helm add-on
		// provider would make it): first, before its hooks and objects.
		if ns := releaseNamespace(objs, ec.Namespace, nil); ns != nil {
			objs = append([]Object{ns}, objs...)
		}
		return AddOn{Name: name, Chart: ec.ChartRef, Objects: objs, Skipped: skipped}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return AddOn{}, fmt.Errorf("addons: extra add-on %s: %w", name, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return AddOn{}, fmt.Errorf("addons: extra add-on %s: neither chart.yaml nor manifests.yaml: %w", name, err)
	}
	split := releaseutil.SplitManifests(string(raw))
	keys := sortedKeys(split)
	sortManifestKeys(keys)
	var objs []Object
	for _, k := range keys {
		o, err := parseObject(split[k])
		if err != nil {
			return AddOn{}, fmt.Errorf("addons: extra add-on %s: %w", name, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	setNamespaces(objs, "kube-system")
	return AddOn{Name: name, Objects: objs}, nil
}
