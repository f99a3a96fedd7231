package capi

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// topologyCluster is a Cluster as the driver applies it: a control plane of
// cp replicas, and per nodegroup uuid a MachineDeployment topology.
func topologyCluster(cp int32, mds ...clusterv1.MachineDeploymentTopology) *clusterv1.Cluster {
	cl := capiCluster(2, 2, healthyConds()...)
	cl.Annotations = map[string]string{annotationTemplateID: "tmpl-new"}
	cl.Spec.Topology.Version = "v1.34.1"
	cl.Spec.Topology.ControlPlane.Replicas = &cp
	cl.Spec.Topology.Workers.MachineDeployments = mds
	return cl
}

func mdTopology(uuid string, replicas *int32, ann map[string]string) clusterv1.MachineDeploymentTopology {
	return clusterv1.MachineDeploymentTopology{Name: uuid, Replicas: replicas,
		Metadata: clusterv1.ObjectMeta{Labels: map[string]string{LabelNodeGroupUUID: uuid}, Annotations: ann}}
}

// The observation's Request is what the Cluster asks for (the topology the
// driver applied), in the nodegroups' terms, so that the status machine
// can tell a change the back end never received.
func TestObservationReportsTheRequest(t *testing.T) {
	three := int32(3)
	auto := map[string]string{clusterv1.AutoscalerMinSizeAnnotation: "1", clusterv1.AutoscalerMaxSizeAnnotation: "5"}
	cl := topologyCluster(1, mdTopology("w", &three, nil), mdTopology("a", nil, auto))
	master := &objects.NodeGroup{UUID: "m", Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, Status: objects.UpdateInProgress}
	worker := &objects.NodeGroup{UUID: "w", Name: "w", NodeCount: 5, Status: objects.UpdateInProgress}
	autoNG := &objects.NodeGroup{UUID: "a", Name: "a", NodeCount: 2, MinNodeCount: 1, MaxNodeCount: ptr(int64(5)),
		Labels: map[string]string{"auto_scaling_enabled": "true"}, Status: objects.UpdateInProgress}
	added := &objects.NodeGroup{UUID: "new", Name: "new", NodeCount: 1, Status: objects.CreateInProgress}
	c := &objects.Cluster{UUID: ptr("c"), StackID: ptr("ns/c"), Status: objects.UpdateInProgress, ClusterTemplateID: ptr("tmpl-new")}
	labels := Labels{}
	v := view{cluster: c, nodeGroups: []*objects.NodeGroup{master, worker, autoNG, added}, labels: &labels,
		obs: observation{Cluster: cl}, now: time.Now()}
	req := v.observation().Request
	if req == nil || !req.Exists || req.Deleting || req.TemplateID != "tmpl-new" {
		t.Fatalf("request = %+v", req)
	}
	if got := req.NodeGroups["m"].NodeCount; got == nil || *got != 1 {
		t.Errorf("control plane count = %v, want 1", got)
	}
	if got := req.NodeGroups["w"].NodeCount; got == nil || *got != 3 {
		t.Errorf("worker count = %v, want 3 (what the topology holds)", got)
	}
	if a := req.NodeGroups["a"]; a.NodeCount != nil || a.MinNodeCount == nil || *a.MinNodeCount != 1 || *a.MaxNodeCount != 5 {
		t.Errorf("autoscaled nodegroup = %+v, want no count and the row's bounds", a)
	}
	if _, ok := req.NodeGroups["new"]; ok {
		t.Error("a nodegroup the topology does not hold is reported")
	}
	// The status machine: the resize to 5 and the added nodegroup have not
	// reached the back end.
	d := statusmachine.Decide(statusmachine.Input{Cluster: c, NodeGroups: v.nodeGroups, Observation: v.observation(), Now: time.Now(), Fresh: true})
	for _, ng := range d.NodeGroups {
		if (ng.UUID == "w" || ng.UUID == "new") && (!statusmachine.InProgress(ng.Status) || ng.StatusReason != nil) {
			t.Errorf("nodegroup %s judged (%s %q) on a back end that does not hold its change", ng.Name, ng.Status, deref(ng.StatusReason))
		}
	}
	if d.Cluster.Status != objects.UpdateInProgress {
		t.Errorf("cluster %s, want UPDATE_IN_PROGRESS", d.Cluster.Status)
	}
	// Other bounds than the row's: reported as the topology holds them.
	autoNG.MaxNodeCount = ptr(int64(7))
	if a := v.request().NodeGroups["a"]; a.MaxNodeCount == nil || *a.MaxNodeCount != 5 {
		t.Errorf("changed bounds: %+v, want max 5", a)
	}
	// Deleting; and gone for a deletion.
	now := metav1.Now()
	cl.DeletionTimestamp = &now
	if req := v.request(); !req.Deleting {
		t.Error("a Cluster with a deletionTimestamp is not reported deleting")
	}
	c.Status = objects.DeleteInProgress
	v.obs.Cluster = nil
	if req := v.request(); req == nil || req.Exists {
		t.Errorf("deleted Cluster: %+v, want Exists false", req)
	}
	c.Status = objects.UpdateInProgress
	if req := v.request(); req != nil {
		t.Errorf("update of a missing Cluster: %+v, want not reported (judged gone)", req)
	}
}

