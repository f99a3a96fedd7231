package addons

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/yaml"
)

// Parts serialises objs as YAML documents in order, in parts of at most max
// bytes each (a part is one resource-set Secret; a Secret holds at most
// 1 MiB). An object is never split across parts. A chart's pre-install and
// post-install hooks (HookGroup) are in parts of their own, one per hook
// weight, so that Cluster API's sort by kind within a Secret keeps them
// where Helm's order puts them (see Chart hooks in render.go). A
// CustomResourceDefinition too large for a part alone loses the
// descriptions of its schemas (as controller-gen's crd:maxDescLen=0 does:
// the API server validates and prunes the same way without them; only
// `kubectl explain` has less to say); an object still too large is
// refused, named, with its size.
func Parts(objs []Object, max int) ([][]byte, error) {
	var parts [][]byte
	var cur []byte
	group := ""
	for _, o := range objs {
		if g := partGroup(o); g != group {
			if len(cur) > 0 {
				parts = append(parts, cur)
				cur = nil
			}
			group = g
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		if len(b) > max && o["kind"] == "CustomResourceDefinition" {
			before := len(b)
			b, err = yaml.Marshal(withoutDescriptions(o))
			if err != nil {
				return nil, err
			}
			if len(b) > max {
				return nil, fmt.Errorf("%s %s is %d bytes (%d without its schema descriptions), more than the %d a resource-set Secret holds",
					o["kind"], objectName(o), before, len(b), max)
			}
		}
		if len(b) > max {
			return nil, fmt.Errorf("%s %s is %d bytes, more than the %d a resource-set Secret holds", o["kind"], objectName(o), len(b), max)
		}
		if len(cur) > 0 && len(cur)+len("---\n")+len(b) > max {
			parts = append(parts, cur)
			cur = nil
		}
		if len(cur) > 0 {
			cur = append(cur, "---\n"...)
		}
		cur = append(cur, b...)
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts, nil
}

// partGroup is the group of objects o may share a part with: the chart's
// other objects, or the hooks of its install hook group and weight.
func partGroup(o Object) string {
	g := HookGroup(o)
	if g == GroupObject {
		return ""
	}
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	w, _ := ann[release.HookWeightAnnotation].(string)
	return fmt.Sprintf("%d/%s", g, strings.TrimSpace(w))
}

func objectName(o Object) string {
	md, _ := o["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// withoutDescriptions returns a copy of the CustomResourceDefinition crd
// whose versions' OpenAPI schemas carry no description. A property that is
// named "description" stays: only the keyword goes.
func withoutDescriptions(crd Object) Object {
	out := deepCopy(crd).(map[string]any)
	spec, _ := out["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		schema, _ := vm["schema"].(map[string]any)
		if s, ok := schema["openAPIV3Schema"].(map[string]any); ok {
			stripSchema(s)
		}
	}
	if v, ok := spec["validation"].(map[string]any); ok { // apiextensions/v1beta1
		if s, ok := v["openAPIV3Schema"].(map[string]any); ok {
			stripSchema(s)
		}
	}
	return out
}

// stripSchema drops the description keyword of the JSON schema s and of
// every schema in it.
func stripSchema(s map[string]any) {
	delete(s, "description")
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		if m, ok := s[k].(map[string]any); ok {
			for _, sub := range m {
				if sm, ok := sub.(map[string]any); ok {
					stripSchema(sm)
				}
			}
		}
	}
	for _, k := range []string{"additionalProperties", "additionalItems", "items", "not"} {
		if sm, ok := s[k].(map[string]any); ok {
			stripSchema(sm)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "items"} {
		if a, ok := s[k].([]any); ok {
			for _, sub := range a {
				if sm, ok := sub.(map[string]any); ok {
					stripSchema(sm)
				}
			}
		}
	}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = deepCopy(x)
		}
		return a
	default:
		return v
	}
}
