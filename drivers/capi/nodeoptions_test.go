package capi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
)

// The functions of sprig's hermetic map the classes' templates use, as
// Cluster API's patch engine provides them (the real controllers check the
// same templates in TestRealCAPIAcceptsAndRendersWhatTheDriverBuilds; this
// is the fast check of the output).
var patchFuncs = template.FuncMap{
	"toJson":   func(v any) string { b, _ := json.Marshal(v); return string(b) },
	"toString": func(v any) string { return fmt.Sprint(v) },
	"int": func(v any) int {
		switch n := v.(type) {
		case float64:
			return int(n)
		case int64:
			return int(n)
		case int:
			return n
		}
		return 0
	},
	"regexMatch": func(re, s string) bool { return regexp.MustCompile(re).MatchString(s) },
	"join": func(sep string, v any) string {
		var parts []string
		for _, e := range v.([]any) {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, sep)
	},
	"list":   func(v ...any) []any { return v },
	"append": func(l []any, v any) []any { return append(append([]any{}, l...), v) },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"set": func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m },
}

// rendered is what a class's patches make of one Cluster's variables:
// the value of each templated JSON patch, by patch name and selected kind.
type rendered map[string]any

func execPatchTemplate(t *testing.T, text string, vars map[string]any) string {
	t.Helper()
	tpl, err := template.New("").Option("missingkey=error").Funcs(patchFuncs).Parse(text)
	if err != nil {
		t.Fatalf("template %q: %v", text, err)
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, vars); err != nil {
		t.Fatalf("template %q: %v", text, err)
	}
	return b.String()
}

// renderPatches builds the Cluster for labels (cluster labels of the
// default Magnum cluster) on class version, then runs every enabled patch
// template of the class on its variables.
func renderPatches(t *testing.T, version string, labels map[string]string) rendered {
	t.Helper()
	c, tmpl, ngs := defaultMagnumCluster()
	for k, v := range labels {
		c.Labels[k] = v
	}
	return renderPatchesFor(t, version, c, tmpl, ngs)
}

func renderPatchesFor(t *testing.T, version string, c *objects.Cluster, tmpl *objects.ClusterTemplate, ngs []*objects.NodeGroup) rendered {
	t.Helper()
	cl, err := buildCluster(c, tmpl, ngs, "ns", renderClusterName, version)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{}
	topoVars, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "variables")
	for _, v := range topoVars {
		m := v.(map[string]any)
		// Through JSON, as the patch engine reads them (numbers as float64).
		b, _ := json.Marshal(m["value"])
		var val any
		if err := json.Unmarshal(b, &val); err != nil {
			t.Fatal(err)
		}
		vars[m["name"].(string)] = val
	}
	objs, err := classBundle(version)
	if err != nil {
		t.Fatal(err)
	}
	patches, _, _ := unstructured.NestedSlice(objs[len(objs)-1].Object, "spec", "patches")
	out := rendered{}
	for _, p := range patches {
		pm := p.(map[string]any)
		if cond, ok := pm["enabledIf"].(string); ok && execPatchTemplate(t, cond, vars) != "true" {
			continue
		}
		for _, d := range pm["definitions"].([]any) {
			dm := d.(map[string]any)
			kind := dm["selector"].(map[string]any)["kind"].(string)
			for _, jp := range dm["jsonPatches"].([]any) {
				jm := jp.(map[string]any)
				var val any = jm["value"]
				if vf, ok := jm["valueFrom"].(map[string]any); ok {
					if text, ok := vf["template"].(string); ok {
						if err := yaml.Unmarshal([]byte(execPatchTemplate(t, text, vars)), &val); err != nil {
							t.Fatalf("patch %s (%s %s): the template renders no YAML: %v", pm["name"], kind, jm["path"], err)
						}
					} else {
						val = vars[vf["variable"].(string)]
					}
				}
				out[fmt.Sprintf("%s %s %s", pm["name"], kind, jm["path"])] = val
			}
		}
	}
	return out
}

const (
	cpFiles      = "control-plane-files KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/files"
	workerFiles  = "worker-files KubeadmConfigTemplate /spec/template/spec/files"
	cpServices   = "node-services KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/preKubeadmCommands"
	workerServ   = "node-services KubeadmConfigTemplate /spec/template/spec/preKubeadmCommands"
	cpClusterCfg = "control-plane-config KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/clusterConfiguration"
)

