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
		w.Write(b)
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
	r.Add(t, ch, "")
	return ch
}

// GeneratedCalicoChart is a small stand-in for Tigera's tigera-operator
// chart (its Go module is not served by the module proxy): the operator
// Deployment and the Installation built from the same values
// (installation.calicoNetwork, installation.registry/imagePath).
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
