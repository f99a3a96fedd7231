package capi

import (
	"testing"
)

// TestLabelReference checks the classes and scopes the documentation's
// label table shows, and that every label comes with its documentation.
func TestLabelReference(t *testing.T) {
	refs, err := LabelReference()
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(DefaultLabelSchema()) {
		t.Fatalf("%d labels documented, the schema has %d", len(refs), len(DefaultLabelSchema()))
	}
	byName := map[string]LabelRef{}
	for _, r := range refs {
		byName[r.Name] = r
		if r.Help == "" || r.Anchors == "" {
			t.Errorf("label %s: Help and Anchors document it (docs/capi-driver.md, make docs)", r.Name)
		}
		if r.Default != "" && r.Unset != "" {
			t.Errorf("label %s: Unset documents a label without a Default, this one has %q", r.Name, r.Default)
		}
	}
	for name, want := range map[string]struct {
		class     string
		nodeGroup bool
	}{
		"kube_tag":                                 {"", false},
		"boot_volume_size":                         {"", true},
		"auto_healing_enabled":                     {"", true},
		"auto_healing_unhealthy_timeout":           {"v2", true},
		"auto_healing_control_plane_max_unhealthy": {"v2", false},
		"etcd_volume_size":                         {"v3", false},
		"server_group_policies":                    {"v3", true},
		"node_labels":                              {"v3", true},
		"keystone_auth_enabled":                    {"v3", false},
		"extra_network_names":                      {"v4", true},
		"kubelet_tls_cipher_suites":                {"v4", false},
		"calico_tag":                               {"", false},
	} {
		r, ok := byName[name]
		if !ok {
			t.Errorf("label %s not in the reference", name)
			continue
		}
		if r.Class != want.class || r.NodeGroup != want.nodeGroup {
			t.Errorf("label %s: class %q, nodegroup %v; want %q, %v", name, r.Class, r.NodeGroup, want.class, want.nodeGroup)
		}
	}
}
