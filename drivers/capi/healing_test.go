package capi

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// desiredHealingCluster is the Cluster the driver builds, on class
// version, for the cluster "heal" with labels and nodegroups ngs.
func desiredHealingCluster(t *testing.T, version string, labels map[string]string, ngs []*objects.NodeGroup) (*clusterv1.Cluster, error) {
	t.Helper()
	l, err := DefaultLabelSchema().Parse(labels)
	if err != nil {
		t.Fatal(err)
	}
	c := &objects.Cluster{UUID: ptr("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), Name: ptr("heal"), ProjectID: ptr("p"), FlavorID: ptr("m1"), MasterFlavorID: ptr("m1"),
		FloatingIPEnabled: true, MasterLBEnabled: true}
	return desiredCluster(spec{Cluster: c, Template: &objects.ClusterTemplate{ImageID: ptr("img-1"), ExternalNetworkID: ptr("public")}, NodeGroups: ngs, Labels: l,
		Namespace: "ns", Name: "heal-3f2504", ClassVersion: version, IdentityRef: "heal-3f2504-cloud-credentials"})
}

// healingCluster builds the desired Cluster of a two-nodegroup cluster on
// class version with labels.
func healingCluster(t *testing.T, version string, labels map[string]string) *clusterv1.Cluster {
	t.Helper()
	cl, err := desiredHealingCluster(t, version, labels, []*objects.NodeGroup{
		{UUID: "ng-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 3},
		{UUID: "ng-w", Name: "default-worker", Role: objects.RoleWorker, NodeCount: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Without the labels the class's health checks apply unchanged: the
// topology only enables them (an override would replace the class's).
func TestHealthChecksWithoutLabelsKeepTheClassDefinition(t *testing.T) {
	cl := healingCluster(t, LatestClassVersion, nil)
	md := cl.Spec.Topology.Workers.MachineDeployments[0].HealthCheck
	cp := cl.Spec.Topology.ControlPlane.HealthCheck
	if md.Enabled == nil || !*md.Enabled || md.IsDefined() {
		t.Errorf("workers' healthCheck = %+v, want enabled, no override", md)
	}
	if cp.Enabled == nil || !*cp.Enabled || cp.IsDefined() {
		t.Errorf("control plane's healthCheck = %+v, want enabled, no override", cp)
	}
}

func TestHealthCheckLabelsOverrideTheClass(t *testing.T) {
	cl := healingCluster(t, LatestClassVersion, map[string]string{
		"auto_healing_unhealthy_timeout": "10m", "auto_healing_node_startup_timeout": "1800",
		"auto_healing_max_unhealthy": "2", "auto_healing_control_plane_max_unhealthy": "0"})
	md := cl.Spec.Topology.Workers.MachineDeployments[0].HealthCheck
	if md.Checks.NodeStartupTimeoutSeconds == nil || *md.Checks.NodeStartupTimeoutSeconds != 1800 {
		t.Errorf("workers' node start-up timeout = %v, want 1800", md.Checks.NodeStartupTimeoutSeconds)
	}
	// The class's two conditions (Ready Unknown and False), both at 600 s.
	if len(md.Checks.UnhealthyNodeConditions) != 2 {
		t.Fatalf("workers' conditions = %+v, want the class's two", md.Checks.UnhealthyNodeConditions)
	}
	for _, c := range md.Checks.UnhealthyNodeConditions {
		if c.Type != "Ready" || c.TimeoutSeconds == nil || *c.TimeoutSeconds != 600 {
			t.Errorf("workers' condition %+v, want Ready after 600 s", c)
		}
	}
	if got := md.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || *got != intstr.FromInt32(2) {
		t.Errorf("workers' max unhealthy = %v, want 2", got)
	}
	cp := cl.Spec.Topology.ControlPlane.HealthCheck
	if cp.Checks.NodeStartupTimeoutSeconds == nil || *cp.Checks.NodeStartupTimeoutSeconds != 1800 || len(cp.Checks.UnhealthyNodeConditions) != 2 ||
		*cp.Checks.UnhealthyNodeConditions[1].TimeoutSeconds != 600 {
		t.Errorf("control plane's checks = %+v", cp.Checks)
	}
	if got := cp.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || *got != intstr.FromInt32(0) {
		t.Errorf("control plane's max unhealthy = %v, want 0", got)
	}
}

// One label overrides one value; the rest of the override is the class's.
func TestHealthCheckLabelKeepsTheClasssOtherValues(t *testing.T) {
	cl := healingCluster(t, LatestClassVersion, map[string]string{"auto_healing_max_unhealthy": "25%"})
	md := cl.Spec.Topology.Workers.MachineDeployments[0].HealthCheck
	if got := md.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || got.String() != "25%" {
		t.Errorf("workers' max unhealthy = %v, want 25%%", got)
	}
	if md.Checks.NodeStartupTimeoutSeconds == nil || *md.Checks.NodeStartupTimeoutSeconds != 1200 ||
		len(md.Checks.UnhealthyNodeConditions) != 2 || *md.Checks.UnhealthyNodeConditions[0].TimeoutSeconds != 300 {
		t.Errorf("workers' checks = %+v, want the class's (1200 s, Ready after 300 s)", md.Checks)
	}
	// The control plane has no label of its own set: no override.
	if cp := cl.Spec.Topology.ControlPlane.HealthCheck; cp.IsDefined() {
		t.Errorf("control plane's healthCheck = %+v, want no override", cp)
	}
}

// Auto-healing off, or a class without health checks: nothing to override.
func TestHealthCheckLabelsWithoutHealthChecks(t *testing.T) {
	labels := map[string]string{"auto_healing_unhealthy_timeout": "10m", "auto_healing_enabled": "false"}
	cl := healingCluster(t, LatestClassVersion, labels)
	if md := cl.Spec.Topology.Workers.MachineDeployments[0].HealthCheck; md.IsDefined() || md.Enabled == nil || *md.Enabled {
		t.Errorf("auto-healing off: workers' healthCheck = %+v", md)
	}
	delete(labels, "auto_healing_enabled")
	cl = healingCluster(t, "v1", labels)
	if md := cl.Spec.Topology.Workers.MachineDeployments[0].HealthCheck; md.IsDefined() || (md.Enabled != nil && *md.Enabled) {
		t.Errorf("magnum-v1: workers' healthCheck = %+v", md)
	}
	if cp := cl.Spec.Topology.ControlPlane.HealthCheck; cp.IsDefined() || cp.Enabled != nil {
		t.Errorf("magnum-v1: control plane's healthCheck = %+v", cp)
	}
	// ... and the label is reported as not applied by that class.
	declared, err := classSet(nil).variables("v1")
	if err != nil {
		t.Fatal(err)
	}
	w := DefaultLabelSchema().LabelWarnings(labels, declared, "v1")
	if len(w) != 1 || !strings.Contains(w[0], "not applied by ClusterClass magnum-v1") || !strings.Contains(w[0], "auto_healing_unhealthy_timeout") {
		t.Errorf("warnings on magnum-v1 = %q", w)
	}
	declared, err = classSet(nil).variables(LatestClassVersion)
	if err != nil {
		t.Fatal(err)
	}
	if w := DefaultLabelSchema().LabelWarnings(labels, declared, LatestClassVersion); len(w) != 0 {
		t.Errorf("warnings on %s = %q, want none", LatestClassVersion, w)
	}
}

func TestBadHealthCheckLabelIsInvalidParameterValue(t *testing.T) {
	for _, tc := range []struct{ label, value, want string }{
		{"auto_healing_unhealthy_timeout", "soon", "auto_healing_unhealthy_timeout: must be a duration"},
		{"auto_healing_unhealthy_timeout", "10s", "auto_healing_unhealthy_timeout: must be between 30 and 86400 seconds"},
		{"auto_healing_node_startup_timeout", "1.5s", "auto_healing_node_startup_timeout: must be a duration"},
		{"auto_healing_node_startup_timeout", "48h", "must be between 30 and 86400 seconds"},
		{"auto_healing_max_unhealthy", "140%", "auto_healing_max_unhealthy: must be a percentage from 0% to 100%"},
		{"auto_healing_max_unhealthy", "-1", "auto_healing_max_unhealthy: must be between 0 and 1000 machines"},
		{"auto_healing_max_unhealthy", "most", "must be a number of machines or a percentage"},
		{"auto_healing_control_plane_max_unhealthy", "9", "auto_healing_control_plane_max_unhealthy: must be between 0 and 7"},
	} {
		_, err := DefaultLabelSchema().Parse(map[string]string{tc.label: tc.value})
		if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) {
			t.Errorf("%s=%s: err = %v, want InvalidParameterValue", tc.label, tc.value, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: message %q, want %q", tc.label, tc.value, err.Error(), tc.want)
		}
	}
	for _, ok := range []struct{ label, value string }{
		{"auto_healing_unhealthy_timeout", "300"}, {"auto_healing_unhealthy_timeout", "1h30m"},
		{"auto_healing_max_unhealthy", "100%"}, {"auto_healing_max_unhealthy", "0"},
		{"auto_healing_control_plane_max_unhealthy", "40%"},
	} {
		if _, err := DefaultLabelSchema().Parse(map[string]string{ok.label: ok.value}); err != nil {
			t.Errorf("%s=%s refused: %v", ok.label, ok.value, err)
		}
	}
}

// TestHealthCheckOverridesStored (test API server): a create with every
// auto-healing label, and nodegroups with their own, writes a Cluster the
// API server accepts (the CRD's schema and validation rules) and stores
// with the overrides; a nodegroup created or updated with a bad one is
// refused and the Cluster left as it was.
func TestHealthCheckOverridesStored(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.newCluster("healing", map[string]string{"kube_tag": "v1.33.4", "auto_healing_unhealthy_timeout": "10m",
		"auto_healing_node_startup_timeout": "30m", "auto_healing_max_unhealthy": "25%", "auto_healing_control_plane_max_unhealthy": "0"},
		&objects.NodeGroup{Name: "default-worker", NodeCount: 2},
		&objects.NodeGroup{Name: "gpu", NodeCount: 1, Labels: map[string]string{"auto_healing_unhealthy_timeout": "15m", "auto_healing_max_unhealthy": "1"}},
		&objects.NodeGroup{Name: "batch", NodeCount: 1, Labels: map[string]string{"auto_healing_enabled": "false"}})
	if err := e.create(ctx, c, 60); err != nil {
		t.Fatal(err)
	}
	r, _ := refOf(c)
	cl := e.getCluster(t, r)
	wantWorkerCheck(t, "stored gpu", machineDeploymentHealthCheck(t, cl, "gpu"), 900, 1800, "1")
	if hc := machineDeploymentHealthCheck(t, cl, "batch"); hc.Enabled == nil || *hc.Enabled || hc.IsDefined() {
		t.Errorf("stored batch healthCheck %+v, want disabled", hc)
	}
	for _, ng := range e.nodeGroups(c) {
		if ng.Name == "gpu" {
			own := ng.Labels
			ng.Labels = map[string]string{"auto_healing_max_unhealthy": "most"}
			if err := e.updateNG(ctx, c, ng); !isInvalid(err, `Invalid value "most" for label auto_healing_max_unhealthy of nodegroup gpu`) {
				t.Errorf("nodegroup update with a bad label: %v", err)
			}
			ng.Labels = own // the nodegroup create below reapplies every nodegroup
		}
	}
	bad := &objects.NodeGroup{Name: "bad", UUID: "ng-bad", Role: objects.RoleWorker, NodeCount: 1, ClusterID: deref(c.UUID),
		Labels: map[string]string{"auto_healing_node_startup_timeout": "2d"}}
	if err := e.createNG(ctx, c, bad); !isInvalid(err, "auto_healing_node_startup_timeout of nodegroup bad: must be a duration") {
		t.Errorf("nodegroup create with a bad label: %v", err)
	}
	if after := e.getCluster(t, r); after.Generation != cl.Generation {
		t.Errorf("Cluster changed by refused nodegroup operations: generation %d, was %d", after.Generation, cl.Generation)
	}
	md := machineDeploymentHealthCheck(t, cl, "default-worker")
	if md.Checks.NodeStartupTimeoutSeconds == nil || *md.Checks.NodeStartupTimeoutSeconds != 1800 ||
		md.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo == nil || md.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo.String() != "25%" {
		t.Errorf("stored workers' healthCheck %+v", md)
	}
	cp := cl.Spec.Topology.ControlPlane.HealthCheck
	if len(cp.Checks.UnhealthyNodeConditions) != 2 || *cp.Checks.UnhealthyNodeConditions[0].TimeoutSeconds != 600 ||
		cp.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo == nil || cp.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo.IntValue() != 0 {
		t.Errorf("stored control plane's healthCheck %+v", cp)
	}
}

// nodeGroupHealingCluster builds the desired Cluster of a cluster with
// labels whose worker nodegroups carry the given labels of their own (by
// nodegroup name).
func nodeGroupHealingCluster(t *testing.T, labels map[string]string, workers map[string]map[string]string) (*clusterv1.Cluster, error) {
	t.Helper()
	ngs := []*objects.NodeGroup{{UUID: "ng-m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 3}}
	for _, name := range slices.Sorted(maps.Keys(workers)) {
		ngs = append(ngs, &objects.NodeGroup{UUID: "ng-" + name, Name: name, Role: objects.RoleWorker, NodeCount: 2, Labels: workers[name]})
	}
	return desiredHealingCluster(t, LatestClassVersion, labels, ngs)
}

// machineDeploymentHealthCheck is the healthCheck of MachineDeployment name.
func machineDeploymentHealthCheck(t *testing.T, cl *clusterv1.Cluster, name string) clusterv1.MachineDeploymentTopologyHealthCheck {
	t.Helper()
	for _, md := range cl.Spec.Topology.Workers.MachineDeployments {
		if md.Name == name {
			return md.HealthCheck
		}
	}
	t.Fatalf("no MachineDeployment %s", name)
	return clusterv1.MachineDeploymentTopologyHealthCheck{}
}

// wantWorkerCheck checks an overriding healthCheck: enabled, the class's
// two Ready conditions after unhealthy seconds, start-up after startup
// seconds, remediation paused above maxUnhealthy.
func wantWorkerCheck(t *testing.T, name string, hc clusterv1.MachineDeploymentTopologyHealthCheck, unhealthy, startup int32, maxUnhealthy string) {
	t.Helper()
	if hc.Enabled == nil || !*hc.Enabled || !hc.IsDefined() {
		t.Errorf("%s: healthCheck %+v, want enabled with an override", name, hc)
		return
	}
	if got := hc.Checks.NodeStartupTimeoutSeconds; got == nil || *got != startup {
		t.Errorf("%s: node start-up timeout %v, want %d", name, got, startup)
	}
	if len(hc.Checks.UnhealthyNodeConditions) != 2 {
		t.Errorf("%s: conditions %+v, want the class's two", name, hc.Checks.UnhealthyNodeConditions)
	}
	for _, c := range hc.Checks.UnhealthyNodeConditions {
		if c.Type != "Ready" || c.TimeoutSeconds == nil || *c.TimeoutSeconds != unhealthy {
			t.Errorf("%s: condition %+v, want Ready after %d s", name, c, unhealthy)
		}
	}
	if got := hc.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || got.String() != maxUnhealthy {
		t.Errorf("%s: max unhealthy %v, want %s", name, got, maxUnhealthy)
	}
}

// A worker nodegroup's own auto_healing_* labels override the cluster's,
// value by value, for its MachineDeployment only; labels copied from the
// cluster change nothing; auto_healing_enabled=false on a nodegroup
// disables its check; the control plane keeps the cluster's.
func TestNodeGroupHealingLabelsOverrideTheClusters(t *testing.T) {
	clusterLabels := map[string]string{"auto_healing_unhealthy_timeout": "10m", "auto_healing_max_unhealthy": "2",
		"auto_healing_control_plane_max_unhealthy": "0"}
	cl, err := nodeGroupHealingCluster(t, clusterLabels, map[string]map[string]string{
		"default-worker": nil,
		"copied":         maps.Clone(clusterLabels),
		"gpu": {"auto_healing_unhealthy_timeout": "15m", "auto_healing_max_unhealthy": "50%",
			"auto_healing_control_plane_max_unhealthy": "3"}, // the cluster's only: ignored here
		"startup": {"auto_healing_node_startup_timeout": "3600", "auto_healing_unhealthy_timeout": ""}, // empty: the cluster's
		"batch":   {"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "1h"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The class's start-up timeout is 1200 s.
	wantWorkerCheck(t, "default-worker", machineDeploymentHealthCheck(t, cl, "default-worker"), 600, 1200, "2")
	wantWorkerCheck(t, "copied", machineDeploymentHealthCheck(t, cl, "copied"), 600, 1200, "2")
	wantWorkerCheck(t, "gpu", machineDeploymentHealthCheck(t, cl, "gpu"), 900, 1200, "50%")
	wantWorkerCheck(t, "startup", machineDeploymentHealthCheck(t, cl, "startup"), 600, 3600, "2")
	if hc := machineDeploymentHealthCheck(t, cl, "batch"); hc.Enabled == nil || *hc.Enabled || hc.IsDefined() {
		t.Errorf("batch (auto_healing_enabled=false): healthCheck %+v, want disabled, no override", hc)
	}
	cp := cl.Spec.Topology.ControlPlane.HealthCheck
	if cp.Enabled == nil || !*cp.Enabled || len(cp.Checks.UnhealthyNodeConditions) != 2 || *cp.Checks.UnhealthyNodeConditions[0].TimeoutSeconds != 600 ||
		cp.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo == nil || *cp.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo != intstr.FromInt32(0) {
		t.Errorf("control plane's healthCheck %+v, want the cluster's (600 s, 0)", cp)
	}
}

// Without cluster labels, a nodegroup's own make the only override; a
// nodegroup's auto_healing_enabled=true turns its check on in a cluster
// that has auto-healing off (the control plane's stays off).
func TestNodeGroupHealingLabelsWithoutClusterLabels(t *testing.T) {
	cl, err := nodeGroupHealingCluster(t, nil, map[string]map[string]string{
		"default-worker": nil,
		"gpu":            {"auto_healing_max_unhealthy": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if hc := machineDeploymentHealthCheck(t, cl, "default-worker"); hc.Enabled == nil || !*hc.Enabled || hc.IsDefined() {
		t.Errorf("default-worker: healthCheck %+v, want enabled, no override", hc)
	}
	wantWorkerCheck(t, "gpu", machineDeploymentHealthCheck(t, cl, "gpu"), 300, 1200, "1")
	if cp := cl.Spec.Topology.ControlPlane.HealthCheck; cp.IsDefined() {
		t.Errorf("control plane's healthCheck %+v, want no override", cp)
	}

	cl, err = nodeGroupHealingCluster(t, map[string]string{"auto_healing_enabled": "false"}, map[string]map[string]string{
		"default-worker": nil,
		"gpu":            {"auto_healing_enabled": "true"},
		"gpu-fast":       {"auto_healing_enabled": "True", "auto_healing_unhealthy_timeout": "90s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if hc := machineDeploymentHealthCheck(t, cl, "default-worker"); hc.Enabled == nil || *hc.Enabled || hc.IsDefined() {
		t.Errorf("default-worker: healthCheck %+v, want disabled", hc)
	}
	if hc := machineDeploymentHealthCheck(t, cl, "gpu"); hc.Enabled == nil || !*hc.Enabled || hc.IsDefined() {
		t.Errorf("gpu: healthCheck %+v, want enabled, no override", hc)
	}
	wantWorkerCheck(t, "gpu-fast", machineDeploymentHealthCheck(t, cl, "gpu-fast"), 90, 1200, "40%")
	if cp := cl.Spec.Topology.ControlPlane.HealthCheck; cp.Enabled == nil || *cp.Enabled {
		t.Errorf("control plane's healthCheck %+v, want disabled", cp)
	}
}

// A nodegroup's bad auto_healing_* value is refused as the cluster's is,
// with InvalidParameterValue naming the label, the nodegroup and the rule.
func TestBadNodeGroupHealingLabelIsInvalidParameterValue(t *testing.T) {
	for _, tc := range []struct{ label, value, want string }{
		{"auto_healing_unhealthy_timeout", "soon", `Invalid value "soon" for label auto_healing_unhealthy_timeout of nodegroup gpu: must be a duration`},
		{"auto_healing_node_startup_timeout", "10s", "auto_healing_node_startup_timeout of nodegroup gpu: must be between 30 and 86400 seconds"},
		{"auto_healing_max_unhealthy", "140%", "auto_healing_max_unhealthy of nodegroup gpu: must be a percentage from 0% to 100%"},
		{"auto_healing_max_unhealthy", "1001", "auto_healing_max_unhealthy of nodegroup gpu: must be between 0 and 1000 machines"},
		{"auto_healing_enabled", "yes", "auto_healing_enabled of nodegroup gpu: must be true or false"},
	} {
		_, err := nodeGroupHealingCluster(t, nil, map[string]map[string]string{"default-worker": nil, "gpu": {tc.label: tc.value}})
		if !isInvalid(err, tc.want) {
			t.Errorf("%s=%s: err = %v, want InvalidParameterValue with %q", tc.label, tc.value, err, tc.want)
		}
	}
}

// The nodegroup's own healing labels are no longer reported as the
// cluster's only; the control plane's maximum still is. With its
// auto-healing off its own values are reported as not applied, on
// magnum-v1 as not applied by the class (once).
func TestNodeGroupHealingLabelWarnings(t *testing.T) {
	cluster := map[string]string{"auto_healing_unhealthy_timeout": "10m"}
	gpu := &objects.NodeGroup{Name: "gpu", Role: objects.RoleWorker, Labels: map[string]string{
		"auto_healing_enabled": "false", "auto_healing_unhealthy_timeout": "15m", "auto_healing_node_startup_timeout": "1h",
		"auto_healing_max_unhealthy": "1", "auto_healing_control_plane_max_unhealthy": "3"}}
	for _, version := range []string{LatestClassVersion, "v1"} {
		declared, err := classSet(nil).variables(version)
		if err != nil {
			t.Fatal(err)
		}
		got := DefaultLabelSchema().nodeGroupLabelWarnings(gpu, cluster, declared, version)
		want := []string{"labels of nodegroup gpu that only the cluster sets, ignored: auto_healing_control_plane_max_unhealthy"}
		if version == "v1" {
			want = append(want, "labels of nodegroup gpu not applied by ClusterClass magnum-v1 (an upgrade to a newer class applies them): "+
				"auto_healing_max_unhealthy, auto_healing_node_startup_timeout, auto_healing_unhealthy_timeout")
		} else {
			want = append(want, "labels of nodegroup gpu not applied (auto_healing_enabled is false): "+
				"auto_healing_max_unhealthy, auto_healing_node_startup_timeout, auto_healing_unhealthy_timeout")
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: warnings %q\nwant %q", version, got, want)
		}
	}
	// The control plane's nodegroup has none of its own.
	master := &objects.NodeGroup{Name: "default-master", Role: objects.RoleMaster, Labels: map[string]string{"auto_healing_unhealthy_timeout": "15m"}}
	declared, _ := classSet(nil).variables(LatestClassVersion)
	if got := DefaultLabelSchema().nodeGroupLabelWarnings(master, cluster, declared, LatestClassVersion); !slices.Equal(got,
		[]string{"labels of nodegroup default-master that only the cluster sets, ignored: auto_healing_unhealthy_timeout"}) {
		t.Errorf("master: %q", got)
	}
}
