package addons

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestExampleSiteAddOnsLoad: every example site add-on (examples/addons)
// is a folder LoadExtra accepts: a valid name and a chart.yaml that reads
// strictly as an ExtraChart naming a repository, chart and version.
func TestExampleSiteAddOnsLoad(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "addons", "*", "chart.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example add-ons found (%v)", err)
	}
	for _, p := range dirs {
		name := filepath.Base(filepath.Dir(p))
		if !extraNameRE.MatchString(name) {
			t.Errorf("example add-on %q: not a valid add-on name", name)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ec ExtraChart
		if err := yaml.UnmarshalStrict(raw, &ec); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if ec.Repo == "" || ec.Chart == "" || ec.Version == "" || ec.Namespace == "" {
			t.Errorf("%s: %+v, want a repository, chart, version and namespace", p, ec)
		}
	}
}