// fileContent is the content of the file at path in a rendered files list.
func fileContent(t *testing.T, files any, path string) string {
	t.Helper()
	list, _ := files.([]any)
	for _, f := range list {
		m := f.(map[string]any)
		if m["path"] == path {
			return m["content"].(string)
		}
	}
	t.Fatalf("no file %s in %v", path, files)
	return ""
}

func apiServerArgs(t *testing.T, r rendered) map[string]string {
	t.Helper()
	cc, _ := r[cpClusterCfg].(map[string]any)
	api, _ := cc["apiServer"].(map[string]any)
	args := map[string]string{}
	list, _ := api["extraArgs"].([]any)
	for _, a := range list {
		m := a.(map[string]any)
		if _, dup := args[m["name"].(string)]; dup && m["name"] != "oidc-required-claim" {
			t.Errorf("argument %s twice", m["name"])
		}
		args[m["name"].(string)] += m["value"].(string) + ";"
	}
	return args
}

// Proxies: one drop-in for containerd and one for the kubelet on every
// node, the cluster's own networks never proxied, services reloaded.
func TestProxyLabelsRenderSystemdDropIns(t *testing.T) {
	r := renderPatches(t, "v3", map[string]string{"http_proxy": "http://proxy.example:3128",
		"https_proxy": "http://proxy.example:3129", "no_proxy": "10.1.2.3,.example.internal"})
	for _, files := range []any{r[cpFiles], r[workerFiles]} {
		for _, unit := range []string{"containerd", "kubelet"} {
			got := fileContent(t, files, "/etc/systemd/system/"+unit+".service.d/http-proxy.conf")
			for _, want := range []string{"[Service]\n", `Environment="HTTP_PROXY=http://proxy.example:3128"`,
				`Environment="https_proxy=http://proxy.example:3129"`,
				`Environment="NO_PROXY=localhost,127.0.0.1,169.254.169.254,.svc,10.0.0.0/24,10.100.0.0/16,10.254.0.0/16,.cluster.local,10.1.2.3,.example.internal"`} {
				if !strings.Contains(got, want) {
					t.Errorf("%s drop-in lacks %s:\n%s", unit, want, got)
				}
			}
		}
	}
	for _, k := range []string{cpServices, workerServ} {
		if !reflect.DeepEqual(r[k], []any{"systemctl daemon-reload", "systemctl restart containerd"}) {
			t.Errorf("%s = %v", k, r[k])
		}
	}
	// Nothing of it without the labels (keystone-auth's webhook file
	// stays on the control plane, by default).
	r = renderPatches(t, "v3", nil)
	for _, k := range []string{workerFiles, cpServices, workerServ} {
		if v, ok := r[k]; ok {
			t.Errorf("%s rendered without proxy labels: %v", k, v)
		}
	}
}

// Registries: hosts.toml per registry, mirrors first, an insecure
// registry tried over HTTPS without verification, then HTTP.
func TestRegistryLabelsRenderContainerdHosts(t *testing.T) {
	r := renderPatches(t, "v3", map[string]string{"registry_mirrors": "https://mirror.example, quay.io=https://quay-mirror.example",
		"insecure_registry": "registry.local:5000", "container_infra_prefix": "registry.local:5000/magnum/"})
	want := map[string]string{
		"/etc/containerd/certs.d/docker.io/hosts.toml": "server = \"https://registry-1.docker.io\"\n\n[host.\"https://mirror.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"/etc/containerd/certs.d/quay.io/hosts.toml":   "server = \"https://quay.io\"\n\n[host.\"https://quay-mirror.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"/etc/containerd/certs.d/registry.local:5000/hosts.toml": "server = \"https://registry.local:5000\"\n\n" +
			"[host.\"https://registry.local:5000\"]\n  capabilities = [\"pull\", \"resolve\", \"push\"]\n  skip_verify = true\n\n" +
			"[host.\"http://registry.local:5000\"]\n  capabilities = [\"pull\", \"resolve\", \"push\"]\n",
	}
	for path, content := range want {
		for _, files := range []any{r[cpFiles], r[workerFiles]} {
			if got := fileContent(t, files, path); got != content {
				t.Errorf("%s:\n%s\nwant:\n%s", path, got, content)
			}
		}
	}
	if cc := r[cpClusterCfg].(map[string]any); cc["imageRepository"] != "registry.local:5000/magnum" {
		t.Errorf("imageRepository = %v", cc["imageRepository"])
	}
}