// A failed upgrade rolls back to the template the back end runs: the
// previous one until every Machine runs the upgrade's version.
func TestAppliedTemplateIsThePreviousUntilTheUpgradeRolledOut(t *testing.T) {
	cl := topologyCluster(1)
	cl.Annotations[annotationPreviousTemplateID] = "tmpl-old"
	cl.Annotations[annotationPreviousKubeTag] = "v1.33.4"
	cl.Status.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.33.4"}}}
	c := &objects.Cluster{UUID: ptr("c"), StackID: ptr("ns/c"), Status: objects.UpdateInProgress, ClusterTemplateID: ptr("tmpl-new"),
		Labels: map[string]string{"kube_tag": "v1.34.1"}}
	v := view{cluster: c, obs: observation{Cluster: cl}, now: time.Now()}
	if id, tag := applied(v); id != "tmpl-old" || tag != "v1.33.4" {
		t.Errorf("upgrade under way: %s %s, want tmpl-old v1.33.4", id, tag)
	}
	// The topology controller refuses the upgrade: UPDATE_FAILED, rolled
	// back by the status machine.
	cl.Status.Conditions = withCond(cl.Status.Conditions, condition("TopologyReconciled", F, "ReconcileFailed", "admission webhook denied"))
	d := statusmachine.Decide(statusmachine.Input{Cluster: c, Observation: v.observation(), Now: time.Now(), Fresh: true})
	if d.Cluster.Status != objects.UpdateFailed || deref(d.Cluster.ClusterTemplateID) != "tmpl-old" || d.Cluster.Labels["kube_tag"] != "v1.33.4" {
		t.Errorf("failed upgrade: %s %s %v", d.Cluster.Status, deref(d.Cluster.ClusterTemplateID), d.Cluster.Labels)
	}
	// Rolled out: a later failure (a resize) keeps the template.
	cl.Status.ControlPlane.Versions = []clusterv1.StatusVersion{{Version: "v1.34.1"}}
	m := &clusterv1.Machine{}
	m.Spec.Version = "v1.34.1"
	v.obs.Machines = []*clusterv1.Machine{m}
	if id, _ := applied(v); id != "tmpl-new" {
		t.Errorf("rolled out: %s, want tmpl-new", id)
	}
	old := &clusterv1.Machine{}
	old.Spec.Version = "v1.33.4"
	v.obs.Machines = append(v.obs.Machines, old)
	if id, _ := applied(v); id != "tmpl-old" {
		t.Errorf("a Machine on the old version: %s, want tmpl-old", id)
	}
}

// node_count of an autoscaled nodegroup follows the back end whenever the
// nodegroup has settled (vexxhost #521, #907), never while a change of it
// is in progress (node_count is then what was asked for).
func TestAutoscaledNodeCountReportedWhenSettled(t *testing.T) {
	m := md(1, 1, 4, 4, 4, settledMDConds()...)
	m.Name = "a"
	m.Annotations = map[string]string{clusterv1.AutoscalerMinSizeAnnotation: "1", clusterv1.AutoscalerMaxSizeAnnotation: "6",
		annotationSizedNodeCount: "2"}
	ng := &objects.NodeGroup{UUID: "a", Name: "a", NodeCount: 2, Status: objects.CreateComplete}
	c := &objects.Cluster{UUID: ptr("c"), StackID: ptr("ns/c"), Status: objects.CreateComplete}
	v := view{cluster: c, nodeGroups: []*objects.NodeGroup{ng}, now: time.Now(),
		obs: observation{Cluster: capiCluster(1, 1, healthyConds()...), Deployments: map[string]*clusterv1.MachineDeployment{"a": m}}}
	if n := v.observation().NodeGroups["a"].NodeCount; n == nil || *n != 4 {
		t.Errorf("settled: node count %v, want 4", n)
	}
	ng.Status = objects.UpdateInProgress
	if n := v.observation().NodeGroups["a"].NodeCount; n != nil {
		t.Errorf("in progress: node count %v, want none", *n)
	}
	ng.Status = objects.CreateComplete
	delete(m.Annotations, annotationSizedNodeCount)
	if n := v.observation().NodeGroups["a"].NodeCount; n != nil {
		t.Errorf("never sized by the driver: node count %v, want none", *n)
	}
}

// Node addresses: reported as the Machines give them; Machines without any
// (servers booting, the in-memory provider) leave them unreported, no
// Machine at all clears them.
func TestNodeAddressesOnlyWhatTheMachinesGive(t *testing.T) {
	ng := &objects.NodeGroup{UUID: "w", Name: "w", NodeCount: 2, Status: objects.CreateComplete}
	machine := func(addr string) *clusterv1.Machine {
		m := &clusterv1.Machine{}
		m.Labels = map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: "w"}
		if addr != "" {
			m.Status.Addresses = clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: addr}}
		}
		return m
	}
	v := view{cluster: &objects.Cluster{UUID: ptr("c"), StackID: ptr("ns/c"), Status: objects.CreateComplete},
		nodeGroups: []*objects.NodeGroup{ng}, now: time.Now(), obs: observation{Cluster: capiCluster(1, 1, healthyConds()...),
			Machines: []*clusterv1.Machine{machine("10.0.0.2"), machine(""), machine("10.0.0.1")}}}
	if got := v.observation().NodeGroups["w"].NodeAddresses; len(got) != 2 || got[0] != "10.0.0.1" || got[1] != "10.0.0.2" {
		t.Errorf("addresses %v, want the two known, sorted", got)
	}
	v.obs.Machines = []*clusterv1.Machine{machine(""), machine("")}
	if got := v.observation().NodeGroups["w"].NodeAddresses; got != nil {
		t.Errorf("Machines without addresses: %v, want not reported", got)
	}
	v.obs.Machines = nil
	if got := v.observation().NodeGroups["w"].NodeAddresses; got == nil || len(got) != 0 {
		t.Errorf("no Machine: %v, want reported empty", got)
	}
}
