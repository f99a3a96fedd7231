package capi

import (
	"slices"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

// A nodegroup's labels are reported when the driver does not understand
// them (unless the cluster has them too: its own warning names them), when
// they only apply to the whole cluster and differ from the cluster's, and
// when they are the nodegroup's own but the class cannot apply them;
// labels copied from the cluster, and the nodegroup's own, are not.
func TestNodeGroupLabelWarnings(t *testing.T) {
	s := DefaultLabelSchema()
	cluster := map[string]string{"kube_tag": "v1.33.4", "heat_container_agent_tag": "x", "http_proxy": "http://p:3128"}
	declared3, err := classSet(nil).variables("v3")
	if err != nil {
		t.Fatal(err)
	}
	declared1, err := classSet(nil).variables("v1")
	if err != nil {
		t.Fatal(err)
	}
	worker := &objects.NodeGroup{Name: "gpu", Role: objects.RoleWorker, Labels: map[string]string{
		"kube_tag": "v1.33.4", "heat_container_agent_tag": "x", // copied from the cluster
		"http_proxy":        "http://other:3128", // cluster-wide, another value
		"kube_tag_typo":     "v1.34.0",           // not understood
		"node_labels":       "gpu=true",          // its own
		"availability_zone": "az2",               // its own
		"boot_volume_size":  "50",                // its own
		"audit_log_enabled": "false",             // the default, cluster unset
	}}
	got := s.nodeGroupLabelWarnings(worker, cluster, declared3, "v3")
	want := []string{
		"labels of nodegroup gpu not understood by the Cluster API driver, ignored: kube_tag_typo",
		"labels of nodegroup gpu that only the cluster sets, ignored: http_proxy",
	}
	if !slices.Equal(got, want) {
		t.Errorf("v3: %q\nwant %q", got, want)
	}
	// On magnum-v1 the nodegroup's node_labels have no variable.
	got = s.nodeGroupLabelWarnings(worker, cluster, declared1, "v1")
	if len(got) != 3 || got[2] != "labels of nodegroup gpu not applied by ClusterClass magnum-v1 (an upgrade to a newer class applies them): node_labels" {
		t.Errorf("v1: %q", got)
	}
	// The control plane has no labels of its own.
	master := &objects.NodeGroup{Name: "default-master", Role: objects.RoleMaster, Labels: map[string]string{
		"kube_tag": "v1.33.4", "availability_zone": "az1"}}
	got = s.nodeGroupLabelWarnings(master, cluster, declared3, "v3")
	if !slices.Equal(got, []string{"labels of nodegroup default-master that only the cluster sets, ignored: availability_zone"}) {
		t.Errorf("master: %q", got)
	}
	// Values never appear.
	for _, w := range s.nodeGroupLabelWarnings(worker, cluster, declared3, "v3") {
		for _, v := range []string{"other", "v1.34.0", "gpu=true"} {
			if strings.Contains(w, v) {
				t.Errorf("warning %q shows the value %q", w, v)
			}
		}
	}
}
