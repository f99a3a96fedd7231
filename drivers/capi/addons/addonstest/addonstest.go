// Package addonstest serves Helm repositories in tests: real charts from
// the Go modules of their upstream projects (found with go mod download),
// packaged with the Helm SDK, under an index.yaml.
package addonstest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// ModuleDir is where the Go module cache holds mod@ver (the upstream
// repositories whose modules carry their real Helm charts).
func ModuleDir(t *testing.T, modVer string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", modVer).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", modVer, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s", modVer, out)
	}
	return m.Dir
}

// Repo is a Helm repository served by httptest: index.yaml and the
// packaged charts, with a count of the requests for archives.
type Repo struct {
	Server   *httptest.Server
	dir      string
	index    map[string][]map[string]any
	Archives atomic.Int32 // requests for archives
}

func NewRepo(t *testing.T) *Repo {
	t.Helper()
	r := &Repo{dir: t.TempDir(), index: map[string][]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": r.index})
		_, _ = w.Write(b) // a failed write is the client's short read
	})
	mux.HandleFunc("/charts/", func(w http.ResponseWriter, req *http.Request) {
		r.Archives.Add(1)
		http.ServeFile(w, req, filepath.Join(r.dir, filepath.Base(req.URL.Path)))
	})
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Server.Close)
	return r
}

// Add packages ch with the Helm SDK and lists it in the index (digest
// overrides the archive's real one when not empty).
func (r *Repo) Add(t *testing.T, ch *chart.Chart, digest string) {
	t.Helper()
	p, err := chartutil.Save(ch, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if digest == "" {
		sum := sha256.Sum256(b)
		digest = hex.EncodeToString(sum[:])
	}
	r.index[ch.Metadata.Name] = append(r.index[ch.Metadata.Name], map[string]any{
		"name": ch.Metadata.Name, "version": ch.Metadata.Version, "digest": digest,
		"urls": []string{"charts/" + filepath.Base(p)}})
}

// AddDir loads the chart in dir and adds it.
func (r *Repo) AddDir(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("load chart %s: %v", dir, err)
	}
	if ch.Metadata.Name == "openstack-cloud-controller-manager" {
		// Its Chart.yaml needs Bitnami's "common" library chart, which the
		// module does not carry (the published archive bundles it): a
		// library chart defining the one template the chart includes.
		ch.AddDependency(&chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "common", Version: "2.14.1", Type: "library"},
			Templates: []*chart.File{{Name: "templates/_labels.tpl", Data: []byte(
				`{{- define "common.labels.standard" -}}` + "\n" +
					`app.kubernetes.io/name: {{ .Chart.Name }}` + "\n" +
					`app.kubernetes.io/instance: {{ .Release.Name }}` + "\n" +
					`{{- end -}}`)}},
		})
	}
	if ch.Metadata.Name == "tigera-operator" {
		asReleased(t, ch, dir)
	}
	r.Add(t, ch, "")
	return ch
}

