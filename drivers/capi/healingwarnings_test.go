package capi

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// healingNodeGroups are a control plane and the given workers, each with
// the cluster's labels copied (as Magnum copies them) under its own.
func healingNodeGroups(cluster map[string]string, workers ...*objects.NodeGroup) []*objects.NodeGroup {
	ngs := []*objects.NodeGroup{{UUID: "ng-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, Labels: cluster}}
	for _, ng := range workers {
		l := map[string]string{}
		for k, v := range cluster {
			l[k] = v
		}
		for k, v := range ng.Labels {
			l[k] = v
		}
		ngs = append(ngs, &objects.NodeGroup{UUID: "ng-" + ng.Name, Name: ng.Name, Role: objects.RoleWorker, NodeCount: 2, Labels: l})
	}
	return ngs
}

// With auto_healing_enabled false on the cluster, its auto-healing labels
// are reported as not applied, by name, unless a worker nodegroup with
// auto-healing on takes them: the control plane's maximum always is, a
// worker label only when no such nodegroup uses the cluster's value. The
// claim is checked against the topology the driver builds.
func TestHealingLabelsReportedWhenAutoHealingIsOff(t *testing.T) {
	s := DefaultLabelSchema()
	declared, err := classSet(nil).variables(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	cluster := map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "10m",
		"auto_healing_node_startup_timeout": "30m", "auto_healing_max_unhealthy": "2", "auto_healing_control_plane_max_unhealthy": "0"}
	worker := &objects.NodeGroup{Name: "default-worker"}
	for _, tc := range []struct {
		name    string
		workers []*objects.NodeGroup
		want    []string
	}{
		{"no worker heals", []*objects.NodeGroup{worker}, []string{"labels not applied (auto_healing_enabled is false): " +
			"auto_healing_control_plane_max_unhealthy, auto_healing_max_unhealthy, auto_healing_node_startup_timeout, auto_healing_unhealthy_timeout"}},
		{"a worker heals with the cluster's values", []*objects.NodeGroup{worker,
			{Name: "gpu", Labels: map[string]string{"auto_healing_enabled": "true"}}},
			[]string{"labels not applied (auto_healing_enabled is false): auto_healing_control_plane_max_unhealthy"}},
		{"a worker heals with its own timeout", []*objects.NodeGroup{worker,
			{Name: "gpu", Labels: map[string]string{"auto_healing_enabled": "true", "auto_healing_unhealthy_timeout": "15m"}}},
			[]string{"labels not applied (auto_healing_enabled is false): auto_healing_control_plane_max_unhealthy, auto_healing_unhealthy_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ngs := healingNodeGroups(cluster, tc.workers...)
			got := s.healingLabelWarnings(cluster, ngs, declared)
			if !slices.Equal(got, tc.want) {
				t.Errorf("warnings %q\nwant %q", got, tc.want)
			}
			for _, w := range got {
				for _, v := range []string{"10m", "30m", "15m"} {
					if strings.Contains(w, v) {
						t.Errorf("warning %q shows the value %q", w, v)
					}
				}
			}
			// What the topology applies: the control plane's check is off;
			// a worker's is on only with its own auto_healing_enabled=true,
			// and then carries the cluster's values unless its own.
			cl := builtHealingCluster(t, cluster, ngs)
			if cp := cl.Spec.Topology.ControlPlane.HealthCheck; cp.Enabled == nil || *cp.Enabled || cp.IsDefined() {
				t.Errorf("control plane's healthCheck %+v, want disabled", cp)
			}
			for _, ng := range ngs[1:] {
				hc := machineDeploymentHealthCheck(t, cl, mdNameFor(ng))
				heals := ng.Labels["auto_healing_enabled"] == "true"
				if hc.Enabled == nil || *hc.Enabled != heals {
					t.Fatalf("%s: healthCheck %+v, want enabled %v", ng.Name, hc, heals)
				}
				if heals && (hc.Checks.NodeStartupTimeoutSeconds == nil || *hc.Checks.NodeStartupTimeoutSeconds != 1800 ||
					hc.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo == nil || *hc.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo != intstr.FromInt32(2)) {
					t.Errorf("%s: healthCheck %+v, want the cluster's startup timeout and maximum", ng.Name, hc)
				}
			}
		})
	}

	// Auto-healing on, or a class without health checks (whose own
	// warning names the labels), or labels set to nothing: no warning.
	on := map[string]string{"auto_healing_unhealthy_timeout": "10m", "auto_healing_control_plane_max_unhealthy": "0"}
	if got := s.healingLabelWarnings(on, healingNodeGroups(on, worker), declared); len(got) != 0 {
		t.Errorf("auto-healing on: %q", got)
	}
	declared1, err := classSet(nil).variables("v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.healingLabelWarnings(cluster, healingNodeGroups(cluster, worker), declared1); len(got) != 0 {
		t.Errorf("magnum-v1: %q", got)
	}
	empty := map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": ""}
	if got := s.healingLabelWarnings(empty, healingNodeGroups(empty, worker), declared); len(got) != 0 {
		t.Errorf("empty label: %q", got)
	}
}

// A site whose default is auto-healing off ([capi_driver]
// flavor_label_defaults) reports a cluster's auto-healing labels without
// the cluster setting auto_healing_enabled; one set to the site's default
// is not reported.
func TestHealingLabelsReportedWithAutoHealingOffBySiteDefault(t *testing.T) {
	s := DefaultLabelSchema()
	for i := range s {
		switch s[i].Name {
		case "auto_healing_enabled":
			s[i].Default = "false"
		case "auto_healing_max_unhealthy":
			s[i].Default = "3"
		}
	}
	declared, err := classSet(nil).variables(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	cluster := map[string]string{"auto_healing_node_startup_timeout": "30m", "auto_healing_max_unhealthy": "3"}
	got := s.healingLabelWarnings(cluster, healingNodeGroups(cluster, &objects.NodeGroup{Name: "default-worker"}), declared)
	if want := []string{"labels not applied (auto_healing_enabled is false): auto_healing_node_startup_timeout"}; !slices.Equal(got, want) {
		t.Errorf("warnings %q\nwant %q", got, want)
	}
}

// A worker nodegroup with auto-healing off (its own auto_healing_enabled,
// or the cluster's) that sets its own auto-healing labels has them
// reported; values copied from the cluster, and a nodegroup that heals,
// are not.
func TestNodeGroupHealingLabelsReportedWhenAutoHealingIsOff(t *testing.T) {
	s := DefaultLabelSchema()
	declared, err := classSet(nil).variables(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		cluster, labels map[string]string
		want            []string
		heals           bool // the nodegroup's health check is on
	}{
		{"off on the cluster", map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "10m"},
			map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "15m", "auto_healing_max_unhealthy": "1"},
			[]string{"labels of nodegroup gpu not applied (auto_healing_enabled is false): auto_healing_max_unhealthy, auto_healing_unhealthy_timeout"}, false},
		{"off by the cluster's value", map[string]string{"auto_healing_enabled": "false"},
			map[string]string{"auto_healing_node_startup_timeout": "1h"},
			[]string{"labels of nodegroup gpu not applied (auto_healing_enabled is false): auto_healing_node_startup_timeout"}, false},
		{"copied from the cluster", map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "10m"},
			map[string]string{"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "10m"}, nil, false},
		{"on for the nodegroup", map[string]string{"auto_healing_enabled": "false"},
			map[string]string{"auto_healing_enabled": "true", "auto_healing_unhealthy_timeout": "15m"}, nil, true},
		{"on for the cluster", nil, map[string]string{"auto_healing_unhealthy_timeout": "15m"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpu := &objects.NodeGroup{Name: "gpu", Role: objects.RoleWorker, Labels: tc.labels}
			if got := s.nodeGroupLabelWarnings(gpu, tc.cluster, declared, LatestClassVersion); !slices.Equal(got, tc.want) {
				t.Errorf("warnings %q\nwant %q", got, tc.want)
			}
			// Against the topology: the health check is on exactly where
			// the nodegroup's labels are applied.
			cl := builtHealingCluster(t, tc.cluster, []*objects.NodeGroup{
				{UUID: "ng-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1}, gpu})
			hc := machineDeploymentHealthCheck(t, cl, mdNameFor(gpu))
			if heals := hc.Enabled != nil && *hc.Enabled; heals != tc.heals || heals && (hc.Checks.UnhealthyNodeConditions == nil ||
				*hc.Checks.UnhealthyNodeConditions[0].TimeoutSeconds != 900) {
				t.Errorf("healthCheck %+v, want enabled %v with the nodegroup's timeout", hc, tc.heals)
			}
		})
	}
}

// The warnings reach the Cluster's annotation at an apply and from it
// the cluster's status_reason, after the other label warnings.
func TestHealingLabelWarningsReachStatusReason(t *testing.T) {
	d := &Driver{opts: Options{Labels: DefaultLabelSchema()}, log: slog.New(slog.DiscardHandler)}
	labels := map[string]string{"auto_healing_enabled": "false", "auto_healing_control_plane_max_unhealthy": "0", "kube_tag_typo": "x"}
	c := &objects.Cluster{UUID: ptr("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), Labels: labels}
	gpu := &objects.NodeGroup{Name: "gpu", Role: objects.RoleWorker, Labels: map[string]string{"auto_healing_max_unhealthy": "1"}}
	ann := map[string]string{}
	if err := d.noteLabelWarnings(context.Background(), c, nil, healingNodeGroups(labels, gpu), LatestClassVersion, ann); err != nil {
		t.Fatal(err)
	}
	cl := &clusterv1.Cluster{}
	cl.Annotations = ann
	want := "waiting (warning: labels not understood by the Cluster API driver, ignored: kube_tag_typo; " +
		"labels not applied (auto_healing_enabled is false): auto_healing_control_plane_max_unhealthy; " +
		"labels of nodegroup gpu not applied (auto_healing_enabled is false): auto_healing_max_unhealthy)"
	if got := withLabelWarnings("waiting", cl); got != want {
		t.Errorf("status_reason %q\nwant %q", got, want)
	}
}

// builtHealingCluster is the Cluster the driver builds for labels and ngs
// on the latest class.
func builtHealingCluster(t *testing.T, labels map[string]string, ngs []*objects.NodeGroup) *clusterv1.Cluster {
	t.Helper()
	cl, err := desiredHealingCluster(t, LatestClassVersion, labels, ngs)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
