package addons

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/drivers/capi/addons/addonstest"
)

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// labels is a Labels from a map (bools as "true"/"false").
type labels map[string]string

func (l labels) String(n string) string { return l[n] }
func (l labels) Bool(n string) (bool, bool) {
	v, ok := l[n]
	return v == "true", ok
}

const (
	cpoModule     = "k8s.io/cloud-provider-openstack@v1.34.1"
	ciliumModule  = "github.com/cilium/cilium@v1.18.2"
	metricsModule = "sigs.k8s.io/metrics-server@v0.8.0"
)

// realRepo serves the real upstream charts (from their Go modules) and a
// generated calico chart.
func realRepo(t *testing.T) (*addonstest.Repo, Settings) {
	t.Helper()
	r := addonstest.NewRepo(t)
	cpo := addonstest.ModuleDir(t, cpoModule)
	r.AddDir(t, filepath.Join(cpo, "charts/openstack-cloud-controller-manager"))
	r.AddDir(t, filepath.Join(cpo, "charts/cinder-csi-plugin"))
	r.AddDir(t, filepath.Join(cpo, "charts/manila-csi-plugin"))
	r.AddDir(t, filepath.Join(addonstest.ModuleDir(t, ciliumModule), "install/kubernetes/cilium"))
	r.AddDir(t, filepath.Join(addonstest.ModuleDir(t, metricsModule), "charts/metrics-server"))
	r.Add(t, addonstest.GeneratedCalicoChart("v3.30.3"), "")
	s := Settings{Repos: map[string]string{}}
	for _, n := range Names {
		s.Repos[n] = r.Server.URL
	}
	return r, s
}

func testCluster(l labels) Cluster {
	return Cluster{Name: "k8s-abc123", KubeVersion: "v1.34.1", PodCIDR: "10.100.0.0/16", Labels: l,
		Credential: Credential{AuthURL: "https://keystone.example/v3", ID: "cred-id", Secret: "s3cr3t-value",
			Region: "RegionOne", CACert: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}}
}

func find(objs []Object, kind, name string) Object {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			return o
		}
	}
	return nil
}

func byName(t *testing.T, set []AddOn, name string) AddOn {
	t.Helper()
	for _, a := range set {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("add-on %s not rendered; have %v", name, names(set))
	return AddOn{}
}

func names(set []AddOn) []string {
	var out []string
	for _, a := range set {
		out = append(out, a.Name)
	}
	return out
}

func container(t *testing.T, o Object, name string) map[string]any {
	t.Helper()
	for _, s := range podSpecs(o) {
		for _, c := range s["containers"].([]any) {
			if cm := c.(map[string]any); cm["name"] == name {
				return cm
			}
		}
	}
	t.Fatalf("no container %s in %v", name, o["metadata"])
	return nil
}

func envValue(c map[string]any, name string) string {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if em := e.(map[string]any); em["name"] == name {
			s, _ := em["value"].(string)
			return s
		}
	}
	return ""
}

func hasArg(c map[string]any, arg string) bool {
	args, _ := c["args"].([]any)
	return slices.Contains(args, any(arg))
}

