package addons

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

// TestChartsFromAnOCIRegistry: a chart in an OCI registry (the real
// metrics-server chart, pushed as `helm push` stores it, to an in-test
// distribution server) is pulled with the Helm SDK's registry client,
// checked against the manifest's digest, cached on disk, and rendered as
// one from an HTTP repository.
func TestChartsFromAnOCIRegistry(t *testing.T) {
	reg := addonstest.NewRegistry(t)
	ch, err := loader.Load(filepath.Join(addonstest.ModuleDir(t, metricsModule), "charts/metrics-server"))
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, "mirror/charts", ch)
	ctx := context.Background()
	dir := t.TempDir()
	ref := ChartRef{Repo: "oci://" + reg.Host() + "/mirror/charts", Chart: ch.Metadata.Name, Version: ch.Metadata.Version}
	charts := NewCharts(dir, reg.Server.Client())
	got, err := charts.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Name != "metrics-server" || got.Metadata.Version != ch.Metadata.Version || charts.Fetches() != 1 {
		t.Fatalf("pulled %s@%s, %d fetches", got.Metadata.Name, got.Metadata.Version, charts.Fetches())
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "metrics-server-"+ch.Metadata.Version+".tgz")); len(files) != 1 {
		t.Fatalf("cache %v, want the archive", files)
	}
	// Later uses, and a new cache on the same directory (a restarted
	// conductor), ask the registry nothing.
	blobs := reg.Blobs.Load()
	if _, err := charts.Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	again := NewCharts(dir, reg.Server.Client())
	if _, err := again.Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if reg.Blobs.Load() != blobs || again.Fetches() != 0 {
		t.Errorf("cached chart fetched again: %d blob requests, then %d; %d fetches", blobs, reg.Blobs.Load(), again.Fetches())
	}

	// As a built-in add-on's repository, beside HTTP ones.
	_, s := realRepo(t)
	s.Repos[MetricsServer] = ref.Repo
	s.Versions = map[string]string{MetricsServer: ch.Metadata.Version}
	s.Builtin = []string{"metrics-server"}
	set, err := Render(ctx, NewCharts(t.TempDir(), reg.Server.Client()), s, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	ms := byName(t, set, MetricsServer)
	if ms.Chart.Repo != ref.Repo || find(ms.Objects, "Deployment", "metrics-server") == nil {
		t.Errorf("metrics-server from %s: %d objects", ms.Chart.Repo, len(ms.Objects))
	}
}

// A chart whose layer does not match the manifest's digest, a version the
// registry does not have, and a malformed repository are refused, and
// nothing is cached.
func TestOCIRegistryRefusals(t *testing.T) {
	// The generated stand-in: two versions of one chart, small.
	reg := addonstest.NewRegistry(t)
	good := addonstest.GeneratedCalicoChart("v3.30.3")
	reg.Push(t, "charts", good)
	bad := addonstest.GeneratedCalicoChart("v3.30.4")
	reg.Tamper(reg.Push(t, "charts", bad))
	repo := "oci://" + reg.Host() + "/charts"
	for _, tc := range []struct{ name, repo, version, want string }{
		{"tampered", repo, "v3.30.4", "mismatched digest"},
		{"missing", repo, "v9.9.9", "not found"},
		{"malformed", "oci://" + reg.Host() + "/charts@sha256:00", "v3.30.3", "want oci://host[:port]/path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := NewCharts(dir, reg.Server.Client()).Get(context.Background(),
				ChartRef{Repo: tc.repo, Chart: good.Metadata.Name, Version: tc.version})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			t.Logf("refused: %v", err)
			if files, _ := filepath.Glob(filepath.Join(dir, "*", "*.tgz")); len(files) != 0 {
				t.Errorf("cached: %v", files)
			}
		})
	}
}

// A pull from a registry that stalls ends, with its requests, when the
// caller's context does: the registry sees the stalled request abandoned
// at once, not at the HTTP client's timeout, and nothing is cached; a
// later Get, the registry answering again, pulls the chart.
func TestOCIPullEndsWithTheContext(t *testing.T) {
	// The generated stand-in: any small chart does.
	reg := addonstest.NewRegistry(t)
	ch := addonstest.GeneratedCalicoChart("v3.30.3")
	reg.Push(t, "charts", ch)
	var slow atomic.Bool
	slow.Store(true)
	stalled, abandoned := make(chan struct{}, 8), make(chan struct{}, 8)
	reg.Hold = func(req *http.Request) {
		if !slow.Load() {
			return
		}
		stalled <- struct{}{}
		select {
		case <-req.Context().Done():
			abandoned <- struct{}{}
		case <-time.After(10 * time.Second): // so that the server's Close does not wait for the client's timeout
		}
	}
	dir := t.TempDir()
	charts := NewCharts(dir, reg.Server.Client()) // requests would time out after two minutes
	ref := ChartRef{Repo: "oci://" + reg.Host() + "/charts", Chart: ch.Metadata.Name, Version: ch.Metadata.Version}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := charts.Get(ctx, ref)
		errc <- err
	}()
	select {
	case <-stalled:
	case err := <-errc:
		t.Fatalf("Get returned %v before the registry stalled", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no blob request reached the registry")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get did not return when its context ended")
	}
	select {
	case <-abandoned:
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled request went on after the caller's context ended")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "*.tgz")); len(files) != 0 || charts.Fetches() != 0 {
		t.Fatalf("cached %v, %d fetches", files, charts.Fetches())
	}

	slow.Store(false)
	got, err := charts.Get(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Version != ch.Metadata.Version || charts.Fetches() != 1 {
		t.Errorf("pulled %s, %d fetches", got.Metadata.Version, charts.Fetches())
	}
}
