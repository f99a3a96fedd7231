package addons

import (
	"context"
	"encoding/json"
	"fmt"
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
	// calicoModule is projectcalico/calico's commit a0db560f0520 of
	// 2025-08-13 on its release-v3.28 branch (after v3.28.5), the one
	// version of the module the module proxy serves (the v3.29 and v3.30
	// releases of the version table are not: go mod download answers
	// 403). Its tigera-operator chart is served as Calico's release
	// packages it (addonstest.AddDir): calicoVersion, whose operator is
	// tigeraOperatorVersion.
	calicoModule          = "github.com/projectcalico/calico@v1.11.0-cni-plugin.0.20250813170300-a0db560f0520"
	calicoVersion         = "v3.28.5"
	tigeraOperatorVersion = "v1.34.13"
)

// realRepo serves the real upstream charts, from their Go modules, and
// the generated stand-in of csi-driver-nfs at the table's version, whose
// module the proxy does not serve (addonstest.GeneratedNFSChart).
func realRepo(t *testing.T) (*addonstest.Repo, Settings) {
	t.Helper()
	r := addonstest.NewRepo(t)
	cpo := addonstest.ModuleDir(t, cpoModule)
	r.AddDir(t, filepath.Join(cpo, "charts/openstack-cloud-controller-manager"))
	r.AddDir(t, filepath.Join(cpo, "charts/cinder-csi-plugin"))
	r.AddDir(t, filepath.Join(cpo, "charts/manila-csi-plugin"))
	r.Add(t, addonstest.GeneratedNFSChart(versionFor(NFSCSI, "v1.34.1")), "")
	r.AddDir(t, filepath.Join(addonstest.ModuleDir(t, ciliumModule), "install/kubernetes/cilium"))
	r.AddDir(t, filepath.Join(addonstest.ModuleDir(t, metricsModule), "charts/metrics-server"))
	calico := r.AddDir(t, filepath.Join(addonstest.ModuleDir(t, calicoModule), "charts/tigera-operator"))
	op, _ := calico.Values["tigeraOperator"].(map[string]any)
	if calico.Metadata.Version != calicoVersion || op["version"] != tigeraOperatorVersion {
		t.Fatalf("tigera-operator chart %s with operator %v, want %s with %s", calico.Metadata.Version, op["version"], calicoVersion, tigeraOperatorVersion)
	}
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
	if got, want := names(set), []string{"cloud-config", Cilium, CloudProvider, CinderCSI, NFSCSI, ManilaCSI, MetricsServer, KeystoneAuth}; !slices.Equal(got, want) {
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
	// No built-in chart has a hook the delivery leaves out: each would
	// be a warning in every cluster's status_reason.
	for _, a := range set {
		if w := a.Warning(); w != "" {
			t.Errorf("built-in add-on %s: %s", a.Name, w)
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
	if n := repo.Archives.Load(); n != 6 {
		t.Errorf("%d archive downloads, want 6", n)
	}
	if _, err := Render(context.Background(), charts, s, cl); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(context.Background(), NewCharts(charts.dir, nil), s, cl); err != nil {
		t.Fatal(err)
	}
	if n := repo.Archives.Load(); n != 6 {
		t.Errorf("%d archive downloads after rendering again, want 6", n)
	}
}

// TestRenderImagesFromContainerInfraPrefix: every image of the built-in
// add-ons (Manila's and its NFS node plugin's too) comes from the
// cluster's container_infra_prefix.
func TestRenderImagesFromContainerInfraPrefix(t *testing.T) {
	_, s := realRepo(t)
	s.Versions = map[string]string{CloudProvider: "2.34.0", CinderCSI: "2.34.0", Cilium: "1.18.2"}
	s.ImageRegistry = "site.example/ignored"
	cl := testCluster(labels{"network_driver": "cilium", "metrics_server_enabled": "false", "manila_csi_enabled": "true",
		"container_infra_prefix": "mirror.example:5000/magnum/"})
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

// TestRenderRealTigeraOperatorChart renders calico (the default network
// driver) from Calico's real tigera-operator chart (calicoModule), with
// the values the driver builds for default labels and for the calico
// labels it takes (calico_tag, calico_ipv4pool as the Cluster's pod
// network, container_infra_prefix, addon_image_registry; there is no bgp,
// encapsulation or MTU label), and checks what a workload cluster gets:
// the Installation the operator acts on, checked against the chart's own
// CRD as the API server would (no field pruned, every enum allowed); the
// operator's Deployment and image; the CRDs of both API groups, first and
// all delivered within the resource-set Secret limit; the one hook, the
// pre-delete Job, left out and named, not warned about.
func TestRenderRealTigeraOperatorChart(t *testing.T) {
	_, s0 := realRepo(t)
	pool := func(cidr string) map[string]any {
		return map[string]any{"calicoNetwork": map[string]any{"bgp": "Enabled", "ipPools": []any{map[string]any{
			"cidr": cidr, "encapsulation": "IPIP", "natOutgoing": "Enabled", "nodeSelector": "all()", "blockSize": 26}}}}
	}
	for _, tc := range []struct {
		name     string
		l        labels
		podCIDR  string
		site     Settings // Versions and ImageRegistry
		registry string   // Installation registry and imagePath, "" for none
		path     string
		operator string // the operator's image
	}{
		{name: "default labels", l: labels{}, podCIDR: "10.100.0.0/16",
			site:     Settings{Versions: map[string]string{Calico: calicoVersion}}, // addon_chart_versions
			operator: "quay.io/tigera/operator:" + tigeraOperatorVersion},
		{name: "calico labels", l: labels{"calico_tag": calicoVersion, "container_infra_prefix": "mirror.example:5000/magnum/"},
			podCIDR: "172.20.0.0/14", site: Settings{ImageRegistry: "site.example/ignored"},
			registry: "mirror.example:5000/", path: "magnum", operator: "mirror.example:5000/magnum/operator:" + tigeraOperatorVersion},
		{name: "site registry", l: labels{"calico_tag": calicoVersion}, podCIDR: "10.100.0.0/16",
			site:     Settings{ImageRegistry: "registry.example/mirror/calico/"}, // addon_image_registry
			registry: "registry.example/", path: "mirror/calico", operator: "registry.example/mirror/calico/operator:" + tigeraOperatorVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s0
			s.Versions, s.ImageRegistry, s.Builtin = tc.site.Versions, tc.site.ImageRegistry, []string{"cni"}
			cl := testCluster(tc.l)
			cl.PodCIDR = tc.podCIDR
			set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, cl)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := names(set), []string{"cloud-config", Calico}; !slices.Equal(got, want) {
				t.Fatalf("add-ons %v, want %v", got, want)
			}
			calico := byName(t, set, Calico)
			if calico.Chart.Chart != "tigera-operator" || calico.Chart.Version != calicoVersion {
				t.Errorf("chart %v", calico.Chart)
			}
			objs := calico.Objects

			// The release namespace first: the chart renders none (its
			// README has the user create it before helm install), and
			// without it none of the operator's objects can be created.
			// Labelled as Tigera's own manifest labels it: the operator runs
			// on the host network with host paths.
			if len(objs) == 0 || objs[0]["kind"] != "Namespace" || objectName(objs[0]) != "tigera-operator" {
				t.Fatalf("objects %q do not begin with Namespace/tigera-operator", objectKeys(objs))
			}
			if got := mustJSON(objs[0]["metadata"].(map[string]any)["labels"]); got != `{"name":"tigera-operator","pod-security.kubernetes.io/enforce":"privileged"}` {
				t.Errorf("Namespace labels %s", got)
			}
			// Then the CRDs, of both groups, before anything else.
			var crds []string
			for i, o := range objs[1:] {
				if o["kind"] == "CustomResourceDefinition" {
					crds = append(crds, objectName(o))
					if i != len(crds)-1 {
						t.Errorf("CRD %s after other objects", objectName(o))
					}
				}
			}
			wantCRDs := []string{"bgpconfigurations", "bgpfilters", "bgppeers", "blockaffinities", "caliconodestatuses",
				"clusterinformations", "felixconfigurations", "globalnetworkpolicies", "globalnetworksets", "hostendpoints",
				"ipamblocks", "ipamconfigs", "ipamhandles", "ippools", "ipreservations", "kubecontrollersconfigurations",
				"networkpolicies", "networksets"}
			for i := range wantCRDs {
				wantCRDs[i] += ".crd.projectcalico.org"
			}
			wantCRDs = append(wantCRDs, "apiservers.operator.tigera.io", "imagesets.operator.tigera.io",
				"installations.operator.tigera.io", "tigerastatuses.operator.tigera.io")
			if !slices.Equal(crds, wantCRDs) {
				t.Errorf("CRDs\n%q\nwant\n%q", crds, wantCRDs)
			}

			// The Installation: the driver's values, minus enabled, and
			// what the chart adds; cluster-scoped (its CRD says so).
			inst := find(objs, "Installation", "default")
			if inst == nil {
				t.Fatalf("no Installation in %q", objectKeys(objs))
			}
			want := pool(tc.podCIDR)
			want["cni"] = map[string]any{"type": "Calico"}
			want["imagePullSecrets"] = []any{}
			want["kubeletVolumePluginPath"] = "/var/lib/kubelet"
			want["kubernetesProvider"] = ""
			if tc.registry != "" {
				want["registry"], want["imagePath"] = tc.registry, tc.path
			}
			// No variant: the operator's default, Calico (not Calico
			// Enterprise).
			if got, w := mustJSON(inst["spec"]), mustJSON(want); got != w {
				t.Errorf("Installation spec\n%s\nwant\n%s", got, w)
			}
			if ns, ok := inst["metadata"].(map[string]any)["namespace"]; ok {
				t.Errorf("the cluster-scoped Installation got namespace %v", ns)
			}
			// The chart's APIServer (the operator's calico-apiserver, serving
			// projectcalico.org/v3) is upstream's default, kept.
			apiServer := find(objs, "APIServer", "default")
			if apiServer == nil {
				t.Errorf("no APIServer in %q", objectKeys(objs))
			}
			for _, cr := range []Object{inst, apiServer} {
				if cr == nil {
					continue
				}
				kind := cr["kind"].(string)
				crd := find(objs, "CustomResourceDefinition", strings.ToLower(kind)+"s.operator.tigera.io")
				if crd == nil {
					t.Errorf("no CRD for %s", kind)
					continue
				}
				if p := schemaProblems(specSchema(t, crd), cr["spec"], kind+".spec"); len(p) > 0 {
					t.Errorf("%s does not fit its CRD:\n%s", kind, strings.Join(p, "\n"))
				}
			}

			// The operator, in the release namespace, from the registry.
			dep := find(objs, "Deployment", "tigera-operator")
			if dep == nil {
				t.Fatalf("no operator Deployment in %q", objectKeys(objs))
			}
			c := container(t, dep, "tigera-operator")
			if c["image"] != tc.operator || envValue(c, "TIGERA_OPERATOR_INIT_IMAGE_VERSION") != tigeraOperatorVersion {
				t.Errorf("operator image %v (init version %q), want %s", c["image"], envValue(c, "TIGERA_OPERATOR_INIT_IMAGE_VERSION"), tc.operator)
			}
			for _, o := range objs {
				md := o["metadata"].(map[string]any)
				if ns, ok := md["namespace"]; ok && ns != "tigera-operator" {
					t.Errorf("%s/%s in namespace %v", o["kind"], objectName(o), ns)
				}
			}

			// Hooks: the pre-delete Job only, named in the log, no warning,
			// not delivered.
			if got := fmt.Sprint(calico.Skipped); got != "[Job/tigera-operator-uninstall (pre-delete)]" {
				t.Errorf("hooks left out %s", got)
			}
			if w := calico.Warning(); w != "" {
				t.Errorf("warning %q", w)
			}
			if got, w := calico.LeftOut(), "add-on calico (chart tigera-operator "+calicoVersion+
				"): Helm hooks not run: Job/tigera-operator-uninstall (pre-delete)"; got != w {
				t.Errorf("left out %q, want %q", got, w)
			}
			if find(objs, "Job", "tigera-operator-uninstall") != nil {
				t.Errorf("the pre-delete Job is delivered")
			}

			// Delivery: every object, CRDs included, fits the Secrets; only
			// the Installation CRD (1.3 MB) is delivered without its
			// descriptions.
			parts, err := Parts(objs, testMaxPart)
			if err != nil {
				t.Fatalf("the chart is refused: %v", err)
			}
			var delivered []string
			for i, p := range parts {
				if len(p) > testMaxPart {
					t.Errorf("part %d: %d bytes", i, len(p))
				}
				for _, u := range readDocs(t, p) {
					delivered = append(delivered, u["kind"].(string)+"/"+objectName(u))
					if u["kind"] != "CustomResourceDefinition" {
						continue
					}
					described := strings.Contains(mustJSON(u["spec"]), `"description":`)
					if want := objectName(u) != "installations.operator.tigera.io"; described != want {
						t.Errorf("%s delivered with descriptions: %v, want %v", objectName(u), described, want)
					}
				}
			}
			if got := objectKeys(objs); !slices.Equal(delivered, got) {
				t.Errorf("delivered\n%q\nwant\n%q", delivered, got)
			}
		})
	}
}

// specSchema is the OpenAPI schema of the spec of crd's storage version.
func specSchema(t *testing.T, crd Object) map[string]any {
	t.Helper()
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		vm := v.(map[string]any)
		if vm["storage"] == true {
			root := vm["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
			return root["properties"].(map[string]any)["spec"].(map[string]any)
		}
	}
	t.Fatalf("CRD %s has no storage version", objectName(crd))
	return nil
}

// schemaProblems lists what in v, at path, the API server would prune (a
// field its structural schema s does not name) or refuse (a value of
// another type, not in an enum, a required field missing).
func schemaProblems(s map[string]any, v any, path string) []string {
	var out []string
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		out = append(out, fmt.Sprintf("%s: %v is not one of %v", path, v, enum))
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: %T, not an object", path, v))
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				out = append(out, fmt.Sprintf("%s: %v is required", path, r))
			}
		}
		props, _ := s["properties"].(map[string]any)
		more, _ := s["additionalProperties"].(map[string]any)
		keep, _ := s["x-kubernetes-preserve-unknown-fields"].(bool)
		for _, k := range sortedKeys(m) {
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				out = append(out, schemaProblems(ps, m[k], path+"."+k)...)
			case more != nil:
				out = append(out, schemaProblems(more, m[k], path+"."+k)...)
			case !keep:
				out = append(out, fmt.Sprintf("%s.%s: not in the schema (pruned)", path, k))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: %T, not an array", path, v))
		}
		items, _ := s["items"].(map[string]any)
		for i, x := range a {
			out = append(out, schemaProblems(items, x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			out = append(out, fmt.Sprintf("%s: %T, not a string", path, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			out = append(out, fmt.Sprintf("%s: %v, not an integer", path, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			out = append(out, fmt.Sprintf("%s: %T, not a boolean", path, v))
		}
	}
	return out
}

// TestRenderRefusesWhatItCannotDeliver: an unknown network driver, a chart
// whose archive does not match the index's digest, a chart the index
// does not list, a Kubernetes version the chart refuses.
func TestRenderRefusesWhatItCannotDeliver(t *testing.T) {
	// The generated stand-in: the real chart comes in one version and has
	// no kubeVersion constraint to refuse a cluster with.
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
	s.Versions = map[string]string{Calico: calicoVersion, CloudProvider: "2.34.0", CinderCSI: "2.34.0", MetricsServer: "3.12.2"}
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
	metrics := byName(t, set, "b-metrics").Objects
	dep := find(metrics, "Deployment", "b-metrics-metrics-server")
	if dep == nil || dep["metadata"].(map[string]any)["namespace"] != "monitoring" || mustJSON(dep["spec"].(map[string]any)["replicas"]) != "2" {
		t.Errorf("extra chart Deployment: %v", dep)
	}
	// The chart renders no Namespace for its release: the add-on brings
	// it, first. The manifests add-on is applied as written.
	if k := objectKeys(metrics); len(k) == 0 || k[0] != "Namespace/monitoring" {
		t.Errorf("extra chart objects %v: want Namespace/monitoring first", k)
	}
	if k := objectKeys(motd); slices.Contains(k, "Namespace/kube-system") {
		t.Errorf("manifests add-on objects %v", k)
	}
	// A site add-on named like a built-in one replaces it, in its place.
	write("metrics-server/chart.yaml", "repo: "+repo.Server.URL+"\nchart: metrics-server\nversion: 3.12.2\nnamespace: kube-system\nvalues:\n  replicas: 3\n")
	set, err = Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	if n := slices.Index(names(set), MetricsServer); n < 0 || n != slices.Index(got, MetricsServer) || len(set) != len(got) {
		t.Fatalf("add-ons %v with a site metrics-server: want it once, in the built-in's place (%v)", names(set), got)
	}
	if dep := find(byName(t, set, MetricsServer).Objects, "Deployment", "metrics-server"); dep == nil || mustJSON(dep["spec"].(map[string]any)["replicas"]) != "3" {
		t.Errorf("metrics-server is not the site's: %v", dep)
	}
	if err := os.RemoveAll(filepath.Join(dir, "metrics-server")); err != nil {
		t.Fatal(err)
	}
	write("cloud-config/manifests.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	if _, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{})); err == nil || !strings.Contains(err.Error(), "cloud-config") {
		t.Errorf("a site add-on named cloud-config: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "cloud-config")); err != nil {
		t.Fatal(err)
	}
	write("c-bad/chart.yaml", "repo: x\nchart: y\nversion: 1\nunknown: 1\n")
	if _, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{})); err == nil || !strings.Contains(err.Error(), "c-bad") {
		t.Errorf("a bad chart.yaml: %v", err)
	}
}

func objectKeys(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o["kind"].(string)+"/"+objectName(o))
	}
	return out
}

// TestRenderChartHooks: a chart's pre-install hooks come after its CRDs
// and before its other objects, its post-install hooks after them, each
// in Helm's order (weight, then name), a hook of both only once, with the
// pre-install ones; every other hook is left out and returned, named with
// its types, none silently dropped.
func TestRenderChartHooks(t *testing.T) {
	objs, skipped, err := RenderChart(addonstest.HookedChart(), nil, Release{Name: "hooked", Namespace: "site", KubeVersion: "v1.34.1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CustomResourceDefinition/widgets.example.com",
		"ServiceAccount/pre-sa", "Job/both", "Job/pre-a", "Job/pre-b", // pre-install: -5, 0, 5, 5
		"ConfigMap/cfg", "Deployment/app", // Helm's install order
		"ConfigMap/post-cm", "Job/post", // post-install: -1, 1
	}
	if got := objectKeys(objs); !slices.Equal(got, want) {
		t.Errorf("objects\n%q\nwant\n%q", got, want)
	}
	if ns := find(objs, "Job", "pre-a")["metadata"].(map[string]any)["namespace"]; ns != "site" {
		t.Errorf("hook Job namespace %v, want the release's", ns)
	}
	var got []string
	for _, h := range skipped {
		got = append(got, h.String())
	}
	wantSkipped := []string{"Job/upgrade (pre-upgrade)", "Job/cleanup (pre-delete,post-delete)", "Job/rollback (post-rollback)",
		"Job/legacy (crd-install)", "Pod/hooked-test (test)"}
	if !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped hooks\n%q\nwant\n%q", got, wantSkipped)
	}
	for _, name := range []string{"upgrade", "cleanup", "rollback", "legacy", "hooked-test"} {
		if find(objs, "Job", name) != nil || find(objs, "Pod", name) != nil {
			t.Errorf("hook %s rendered", name)
		}
	}
}

// The install hooks travel in resource-set Secrets of their own, one per
// weight, so that Cluster API's kind sort within a Secret (ConfigMaps,
// ServiceAccounts and Pods before the rest) cannot move them across the
// chart's other objects.
func TestPartsKeepHooksApart(t *testing.T) {
	objs, _, err := RenderChart(addonstest.HookedChart(), nil, Release{Name: "hooked", Namespace: "site", KubeVersion: "v1.34.1"})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := Parts(objs, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, p := range parts {
		var keys []string
		for _, doc := range strings.Split(string(p), "---\n") {
			var o Object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, o["kind"].(string)+"/"+objectName(o))
		}
		got = append(got, keys)
	}
	want := [][]string{{"CustomResourceDefinition/widgets.example.com"}, {"ServiceAccount/pre-sa"}, {"Job/both"},
		{"Job/pre-a", "Job/pre-b"}, {"ConfigMap/cfg", "Deployment/app"}, {"ConfigMap/post-cm"}, {"Job/post"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("parts\n%q\nwant\n%q", got, want)
	}
}

// An operator's chart with hooks: its add-on names the hooks not run.
func TestExtraAddOnHooksAreReported(t *testing.T) {
	dir := addonstest.HookedExtraDir(t)
	set, err := LoadExtra(context.Background(), NewCharts(t.TempDir(), nil), dir, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	a := byName(t, set, "hooked")
	want := "add-on hooked (chart hooked 1.0.0): Helm hooks not run: Job/upgrade (pre-upgrade), Job/cleanup (pre-delete,post-delete), " +
		"Job/rollback (post-rollback), Job/legacy (crd-install), Pod/hooked-test (test)"
	if got := a.LeftOut(); got != want {
		t.Errorf("hooks left out\n%q\nwant\n%q", got, want)
	}
	// A warning only for the hook whose moment comes to an add-on.
	want = "add-on hooked (chart hooked 1.0.0): Helm upgrade hooks not run: Job/upgrade (pre-upgrade)"
	if got := a.Warning(); got != want {
		t.Errorf("warning\n%q\nwant\n%q", got, want)
	}
	deleteOnly := AddOn{Name: "calico", Chart: ChartRef{Chart: "tigera-operator", Version: "v3.30.3"},
		Skipped: []Hook{{Kind: "Job", Name: "tigera-operator-uninstall", Types: "pre-delete"}}}
	if w := deleteOnly.Warning(); w != "" {
		t.Errorf("a chart with only a pre-delete hook warns %q", w)
	}
	if find(a.Objects, "Job", "pre-a") == nil || find(a.Objects, "Job", "post") == nil {
		t.Errorf("install hooks missing: %q", objectKeys(a.Objects))
	}
	if w := (AddOn{Name: "plain"}).Warning(); w != "" {
		t.Errorf("an add-on without skipped hooks warns %q", w)
	}
}

// TestRenderReleaseNamespace: a built-in add-on's namespace is delivered
// with it unless it is kube-system or the chart renders it itself.
func TestRenderReleaseNamespace(t *testing.T) {
	ns := releaseNamespace([]Object{{"kind": "Deployment", "metadata": map[string]any{"name": "d"}}}, "tigera-operator",
		map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
	if got := mustJSON(ns); got != `{"apiVersion":"v1","kind":"Namespace","metadata":{"labels":{"name":"tigera-operator","pod-security.kubernetes.io/enforce":"privileged"},"name":"tigera-operator"}}` {
		t.Errorf("namespace %s", got)
	}
	if ns := releaseNamespace(nil, "kube-system", nil); ns != nil {
		t.Errorf("kube-system delivered: %v", ns)
	}
	own := []Object{{"kind": "Namespace", "metadata": map[string]any{"name": "site"}}}
	if ns := releaseNamespace(own, "site", nil); ns != nil {
		t.Errorf("a namespace the chart renders delivered twice: %v", ns)
	}
}