// TestRenderRealUpstreamCharts renders the real cloud-provider-openstack,
// cilium and metrics-server charts, fetched from a Helm repository, with
// the values a cluster's labels give.
func TestRenderRealUpstreamCharts(t *testing.T) {
	repo, s := realRepo(t)
	s.Versions = map[string]string{CloudProvider: "2.34.0", CinderCSI: "2.34.0", ManilaCSI: "2.34.0", Cilium: "1.18.2", MetricsServer: "3.12.2"}
	charts := NewCharts(t.TempDir(), nil)
	cl := testCluster(labels{"network_driver": "cilium", "manila_csi_enabled": "true", "octavia_provider": "ovn"})
	set, err := Render(context.Background(), charts, s, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(set), []string{"cloud-config", Cilium, CloudProvider, CinderCSI, ManilaCSI, MetricsServer, KeystoneAuth}; !slices.Equal(got, want) {
		t.Fatalf("add-ons %v, want %v", got, want)
	}

	cc := byName(t, set, "cloud-config").Objects[0]
	conf := cc["stringData"].(map[string]any)["cloud.conf"].(string)
	for _, want := range []string{"application-credential-id=cred-id", "application-credential-secret=s3cr3t-value",
		"lb-provider=ovn", "lb-method=SOURCE_IP_PORT", "create-monitor=true", "ca-file=/etc/config/ca.crt", "region=RegionOne"} {
		if !strings.Contains(conf, want) {
			t.Errorf("cloud.conf lacks %q:\n%s", want, conf)
		}
	}
	// The credential is in the cloud-config Secret only, never in a
	// chart's values or objects.
	for _, a := range set[1:] {
		b, _ := yaml.Marshal(a.Objects)
		if strings.Contains(string(b), "s3cr3t-value") {
			t.Errorf("add-on %s carries the credential secret", a.Name)
		}
	}

	occm := byName(t, set, CloudProvider).Objects
	ds := find(occm, "DaemonSet", "openstack-cloud-controller-manager")
	if ds == nil {
		t.Fatalf("no OCCM DaemonSet in %d objects", len(occm))
	}
	c := container(t, ds, "openstack-cloud-controller-manager")
	if !hasArg(c, "--cluster-name=$(CLUSTER_NAME)") || envValue(c, "CLUSTER_NAME") != "k8s-abc123" {
		t.Errorf("OCCM cluster name: args %v, CLUSTER_NAME %q", c["args"], envValue(c, "CLUSTER_NAME"))
	}
	if !strings.Contains(mustJSON(ds), `"secretName":"cloud-config"`) {
		t.Errorf("OCCM does not mount the cloud-config Secret")
	}
	if find(occm, "Secret", "cloud-config") != nil {
		t.Errorf("the OCCM chart wrote its own cloud-config Secret")
	}
	if ns := ds["metadata"].(map[string]any)["namespace"]; ns != "kube-system" {
		t.Errorf("OCCM namespace %v", ns)
	}

	cinder := byName(t, set, CinderCSI).Objects
	var ctrl Object
	for _, o := range cinder {
		if o["kind"] == "Deployment" {
			ctrl = o
		}
	}
	if ctrl == nil {
		t.Fatal("no Cinder CSI controller Deployment")
	}
	cp := container(t, ctrl, "cinder-csi-plugin")
	if !hasArg(cp, "--cluster=$(CLUSTER_NAME)") || envValue(cp, "CLUSTER_NAME") != "k8s-abc123" {
		t.Errorf("Cinder CSI cluster: args %v, CLUSTER_NAME %q", cp["args"], envValue(cp, "CLUSTER_NAME"))
	}
	sc := find(cinder, "StorageClass", "csi-cinder-sc-delete")
	if sc == nil || mustJSON(sc["metadata"]) == "" || !strings.Contains(mustJSON(sc["metadata"]), `"storageclass.kubernetes.io/is-default-class":"true"`) {
		t.Errorf("no default StorageClass: %v", sc)
	}
	if _, ok := sc["metadata"].(map[string]any)["namespace"]; ok {
		t.Errorf("a StorageClass got a namespace")
	}

	cil := byName(t, set, Cilium).Objects
	cm := find(cil, "ConfigMap", "cilium-config")
	if cm == nil || cm["data"].(map[string]any)["cluster-pool-ipv4-cidr"] != "10.100.0.0/16" {
		t.Errorf("cilium-config: %v", cm)
	}
	if find(cil, "DaemonSet", "cilium") == nil {
		t.Errorf("no cilium DaemonSet")
	}
	if find(byName(t, set, ManilaCSI).Objects, "DaemonSet", "manila-csi-openstack-manila-csi-nodeplugin") == nil {
		t.Errorf("no Manila CSI node plugin")
	}
	ms := find(byName(t, set, MetricsServer).Objects, "Deployment", "metrics-server")
	if ms == nil || !hasArg(container(t, ms, "metrics-server"), "--kubelet-insecure-tls") {
		t.Errorf("metrics-server: %v", ms)
	}

	// Every chart was downloaded once; rendering again, or with a new
	// cache over the same folder, downloads nothing.
	if n := repo.Archives.Load(); n != 5 {
		t.Errorf("%d archive downloads, want 5", n)
	}
	if _, err := Render(context.Background(), charts, s, cl); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(context.Background(), NewCharts(charts.dir, nil), s, cl); err != nil {
		t.Fatal(err)
	}
	if n := repo.Archives.Load(); n != 5 {
		t.Errorf("%d archive downloads after rendering again, want 5", n)
	}
}

// TestRenderImagesFromContainerInfraPrefix: every image of the built-in
// add-ons comes from the cluster's container_infra_prefix.
func TestRenderImagesFromContainerInfraPrefix(t *testing.T) {
	_, s := realRepo(t)
	s.Versions = map[string]string{CloudProvider: "2.34.0", CinderCSI: "2.34.0", Cilium: "1.18.2"}
	s.ImageRegistry = "site.example/ignored"
	cl := testCluster(labels{"network_driver": "cilium", "metrics_server_enabled": "false", "container_infra_prefix": "mirror.example:5000/magnum/"})
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range set {
		for _, o := range a.Objects {
			for _, spec := range podSpecs(o) {
				for _, key := range []string{"containers", "initContainers"} {
					cs, _ := spec[key].([]any)
					for _, c := range cs {
						img := c.(map[string]any)["image"].(string)
						n++
						if !strings.HasPrefix(img, "mirror.example:5000/magnum/") || strings.Count(img[len("mirror.example:5000/magnum/"):], "/") != 0 {
							t.Errorf("%s: image %s not from the mirror", a.Name, img)
						}
					}
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d images seen", n)
	}
}

// TestRenderCalico: calico (the default network driver) through the
// tigera-operator chart's values. The chart is a small one generated in
// the test: Tigera's chart has no Go module the proxy serves.
func TestRenderCalico(t *testing.T) {
	_, s := realRepo(t)
	s.Versions = map[string]string{CloudProvider: "2.34.0", CinderCSI: "2.34.0", MetricsServer: "3.12.2"}
	cl := testCluster(labels{"calico_tag": "v3.30.3", "cinder_csi_enabled": "false", "container_infra_prefix": "mirror.example/calico-mirror"})
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(set), []string{"cloud-config", Calico, CloudProvider, MetricsServer, KeystoneAuth}; !slices.Equal(got, want) {
		t.Fatalf("add-ons %v, want %v", got, want)
	}
	calico := byName(t, set, Calico)
	if calico.Chart.Version != "v3.30.3" || calico.Chart.Chart != "tigera-operator" {
		t.Errorf("calico chart %v", calico.Chart)
	}
	inst := find(calico.Objects, "Installation", "default")
	if inst == nil {
		t.Fatal("no Installation")
	}
	spec := mustJSON(inst["spec"])
	for _, want := range []string{`"cidr":"10.100.0.0/16"`, `"encapsulation":"IPIP"`, `"registry":"mirror.example/"`, `"imagePath":"calico-mirror"`} {
		if !strings.Contains(spec, want) {
			t.Errorf("Installation spec lacks %s: %s", want, spec)
		}
	}
	if ns := find(calico.Objects, "Deployment", "tigera-operator")["metadata"].(map[string]any)["namespace"]; ns != "tigera-operator" {
		t.Errorf("operator namespace %v", ns)
	}
	if _, ok := inst["metadata"].(map[string]any)["namespace"]; !ok {
		// The Installation's CRD is not rendered with the stand-in chart,
		// so it is treated as namespaced; harmless for a cluster-scoped
		// kind (the API server ignores it) but visible here.
		t.Log("Installation without namespace")
	}
}

// TestRenderRefusesWhatItCannotDeliver: an unknown network driver, a chart
// whose archive does not match the index's digest, a chart the index
// does not list, a Kubernetes version the chart refuses.
func TestRenderRefusesWhatItCannotDeliver(t *testing.T) {
	repo := addonstest.NewRepo(t)
	ch := addonstest.GeneratedCalicoChart("v3.30.3")
	repo.Add(t, ch, strings.Repeat("0", 64))
	old := addonstest.GeneratedCalicoChart("v3.29.0")
	old.Metadata.KubeVersion = "< 1.30.0-0"
	repo.Add(t, old, "")
	s := Settings{Repos: map[string]string{Calico: repo.Server.URL}, Versions: map[string]string{Calico: "v3.30.3"}}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		l     labels
		want  string
		cache string
	}{
		{"network driver", labels{"network_driver": "flannel"}, `network_driver "flannel" is not supported`, ""},
		{"digest", labels{}, "does not match the index", ""},
		{"missing", labels{"calico_tag": "v9.9.9"}, "not in the repository's index", ""},
		{"kube version", labels{"calico_tag": "v3.29.0"}, "requires Kubernetes < 1.30.0-0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Render(ctx, NewCharts(dir, nil), s, testCluster(tc.l))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error carries the credential: %v", err)
			}
			if tc.name == "digest" {
				if files, _ := filepath.Glob(filepath.Join(dir, "*", "*.tgz")); len(files) != 0 {
					t.Errorf("a chart that failed its digest check was cached: %v", files)
				}
			}
		})
	}
}

