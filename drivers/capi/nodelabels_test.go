package capi

import (
	"maps"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

// TestNodeLabelsNameTheNodeGroupAndRole: the labels Cluster API copies to
// the Nodes name the nodegroup and, for workers, the role; names and roles
// that are no valid label value or key are sanitised or left out.
func TestNodeLabelsNameTheNodeGroupAndRole(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		name string
		ng   objects.NodeGroup
		want map[string]string
	}{
		{"default worker", objects.NodeGroup{Name: "default-worker", Role: objects.RoleWorker},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "default-worker", "node-role.kubernetes.io/worker": ""}},
		{"master: kubeadm sets its role", objects.NodeGroup{Name: "default-master", Role: objects.RoleMaster},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "default-master"}},
		{"custom role", objects.NodeGroup{Name: "ingress_pool.a", Role: "infra"},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "ingress_pool.a", "node-role.kubernetes.io/infra": ""}},
		{"no role is a worker", objects.NodeGroup{Name: "w"},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "w", "node-role.kubernetes.io/worker": ""}},
		{"role that is no label key", objects.NodeGroup{Name: "w", Role: "GPU nodes!"},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "w"}},
		{"name with a space", objects.NodeGroup{Name: "GPU pool", Role: objects.RoleWorker},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": "gpu-pool", "node-role.kubernetes.io/worker": ""}},
		{"name longer than a label value", objects.NodeGroup{Name: long, Role: objects.RoleWorker},
			map[string]string{"node.cluster.x-k8s.io/nodegroup": mdNameFor(&objects.NodeGroup{Name: long}), "node-role.kubernetes.io/worker": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withNodeLabels(map[string]string{LabelRole: "kept"}, &tt.ng)
			want := maps.Clone(tt.want)
			want[LabelRole] = "kept"
			if !maps.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}
