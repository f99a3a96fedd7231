package apitest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/openstack/magnum-conductor/drivers/capi/internal/apitest"
)

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

func classOf(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var class *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterClass" {
			if class != nil {
				t.Fatal("two ClusterClasses")
			}
			class = o
		}
	}
	if class == nil {
		t.Fatal("no ClusterClass")
	}
	return class
}

// refs lists every {apiVersion, kind, name} reference in the ClusterClass's
// spec outside its patches.
func refs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if k, ok := v["kind"].(string); ok {
			if n, ok := v["name"].(string); ok {
				*out = append(*out, v["apiVersion"].(string)+" "+k+" "+n)
			}
		}
		for key, e := range v {
			if key != "patches" {
				refs(e, out)
			}
		}
	case []any:
		for _, e := range v {
			refs(e, out)
		}
	}
}

// Every released bundle has an in-memory variant with the same class name
// and variables, whose references all resolve to objects of the variant,
// with no OpenStack kind and no patch of an infrastructure kind left.
func TestInMemoryClassOfEveryReleasedBundle(t *testing.T) {
	bundles, err := apitest.ReleasedClasses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for version, bundle := range bundles {
		t.Run(version, func(t *testing.T) {
			variant, err := apitest.InMemoryClass(bundle)
			if err != nil {
				t.Fatal(err)
			}
			orig, dev := decode(t, bundle), decode(t, variant)
			if len(orig) != len(dev) {
				t.Fatalf("variant has %d objects, bundle %d", len(dev), len(orig))
			}
			oc, dc := classOf(t, orig), classOf(t, dev)
			if oc.GetName() != dc.GetName() {
				t.Errorf("class name %q, want %q", dc.GetName(), oc.GetName())
			}
			ov, _, _ := unstructured.NestedSlice(oc.Object, "spec", "variables")
			dv, _, _ := unstructured.NestedSlice(dc.Object, "spec", "variables")
			if len(ov) == 0 || !reflect.DeepEqual(ov, dv) {
				t.Errorf("variables differ:\n%v\n%v", dv, ov)
			}
			have := map[string]bool{}
			for _, o := range dev {
				if strings.Contains(o.GetKind(), "OpenStack") {
					t.Errorf("variant keeps %s %s", o.GetKind(), o.GetName())
				}
				have[o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetName()] = true
				if o.GetKind() == apitest.DevMachineTemplate || o.GetKind() == apitest.DevClusterTemplate {
					if _, found, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec", "backend", "inMemory"); !found {
						t.Errorf("%s %s has no backend.inMemory", o.GetKind(), o.GetName())
					}
				}
			}
			var rs []string
			refs(dc.Object["spec"], &rs)
			if len(rs) < 4 {
				t.Fatalf("only %d template references in the variant: %v", len(rs), rs)
			}
			for _, r := range rs {
				if !have[r] {
					t.Errorf("the variant's ClusterClass references %s, which it does not hold", r)
				}
			}
			patches, _, _ := unstructured.NestedSlice(dc.Object, "spec", "patches")
			for _, p := range patches {
				for _, d := range p.(map[string]any)["definitions"].([]any) {
					sel := d.(map[string]any)["selector"].(map[string]any)
					if strings.HasPrefix(sel["apiVersion"].(string), apitest.InfrastructureGroup) {
						t.Errorf("patch %v still selects %v", p.(map[string]any)["name"], sel["kind"])
					}
				}
			}
		})
	}
}

func TestInMemoryClassRefusesABundleWithoutAClass(t *testing.T) {
	_, err := apitest.InMemoryClass([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "want one ClusterClass, found 0") {
		t.Fatalf("err = %v", err)
	}
}
