package addons

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

const testMaxPart = 900 << 10

// bigCRD is a CustomResourceDefinition of kind whose schema has n
// properties, each described in desc bytes, and one property named
// "description" (a field, not the keyword).
func bigCRD(kind string, n, desc int) string {
	var b strings.Builder
	plural := strings.ToLower(kind) + "s"
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.operator.tigera.io
spec:
  group: operator.tigera.io
  names: {kind: %s, plural: %s, listKind: %sList, singular: %s}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: %s is a test kind.
        type: object
        properties:
          description:
            description: a field named description
            type: string
          spec:
            type: object
            description: the spec
            properties:
`, plural, kind, plural, kind, strings.ToLower(kind), kind)
	for i := range n {
		fmt.Fprintf(&b, "              field%d:\n                type: array\n                description: %s\n                items:\n                  type: object\n                  description: item %d\n                  properties:\n                    name: {type: string, description: name %d}\n",
			i, strings.Repeat("d", desc), i, i)
	}
	return b.String()
}

// multiMBCalico is a tigera-operator stand-in whose CRDs make it several
// MiB: one CRD of ~1.2 MiB mostly descriptions (as Installation is), four
// of ~500 KiB, and the operator's Deployment and Installation. A stand-in
// because the real chart of calicoModule (v3.28) fits one Secret once its
// Installation CRD is shrunk (TestRenderRealTigeraOperatorChart), and the
// split over several Secrets needs a larger chart (the v3.30 chart of the
// version table, which adds the Goldmane, Whisker, GatewayAPI and
// ManagementClusterConnection CRDs, has no module the tests can fetch).
func multiMBCalico(version string, extra ...*chart.File) *chart.Chart {
	ch := addonstest.GeneratedCalicoChart(version)
	ch.Files = append(ch.Files, &chart.File{Name: "crds/installations.yaml", Data: []byte(bigCRD("Installation", 1200, 1000))})
	for _, k := range []string{"APIServer", "Goldmane", "ImageSet", "Whisker"} {
		ch.Files = append(ch.Files, &chart.File{Name: "crds/" + strings.ToLower(k) + ".yaml", Data: []byte(bigCRD(k, 1000, 400))})
	}
	ch.Files = append(ch.Files, extra...)
	return ch
}

type kindName struct{ Kind, Name string }

// TestPartsOfAMultiMiBChart renders a multi-MiB chart (through a Helm
// repository, as calico is) and splits it: every part fits a Secret, the
// objects read back by Cluster API's own YAML reader are the rendered ones
// in order (the release namespace, then the CRDs, first), none split, and
// only the CRD too large for a Secret lost its descriptions.
func TestPartsOfAMultiMiBChart(t *testing.T) {
	repo := addonstest.NewRepo(t)
	repo.Add(t, multiMBCalico("v3.30.3"), "")
	s := Settings{Repos: map[string]string{Calico: repo.Server.URL}, Versions: map[string]string{Calico: "v3.30.3"}, Builtin: []string{"cni"}}
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	calico := byName(t, set, Calico)
	var want []kindName
	total := 0
	for _, o := range calico.Objects {
		want = append(want, kindName{o["kind"].(string), objectName(o)})
		b, _ := yaml.Marshal(o)
		total += len(b)
	}
	if total < 3<<20 {
		t.Fatalf("the chart renders to %d bytes; the test wants several MiB", total)
	}
	parts, err := Parts(calico.Objects, testMaxPart)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 4 {
		t.Errorf("%d bytes in %d parts", total, len(parts))
	}
	var got []kindName
	for i, p := range parts {
		if len(p) > testMaxPart {
			t.Errorf("part %d: %d bytes", i, len(p))
		}
		for _, u := range readDocs(t, p) {
			got = append(got, kindName{u["kind"].(string), objectName(u)})
			if u["kind"] != "CustomResourceDefinition" {
				continue
			}
			schema := mustJSON(u["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"])
			described := strings.Contains(schema, `"description":"the spec"`)
			if wantDescribed := objectName(u) != "installations.operator.tigera.io"; described != wantDescribed {
				t.Errorf("%s: descriptions kept %v, want %v", objectName(u), described, wantDescribed)
			}
			if !strings.Contains(schema, `"properties":{"description":{`) {
				t.Errorf("%s: the property named description was dropped", objectName(u))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("objects read back %v\nwant %v", got, want)
	}
	if want[0] != (kindName{"Namespace", "tigera-operator"}) || want[1].Kind != "CustomResourceDefinition" || want[len(want)-1].Kind == "CustomResourceDefinition" {
		t.Errorf("not the release namespace, then the CRDs, first: %v", want)
	}
}

// readDocs reads a part as Cluster API's ClusterResourceSet controller does
// (sigs.k8s.io/cluster-api/util/yaml.ToUnstructured: apimachinery's YAML
// reader, one document at a time).
func readDocs(t *testing.T, part []byte) []Object {
	t.Helper()
	r := apiyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(part)))
	var out []Object
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var o Object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatalf("a document does not parse: %v", err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
}

// TestPartsRefuseWhatNoSecretHolds: a CRD too large even without its
// descriptions, and any other object too large, are refused by name.
func TestPartsRefuseWhatNoSecretHolds(t *testing.T) {
	var crd Object
	if err := yaml.Unmarshal([]byte(bigCRD("Huge", 6000, 5)), &crd); err != nil {
		t.Fatal(err)
	}
	_, err := Parts([]Object{crd}, testMaxPart)
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition huges.operator.tigera.io") ||
		!strings.Contains(err.Error(), "without its schema descriptions") {
		t.Errorf("a CRD too large without descriptions: %v", err)
	}
	cm := Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"},
		"data": map[string]any{"description": strings.Repeat("x", 1<<20)}}
	if _, err := Parts([]Object{cm}, testMaxPart); err == nil || !strings.Contains(err.Error(), "ConfigMap big") {
		t.Errorf("a ConfigMap too large: %v", err)
	}
}