// API server: SANs, ciphers, admission plugins, OIDC, audit logging, and
// k8s-keystone-auth's webhook (on by default).
func TestAPIServerLabelsRenderKubeadmArguments(t *testing.T) {
	r := renderPatches(t, "v3", map[string]string{
		"api_server_cert_sans": "api.example.com,192.0.2.7", "api_server_tls_cipher_suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
		"admission_control_list": "NodeRestriction,AlwaysPullImages",
		"oidc_issuer_url":        "https://idp.example/realms/k8s", "oidc_client_id": "kubernetes", "oidc_username_claim": "email",
		"oidc_username_prefix": "oidc:", "oidc_groups_claim": "groups", "oidc_groups_prefix": "oidc:",
		"oidc_required_claims": "aud=kubernetes,tier=gold",
		"audit_log_enabled":    "true", "audit_log_maxage": "7",
	})
	cc := r[cpClusterCfg].(map[string]any)
	api := cc["apiServer"].(map[string]any)
	if !reflect.DeepEqual(api["certSANs"], []any{"api.example.com", "192.0.2.7"}) {
		t.Errorf("certSANs = %v", api["certSANs"])
	}
	args := apiServerArgs(t, r)
	for name, want := range map[string]string{
		"tls-cipher-suites":                        "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384;",
		"enable-admission-plugins":                 "NodeRestriction,AlwaysPullImages;",
		"oidc-issuer-url":                          "https://idp.example/realms/k8s;",
		"oidc-client-id":                           "kubernetes;",
		"oidc-username-claim":                      "email;",
		"oidc-username-prefix":                     "oidc:;",
		"oidc-groups-claim":                        "groups;",
		"oidc-groups-prefix":                       "oidc:;",
		"oidc-required-claim":                      "aud=kubernetes;tier=gold;",
		"authentication-token-webhook-config-file": "/etc/kubernetes/webhooks/keystone-webhook.yaml;",
		"authorization-webhook-config-file":        "/etc/kubernetes/webhooks/keystone-webhook.yaml;",
		"authorization-mode":                       "Node,RBAC,Webhook;",
		"audit-policy-file":                        "/etc/kubernetes/audit-policy/apiserver-audit-policy.yaml;",
		"audit-log-path":                           "/var/log/kubernetes/audit/kube-apiserver-audit.log;",
		"audit-log-maxage":                         "7;",
		"audit-log-maxbackup":                      "10;",
		"audit-log-maxsize":                        "100;",
	} {
		if args[name] != want {
			t.Errorf("--%s = %q, want %q", name, args[name], want)
		}
	}
	if len(args) != 17 {
		t.Errorf("arguments %v", args)
	}
	vols, _ := api["extraVolumes"].([]any)
	if len(vols) != 3 {
		t.Errorf("extraVolumes = %v", vols)
	}
	webhook := fileContent(t, r[cpFiles], "/etc/kubernetes/webhooks/keystone-webhook.yaml")
	var kubeconfig map[string]any
	if err := yaml.Unmarshal([]byte(webhook), &kubeconfig); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedSlice(kubeconfig, "clusters"); len(s) != 1 ||
		s[0].(map[string]any)["cluster"].(map[string]any)["server"] != "https://127.0.0.1:8443/webhook" {
		t.Errorf("webhook kubeconfig %v", kubeconfig)
	}
	var policy map[string]any
	if err := yaml.Unmarshal([]byte(fileContent(t, r[cpFiles], "/etc/kubernetes/audit-policy/apiserver-audit-policy.yaml")), &policy); err != nil ||
		policy["kind"] != "Policy" {
		t.Errorf("audit policy %v, %v", policy, err)
	}

	// Keystone off, no audit, nothing else: no argument, no file.
	r = renderPatches(t, "v3", map[string]string{"keystone_auth_enabled": "false"})
	if cc := r[cpClusterCfg]; !reflect.DeepEqual(cc, map[string]any{}) {
		t.Errorf("clusterConfiguration %v, want it empty", cc)
	}
	if v, ok := r[cpFiles]; ok {
		t.Errorf("control-plane files %v", v)
	}
}

