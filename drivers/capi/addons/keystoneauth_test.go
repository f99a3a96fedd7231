package addons

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestKeystoneAuthObjects: the k8s-keystone-auth add-on's objects, built
// in Go: a hostNetwork DaemonSet on control-plane nodes listening where the
// ClusterClass's webhook kubeconfig points (127.0.0.1:8443), at the
// cluster's Keystone, with Magnum's default policy for its project; the
// image follows the Kubernetes minor, cloud_provider_tag and the registry
// override; keystone_auth_enabled=false and the addons option leave it out.
func TestKeystoneAuthObjects(t *testing.T) {
	ctx := context.Background()
	s := Settings{Builtin: []string{"keystone-auth"}}
	render := func(l labels, mod func(*Cluster)) []AddOn {
		t.Helper()
		cl := testCluster(l)
		cl.ProjectID = "0123456789abcdef0123456789abcdef"
		if mod != nil {
			mod(&cl)
		}
		set, err := Render(ctx, NewCharts(t.TempDir(), nil), s, cl)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	set := render(labels{}, nil)
	if got := names(set); !slices.Equal(got, []string{"cloud-config", KeystoneAuth}) {
		t.Fatalf("add-ons %v", got)
	}
	ka := byName(t, set, KeystoneAuth)
	for _, kn := range []kindName{{"ServiceAccount", KeystoneAuth}, {"ClusterRole", KeystoneAuth}, {"ClusterRoleBinding", KeystoneAuth},
		{"ConfigMap", "k8s-keystone-auth-policy"}, {"DaemonSet", KeystoneAuth}} {
		if find(ka.Objects, kn.Kind, kn.Name) == nil {
			t.Errorf("no %s %s", kn.Kind, kn.Name)
		}
	}
	ds := find(ka.Objects, "DaemonSet", KeystoneAuth)
	if ns := ds["metadata"].(map[string]any)["namespace"]; ns != "kube-system" {
		t.Errorf("DaemonSet namespace %v", ns)
	}
	pod := ds["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if pod["hostNetwork"] != true {
		t.Error("not on the host network: the API server calls 127.0.0.1")
	}
	if _, ok := pod["nodeSelector"].(map[string]any)["node-role.kubernetes.io/control-plane"]; !ok {
		t.Errorf("nodeSelector %v", pod["nodeSelector"])
	}
	c := container(t, ds, KeystoneAuth)
	if c["image"] != "registry.k8s.io/provider-os/k8s-keystone-auth:v1.34.1" {
		t.Errorf("image %v", c["image"])
	}
	for _, arg := range []string{"--listen=127.0.0.1:8443", "--keystone-url=https://keystone.example/v3",
		"--policy-configmap-name=k8s-keystone-auth-policy", "--keystone-ca-file=/etc/config/ca.crt"} {
		if !hasArg(c, arg) {
			t.Errorf("args %v lack %s", c["args"], arg)
		}
	}
	if KeystoneAuthListen+KeystoneAuthPath != "127.0.0.1:8443/webhook" {
		t.Errorf("the webhook is at %s%s; the ClusterClass's kubeconfig says https://127.0.0.1:8443/webhook", KeystoneAuthListen, KeystoneAuthPath)
	}
	var policy []struct {
		Resource struct{ Verbs, Resources []string }
		Match    []struct {
			Type   string
			Values []string
		}
	}
	cm := find(ka.Objects, "ConfigMap", "k8s-keystone-auth-policy")
	if err := json.Unmarshal([]byte(cm["data"].(map[string]any)["policies"].(string)), &policy); err != nil {
		t.Fatal(err)
	}
	if len(policy) != 1 || len(policy[0].Match) != 2 || policy[0].Match[0].Values[0] != "member" ||
		policy[0].Match[1].Type != "project" || policy[0].Match[1].Values[0] != "0123456789abcdef0123456789abcdef" {
		t.Errorf("policy %+v", policy)
	}
	if strings.Contains(mustJSON(ka.Objects), "s3cr3t") {
		t.Error("the application credential's secret is in k8s-keystone-auth's objects")
	}

	// Older minor, tag label, registry, no CA.
	set = render(labels{"cloud_provider_tag": "v1.33.9", "container_infra_prefix": "mirror.example/k8s"}, func(c *Cluster) { c.Credential.CACert = "" })
	c = container(t, find(byName(t, set, KeystoneAuth).Objects, "DaemonSet", KeystoneAuth), KeystoneAuth)
	if c["image"] != "mirror.example/k8s/k8s-keystone-auth:v1.33.9" {
		t.Errorf("image %v", c["image"])
	}
	if strings.Contains(mustJSON(c["args"]), "ca-file") {
		t.Errorf("a CA file without a CA: %v", c["args"])
	}
	set = render(labels{}, func(c *Cluster) { c.KubeVersion = "v1.32.4" })
	if c := container(t, find(byName(t, set, KeystoneAuth).Objects, "DaemonSet", KeystoneAuth), KeystoneAuth); c["image"] != "registry.k8s.io/provider-os/k8s-keystone-auth:v1.32.0" {
		t.Errorf("1.32 image %v", c["image"])
	}

	if got := names(render(labels{"keystone_auth_enabled": "false"}, nil)); slices.Contains(got, KeystoneAuth) {
		t.Errorf("keystone_auth_enabled=false: %v", got)
	}
	if got := names(render2(t, Settings{Builtin: []string{}})); slices.Contains(got, KeystoneAuth) {
		t.Errorf("addons without keystone-auth: %v", got)
	}
}

func render2(t *testing.T, s Settings) []AddOn {
	t.Helper()
	set, err := Render(context.Background(), NewCharts(t.TempDir(), nil), s, testCluster(labels{}))
	if err != nil {
		t.Fatal(err)
	}
	return set
}
