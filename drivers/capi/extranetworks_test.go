package capi

import (
	"reflect"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

const (
	workerPorts   = "worker-extra-networks OpenStackMachineTemplate /spec/template/spec/ports"
	cpInitCiphers = "kubelet-tls-cipher-suites KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/initConfiguration/nodeRegistration/kubeletExtraArgs/-"
	cpJoinCiphers = "kubelet-tls-cipher-suites KubeadmControlPlaneTemplate /spec/template/spec/kubeadmConfigSpec/joinConfiguration/nodeRegistration/kubeletExtraArgs/-"
	workerCiphers = "kubelet-tls-cipher-suites KubeadmConfigTemplate /spec/template/spec/joinConfiguration/nodeRegistration/kubeletExtraArgs/-"
)

// magnum-v4: extra_network_names (comma- or space-separated, as
// magnum-capi-helm writes it; extra_network_name when it is unset) gives
// the workers a port on each network after their port on the cluster's;
// kubelet_tls_cipher_suites is every kubelet's --tls-cipher-suites.
// Nothing of it without the labels.
func TestExtraNetworksAndKubeletCiphersRender(t *testing.T) {
	r := renderPatches(t, "v4", map[string]string{"extra_network_names": "storage cephfs,storage", "extra_network_name": "old",
		"kubelet_tls_cipher_suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
	wantPorts := []any{map[string]any{}, map[string]any{"network": map[string]any{"filter": map[string]any{"name": "storage"}}},
		map[string]any{"network": map[string]any{"filter": map[string]any{"name": "cephfs"}}}}
	if !reflect.DeepEqual(r[workerPorts], wantPorts) {
		t.Errorf("ports %#v\nwant %#v", r[workerPorts], wantPorts)
	}
	arg := map[string]any{"name": "tls-cipher-suites", "value": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
	for _, k := range []string{cpInitCiphers, cpJoinCiphers, workerCiphers} {
		if !reflect.DeepEqual(r[k], arg) {
			t.Errorf("%s = %#v", k, r[k])
		}
	}
	r = renderPatches(t, "v4", map[string]string{"extra_network_name": "old"})
	if want := []any{map[string]any{}, map[string]any{"network": map[string]any{"filter": map[string]any{"name": "old"}}}}; !reflect.DeepEqual(r[workerPorts], want) {
		t.Errorf("extra_network_name alone: ports %#v", r[workerPorts])
	}
	r = renderPatches(t, "v4", nil)
	for _, k := range []string{workerPorts, cpInitCiphers, cpJoinCiphers, workerCiphers} {
		if v, ok := r[k]; ok {
			t.Errorf("without the labels: %s = %#v", k, v)
		}
	}
}

// A nodegroup's own extra_network_names override the cluster's for its
// MachineDeployment; a bad value is refused naming the nodegroup.
func TestNodeGroupExtraNetworks(t *testing.T) {
	c, tmpl, ngs := defaultMagnumCluster()
	c.Labels["extra_network_names"] = "storage"
	gpu := &objects.NodeGroup{UUID: "ng-gpu", Name: "gpu", Role: objects.RoleWorker, NodeCount: 1, ClusterID: deref(c.UUID),
		Labels: map[string]string{"extra_network_names": "fast-storage rdma"}}
	cl, err := desiredCluster(spec{Cluster: c, Template: tmpl, NodeGroups: append(ngs, gpu), Labels: mustParse(t, c, tmpl),
		Namespace: "ns", Name: "n", ClassVersion: "v4", IdentityRef: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if got := variableString(cl, "extraNetworks"); got != "" {
		t.Fatalf("extraNetworks read as a string: %q", got)
	}
	found := false
	for _, v := range cl.Spec.Topology.Variables {
		if v.Name == "extraNetworks" {
			found = string(v.Value.Raw) == `["storage"]`
		}
	}
	if !found {
		t.Errorf("cluster extraNetworks: %v", cl.Spec.Topology.Variables)
	}
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		var got string
		for _, o := range md.Variables.Overrides {
			if o.Name == "extraNetworks" {
				got = string(o.Value.Raw)
			}
		}
		want := map[string]string{"gpu": `["fast-storage","rdma"]`}[md.Name]
		if got != want {
			t.Errorf("MachineDeployment %s: extraNetworks override %q, want %q", md.Name, got, want)
		}
	}
	gpu.Labels["extra_network_names"] = "bad!name"
	if _, err := desiredCluster(spec{Cluster: c, Template: tmpl, NodeGroups: append(ngs, gpu), Labels: mustParse(t, c, tmpl),
		Namespace: "ns", Name: "n", ClassVersion: "v4", IdentityRef: "secret"}); !isInvalid(err, "extra_network_names of nodegroup gpu") {
		t.Errorf("bad nodegroup label: %v", err)
	}
}

func mustParse(t *testing.T, c *objects.Cluster, tmpl *objects.ClusterTemplate) Labels {
	t.Helper()
	l, err := DefaultLabelSchema().Parse(mergedLabels(c, tmpl))
	if err != nil {
		t.Fatal(err)
	}
	return l
}