func TestVersionTableFollowsKubernetesMinor(t *testing.T) {
	for _, tc := range []struct{ kube, want string }{
		{"v1.34.1", "2.34.0"}, {"v1.33.4", "2.33.1"}, {"v1.36.0", "2.34.0"}, {"v1.29.9", "2.31.3"},
	} {
		if got := versionFor(CloudProvider, tc.kube); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.kube, got, tc.want)
		}
	}
	s := Settings{Versions: map[string]string{Cilium: "1.16.0"}}
	if got := s.ref(Cilium, "v1.34.0").Version; got != "1.16.0" {
		t.Errorf("site override: %s", got)
	}
}

// TestExtraAddOns: an operator's own add-ons from extra_addons_dir, plain
// manifests and a chart, after the built-in ones.
func TestExtraAddOns(t *testing.T) {
	repo, s := realRepo(t)
	s.Versions = map[string]string{CloudProvider: "2.34.0", CinderCSI: "2.34.0", MetricsServer: "3.12.2"}
	dir := t.TempDir()
	write := func(p, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-motd/manifests.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: motd\ndata:\n  msg: hello\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: site\n")
	write("b-metrics/chart.yaml", "repo: "+repo.Server.URL+"\nchart: metrics-server\nversion: 3.12.2\nnamespace: monitoring\nvalues:\n  replicas: 2\n")
	s.ExtraDir = dir
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	got := names(set)
	if !slices.Equal(got[len(got)-2:], []string{"a-motd", "b-metrics"}) {
		t.Fatalf("add-ons %v", got)
	}
	motd := byName(t, set, "a-motd").Objects
	if ns := find(motd, "ConfigMap", "motd")["metadata"].(map[string]any)["namespace"]; ns != "kube-system" {
		t.Errorf("ConfigMap namespace %v", ns)
	}
	dep := find(byName(t, set, "b-metrics").Objects, "Deployment", "b-metrics-metrics-server")
	if dep == nil || dep["metadata"].(map[string]any)["namespace"] != "monitoring" || mustJSON(dep["spec"].(map[string]any)["replicas"]) != "2" {
		t.Errorf("extra chart Deployment: %v", dep)
	}
	write("c-bad/chart.yaml", "repo: x\nchart: y\nversion: 1\nunknown: 1\n")
	if _, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{})); err == nil || !strings.Contains(err.Error(), "c-bad") {
		t.Errorf("a bad chart.yaml: %v", err)
	}
}