// Labels a class cannot apply, and labels no one understands, are
// reported by name; defaults are not.
func TestLabelWarnings(t *testing.T) {
	s := DefaultLabelSchema()
	raw := map[string]string{"http_proxy": "http://user:secret@proxy:3128", "keystone_auth_enabled": "true",
		"audit_log_enabled": "", "kube_tag": "v1.33.4", "heat_container_agent_tag": "x", "cgroup_driver": "systemd"}
	v2, err := classSet(nil).variables("v2")
	if err != nil {
		t.Fatal(err)
	}
	got := s.LabelWarnings(raw, v2, "v2")
	want := []string{"labels not understood by the Cluster API driver, ignored: cgroup_driver, heat_container_agent_tag",
		"labels not applied by ClusterClass magnum-v2 (an upgrade to a newer class applies them): http_proxy"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	v3, err := classSet(nil).variables("v3")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.LabelWarnings(raw, v3, "v3"); len(got) != 1 || strings.Contains(strings.Join(got, ""), "secret") {
		t.Errorf("v3: %q", got)
	}
}

func TestLabelPairs(t *testing.T) {
	l, err := DefaultLabelSchema().Parse(map[string]string{"oidc_required_claims": "aud = k8s, plain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.List("oidc_required_claims"); !reflect.DeepEqual(got, []string{"aud=k8s", "plain"}) {
		t.Errorf("%q", got)
	}
	for _, bad := range []string{"a=", "=b", "a=b c", "a;b=c"} {
		if _, err := DefaultLabelSchema().Parse(map[string]string{"oidc_required_claims": bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Volumes: etcd's and the container runtime's Cinder volumes, their file
// systems and mounts; a nodegroup's own boot and runtime volumes.
func TestVolumeLabelsRenderBlockDevicesAndMounts(t *testing.T) {
	c, tmpl, ngs := defaultMagnumCluster()
	c.Labels = map[string]string{"etcd_volume_size": "10", "etcd_volume_type": "ssd", "docker_volume_type": "fast"}
	tmpl.DockerVolumeSize = ptr(int64(30))
	r := renderPatchesFor(t, "v3", c, tmpl, ngs)
	cpDevices := r["control-plane-volumes OpenStackMachineTemplate /spec/template/spec/additionalBlockDevices"]
	want := []any{
		map[string]any{"name": "etcd", "sizeGiB": float64(10), "storage": map[string]any{"type": "Volume", "volume": map[string]any{"type": "ssd"}}},
		map[string]any{"name": "containerd", "sizeGiB": float64(30), "storage": map[string]any{"type": "Volume", "volume": map[string]any{"type": "fast"}}},
	}
	if !reflect.DeepEqual(cpDevices, want) {
		t.Errorf("control plane devices %v", cpDevices)
	}
	if got := r["control-plane-volumes KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/diskSetup"]; !reflect.DeepEqual(got, map[string]any{
		"partitions": []any{
			map[string]any{"device": "/dev/vdb", "layout": true, "overwrite": false, "tableType": "gpt"},
			map[string]any{"device": "/dev/vdc", "layout": true, "overwrite": false, "tableType": "gpt"}},
		"filesystems": []any{
			map[string]any{"device": "/dev/vdb1", "filesystem": "ext4", "label": "etcd_disk", "overwrite": false},
			map[string]any{"device": "/dev/vdc1", "filesystem": "ext4", "label": "containerd_disk", "overwrite": false}},
	}) {
		t.Errorf("diskSetup %v", got)
	}
	if got := r["control-plane-volumes KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/mounts"]; !reflect.DeepEqual(got,
		[]any{[]any{"LABEL=etcd_disk", "/var/lib/etcd"}, []any{"LABEL=containerd_disk", "/var/lib/containerd"}}) {
		t.Errorf("mounts %v", got)
	}
	if cc := r[cpClusterCfg].(map[string]any); !reflect.DeepEqual(cc["etcd"], map[string]any{"local": map[string]any{"dataDir": "/var/lib/etcd/data"}}) {
		t.Errorf("etcd %v", cc["etcd"])
	}
	if got := r["worker-volumes OpenStackMachineTemplate /spec/template/spec/additionalBlockDevices"]; !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("worker devices %v", got)
	}
	if got := r[workerServ]; !reflect.DeepEqual(got, []any{"systemctl daemon-reload", "systemctl restart containerd"}) {
		t.Errorf("worker services %v", got)
	}

	// The container runtime volume alone is the control plane's /dev/vdb.
	c.Labels = map[string]string{}
	r = renderPatchesFor(t, "v3", c, tmpl, ngs)
	if got := r["control-plane-volumes KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/diskSetup"].(map[string]any); !reflect.DeepEqual(
		got["filesystems"], []any{map[string]any{"device": "/dev/vdb1", "filesystem": "ext4", "label": "containerd_disk", "overwrite": false}}) {
		t.Errorf("diskSetup %v", got)
	}
	if cc := r[cpClusterCfg].(map[string]any); cc["etcd"] != nil {
		t.Errorf("etcd %v without an etcd volume", cc["etcd"])
	}
	// Neither: no patch.
	tmpl.DockerVolumeSize = nil
	r = renderPatchesFor(t, "v3", c, tmpl, ngs)
	for k := range r {
		if strings.Contains(k, "volumes") {
			t.Errorf("%s rendered without volumes", k)
		}
	}
}

func TestNodeGroupVolumeOverrides(t *testing.T) {
	l, _ := DefaultLabelSchema().Parse(map[string]string{"boot_volume_size": "20", "boot_volume_type": "std"})
	ng := &objects.NodeGroup{Name: "big", Labels: map[string]string{"boot_volume_size": "100"}, DockerVolumeSize: ptr(int64(40))}
	got, err := nodeGroupOverrides(l, ng, map[string]bool{"containerVolume": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []namedValue{{"bootVolume", map[string]any{"size": int64(100), "type": "std"}},
		{"containerVolume", map[string]any{"size": int64(40), "type": ""}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v", got)
	}
	if got, _ := nodeGroupOverrides(l, ng, map[string]bool{}); len(got) != 1 {
		t.Errorf("a class without containerVolume: %v", got)
	}
	ng.Labels["boot_volume_type"] = "x; rm -rf /"
	if _, err := nodeGroupOverrides(l, ng, nil); err == nil || !strings.Contains(err.Error(), "nodegroup big") {
		t.Errorf("bad nodegroup label: %v", err)
	}
}

func TestServerGroupPatches(t *testing.T) {
	c, tmpl, ngs := defaultMagnumCluster()
	cl, err := buildCluster(c, tmpl, ngs, "ns", renderClusterName, "v3",
		map[string]string{serverGroupControlPlane: "5e4f0000-0000-4000-8000-000000000001", "default-worker": "5e4f0000-0000-4000-8000-000000000002"})
	if err != nil {
		t.Fatal(err)
	}
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	overrides, _, _ := unstructured.NestedSlice(mds[0].(map[string]any), "variables", "overrides")
	if !reflect.DeepEqual(overrides, []any{map[string]any{"name": "workerServerGroup", "value": "5e4f0000-0000-4000-8000-000000000002"}}) {
		t.Errorf("overrides %v", overrides)
	}
	r := renderPatchesFor(t, "v3", c, tmpl, ngs)
	if _, ok := r["control-plane-server-group OpenStackMachineTemplate /spec/template/spec/serverGroup"]; ok {
		t.Error("a server group without an id")
	}
}

// Worker nodes' labels and taints: the cluster's, or a nodegroup's own.
func TestNodeLabelsAndTaints(t *testing.T) {
	c, tmpl, ngs := defaultMagnumCluster()
	c.Labels = map[string]string{"node_labels": "tier=web,example.com/team=a", "node_taints": "dedicated=web:NoSchedule"}
	r := renderPatchesFor(t, "v3", c, tmpl, ngs)
	if got := r["worker-node-labels KubeadmConfigTemplate /spec/template/spec/joinConfiguration/nodeRegistration/kubeletExtraArgs/-"]; !reflect.DeepEqual(got,
		map[string]any{"name": "node-labels", "value": "tier=web,example.com/team=a"}) {
		t.Errorf("node labels %v", got)
	}
	if got := r["worker-node-taints KubeadmConfigTemplate /spec/template/spec/joinConfiguration/nodeRegistration/taints"]; !reflect.DeepEqual(got,
		[]any{map[string]any{"key": "dedicated", "value": "web", "effect": "NoSchedule"}}) {
		t.Errorf("node taints %v", got)
	}
	ngs[1].Labels = map[string]string{"node_taints": "gpu:NoExecute"}
	got, err := nodeGroupLabelVariables(ngs[1])
	if err != nil || !reflect.DeepEqual(got, []namedValue{{"nodeTaints", []any{map[string]any{"key": "gpu", "effect": "NoExecute"}}}}) {
		t.Errorf("nodegroup: %v, %v", got, err)
	}
	for _, bad := range []map[string]string{
		{"node_labels": "node-role.kubernetes.io/worker=x"}, {"node_labels": "novalue"}, {"node_taints": "a=b"},
		{"node_taints": "a=b:Sometimes"}, {"node_labels": "a=" + strings.Repeat("x", 64)},
	} {
		c.Labels = bad
		if _, err := buildCluster(c, tmpl, ngs, "ns", "n", "v3"); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c.Labels = map[string]string{"node_labels": "node.kubernetes.io/pool=a"}
	if _, err := buildCluster(c, tmpl, ngs, "ns", "n", "v3"); err != nil {
		t.Errorf("node.kubernetes.io refused: %v", err)
	}
}
