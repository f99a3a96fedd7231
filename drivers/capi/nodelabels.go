package capi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openstack/magnum-conductor/api/objects"
)

// kubeletLabelAllowed reports whether the kubelet may set label key on its
// own Node (the NodeRestriction admission plugin refuses the kubernetes.io
// and k8s.io domains but for node.kubernetes.io and kubelet.kubernetes.io).
func kubeletLabelAllowed(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	restricted := func(d string) bool {
		return d == "kubernetes.io" || strings.HasSuffix(d, ".kubernetes.io") || d == "k8s.io" || strings.HasSuffix(d, ".k8s.io")
	}
	allowed := func(d string) bool {
		return d == "node.kubernetes.io" || strings.HasSuffix(d, ".node.kubernetes.io") ||
			d == "kubelet.kubernetes.io" || strings.HasSuffix(d, ".kubelet.kubernetes.io")
	}
	return !restricted(domain) || allowed(domain)
}

// nodeLabelsValue checks the node_labels label (key=value pairs) and
// returns the kubelet's --node-labels value.
func nodeLabelsValue(items []string) (string, error) {
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return "", fmt.Errorf("node label %q: want key=value", item)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return "", fmt.Errorf("node label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return "", fmt.Errorf("node label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
		if !kubeletLabelAllowed(k) {
			return "", fmt.Errorf("node label key %q: the kubelet may not set labels of that domain", k)
		}
	}
	return strings.Join(items, ","), nil
}

// nodeTaintsValue checks the node_taints label (key[=value]:Effect items)
// and returns the taints of kubeadm's nodeRegistration.
func nodeTaintsValue(items []string) ([]any, error) {
	out := []any{}
	for _, item := range items {
		kv, effect, ok := strings.Cut(item, ":")
		switch {
		case !ok:
			return nil, fmt.Errorf("node taint %q: want key[=value]:Effect", item)
		case effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute":
			return nil, fmt.Errorf("node taint %q: the effect must be NoSchedule, PreferNoSchedule or NoExecute", item)
		}
		k, v, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("node taint key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("node taint %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
		t := map[string]any{"key": k, "effect": effect}
		if v != "" {
			t["value"] = v
		}
		out = append(out, t)
	}
	return out, nil
}

// nodeLabelVariables are the nodeLabels and nodeTaints variables of
// node_labels and node_taints items; where names their owner in errors.
func nodeLabelVariables(labels, taints []string, where string) ([]namedValue, error) {
	nl, err := nodeLabelsValue(labels)
	if err != nil {
		return nil, invalid("Invalid label node_labels of %s: %v.", where, err)
	}
	nt, err := nodeTaintsValue(taints)
	if err != nil {
		return nil, invalid("Invalid label node_taints of %s: %v.", where, err)
	}
	return []namedValue{{"nodeLabels", nl}, {"nodeTaints", nt}}, nil
}

// nodeGroupLabelVariables are a nodegroup's own node_labels and
// node_taints, each only when the nodegroup sets it (else the cluster's
// applies).
func nodeGroupLabelVariables(ng *objects.NodeGroup) ([]namedValue, error) {
	lists := map[string][]string{}
	for _, name := range []string{"node_labels", "node_taints"} {
		raw, ok := ng.Labels[name]
		if !ok {
			continue
		}
		v, err := (LabelSpec{Type: LabelPairs}).parse(raw)
		if err != nil {
			return nil, invalid("Invalid value %q for label %s of nodegroup %s: %v.", raw, name, ng.Name, err)
		}
		lists[name] = v.([]string)
	}
	nv, err := nodeLabelVariables(lists["node_labels"], lists["node_taints"], "nodegroup "+ng.Name)
	if err != nil {
		return nil, err
	}
	var out []namedValue
	if _, ok := lists["node_labels"]; ok {
		out = append(out, nv[0])
	}
	if _, ok := lists["node_taints"]; ok {
		out = append(out, nv[1])
	}
	return out, nil
}