// asReleased makes Calico's tigera-operator chart, loaded from dir in
// the github.com/projectcalico/calico module, what Calico's release
// publishes. The release (`make chart`: helm package --version
// $(GIT_VERSION) --app-version $(GIT_VERSION), run on the release tag)
// packages a checkout, where crds/calico is a symbolic link to
// libcalico-go/config/crd, the crd.projectcalico.org CRDs, which Helm's
// loader follows; a module zip holds no symbolic links, so they are read
// from their directory in the module. The chart's version in Chart.yaml is
// a placeholder (v0.0): the release's is the Calico version the branch
// releases, which the release tooling writes into charts/calico/values.yaml
// (version:) with the image tags of charts/tigera-operator/values.yaml.
// Nothing is copied into this repository: the chart is assembled from the
// module cache at each run.
func asReleased(t *testing.T, ch *chart.Chart, dir string) {
	t.Helper()
	root := filepath.Join(dir, "..", "..")
	crdDir := filepath.Join(root, "libcalico-go", "config", "crd")
	entries, err := os.ReadDir(crdDir)
	if err != nil {
		t.Fatalf("tigera-operator chart: crds/calico (a link to libcalico-go/config/crd): %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(crdDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		ch.Files = append(ch.Files, &chart.File{Name: "crds/calico/" + e.Name(), Data: b})
		n++
	}
	if n == 0 {
		t.Fatalf("tigera-operator chart: no CRD in %s", crdDir)
	}
	// In the order Helm's loader walks a directory, as `helm package`
	// would have read them.
	sort.SliceStable(ch.Files, func(i, j int) bool { return ch.Files[i].Name < ch.Files[j].Name })
	b, err := os.ReadFile(filepath.Join(root, "charts", "calico", "values.yaml"))
	if err != nil {
		t.Fatalf("tigera-operator chart: the release's version: %v", err)
	}
	var v struct{ Version string }
	if err := yaml.Unmarshal(b, &v); err != nil || !strings.HasPrefix(v.Version, "v3.") {
		t.Fatalf("tigera-operator chart: charts/calico/values.yaml version %q: %v", v.Version, err)
	}
	ch.Metadata.Version, ch.Metadata.AppVersion = v.Version, v.Version
}

// GeneratedCalicoChart is a small stand-in for Tigera's tigera-operator
// chart: the operator Deployment and the Installation built from the same
// values (installation.calicoNetwork, installation.registry/imagePath).
// The real chart is served from its module by AddDir and is what the
// rendering tests use; the stand-in is left for what the real one cannot
// give: any version number (several versions of one chart, one refusing a
// Kubernetes version: the real chart has no kubeVersion constraint),
// CRDs made as large as a test needs (the real ones fit one Secret), and a
// small archive for the OCI registry tests.
func GeneratedCalicoChart(version string) *chart.Chart {
	values := "installation:\n  enabled: true\ntigeraOperator:\n  image: tigera/operator\n  registry: quay.io\n  version: v1.38.6\n"
	return &chart.Chart{
		Raw:      []*chart.File{{Name: "values.yaml", Data: []byte(values)}},
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "tigera-operator", Version: version, AppVersion: version},
		Templates: []*chart.File{
			{Name: "templates/operator.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: tigera-operator
spec:
  selector: {matchLabels: {name: tigera-operator}}
  template:
    metadata: {labels: {name: tigera-operator}}
    spec:
      containers:
      - name: tigera-operator
        image: {{ .Values.tigeraOperator.registry }}/{{ .Values.tigeraOperator.image }}:{{ .Values.tigeraOperator.version }}
`)},
			{Name: "templates/installation.yaml", Data: []byte(`{{- if .Values.installation.enabled }}
apiVersion: operator.tigera.io/v1
kind: Installation
metadata:
  name: default
spec:
{{ omit .Values.installation "enabled" | toYaml | indent 2 }}
{{- end }}
`)},
		},
	}
}

// HookedChart (chart hooked 1.0.0) is a small chart with a CRD, two objects, and hooks of every
// kind: pre-install and post-install ones of several weights (one of
// both, one also pre-upgrade), and hooks a one-shot install has no moment
// for (upgrade, delete, rollback, test, and a Helm 2 type Helm skips).
func HookedChart() *chart.Chart {
	hook := func(kind, name, types, weight string) string {
		w := ""
		if weight != "" {
			w = "\n    helm.sh/hook-weight: \"" + weight + "\""
		}
		api := "batch/v1"
		if kind != "Job" {
			api = "v1"
		}
		return "apiVersion: " + api + "\nkind: " + kind + "\nmetadata:\n  name: " + name +
			"\n  annotations:\n    helm.sh/hook: " + types + w + "\n    helm.sh/hook-delete-policy: hook-succeeded\n"
	}
	hooks := strings.Join([]string{
		hook("Job", "pre-b", "pre-install", "5"),
		hook("Job", "pre-a", "pre-install", "5"),
		hook("ServiceAccount", "pre-sa", "pre-install,pre-upgrade", "-5"),
		hook("Job", "both", "post-install, Pre-Install", ""),
		hook("Job", "post", "post-install", "1"),
		hook("ConfigMap", "post-cm", "post-install,post-upgrade", "-1"),
		hook("Job", "upgrade", "pre-upgrade", ""),
		hook("Job", "cleanup", "pre-delete,post-delete", ""),
		hook("Job", "rollback", "post-rollback", "3"),
		hook("Job", "legacy", "crd-install", ""),
	}, "---\n")
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "hooked", Version: "1.0.0"},
		Files: []*chart.File{{Name: "crds/widgets.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`)}},
		Templates: []*chart.File{
			{Name: "templates/app.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: a, image: registry.example/app:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
`)},
			{Name: "templates/hooks.yaml", Data: []byte(hooks)},
			{Name: "templates/tests/test-connection.yaml", Data: []byte(hook("Pod", "hooked-test", "test", ""))},
		},
	}
}

// HookedExtraDir serves HookedChart from a new repository and returns an
// extra add-ons directory (an operator's add-ons, see addons.LoadExtra)
// naming it: hooked/chart.yaml, chart hooked 1.0.0, namespace site.
func HookedExtraDir(t *testing.T) string {
	t.Helper()
	repo := NewRepo(t)
	repo.Add(t, HookedChart(), "")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hooked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hooked", "chart.yaml"),
		[]byte("repo: "+repo.Server.URL+"\nchart: hooked\nversion: 1.0.0\nnamespace: site\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
