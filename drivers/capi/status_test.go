package capi

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

func condition(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func capiCluster(gen, observed int64, conds ...metav1.Condition) *clusterv1.Cluster {
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: gen}}
	cl.Status.ObservedGeneration = observed
	cl.Status.Conditions = conds
	return cl
}

// healthyConds is a settled, available cluster.
func healthyConds() []metav1.Condition {
	return []metav1.Condition{
		condition("InfrastructureReady", T, "Ready", ""),
		condition("ControlPlaneInitialized", T, "Initialized", ""),
		condition("ControlPlaneAvailable", T, "Available", ""),
		condition("WorkersAvailable", T, "Available", ""),
		condition("Available", T, "Available", ""),
		condition("RollingOut", F, "NotRollingOut", ""),
		condition("ScalingUp", F, "NotScalingUp", ""),
		condition("ScalingDown", F, "NotScalingDown", ""),
		condition("TopologyReconciled", T, "ReconcileSucceeded", ""),
	}
}

func withCond(conds []metav1.Condition, c metav1.Condition) []metav1.Condition {
	out := []metav1.Condition{}
	for _, x := range conds {
		if x.Type != c.Type {
			out = append(out, x)
		}
	}
	return append(out, c)
}

func ngs(statuses ...string) []*objects.NodeGroup {
	var out []*objects.NodeGroup
	for i, s := range statuses {
		out = append(out, &objects.NodeGroup{Name: "ng" + string(rune('0'+i)), Status: s})
	}
	return out
}

func osMachine(name string, conds ...metav1.Condition) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "OpenStackMachine", "metadata": map[string]any{"name": name}}}
	var raw []any
	for _, c := range conds {
		raw = append(raw, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message})
	}
	_ = unstructured.SetNestedSlice(u.Object, raw, "status", "conditions")
	return u
}

// TestMapClusterStatus covers every cluster row of capi-driver.md §5.2: the
// cluster's observation, and what the status machine makes of it.
func TestMapClusterStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	future, past := now.Add(time.Hour), now.Add(-time.Minute)
	deleting := capiCluster(3, 3, condition("Deleting", T, "WaitingForWorkersDeletion", "MachineDeployments md-1 are being deleted"))
	deleting.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	quota := osMachine("m-1", condition("InstanceReady", F, "InstanceCreateFailed", "Quota exceeded for cores: Requested 8, but already used 96 of 100 cores"))
	badImage := osMachine("m-1", condition("InstanceReady", F, "InstanceCreateFailed", "Image 1234 could not be found."))
	// Another provider's machine (the in-memory provider's DevMachine),
	// with Cluster API's bulleted summary as its Ready message.
	devMachine := osMachine("w-1", condition("Ready", F, "NotReady",
		"* VMProvisioned: Please check controller logs for errors\n* NodeProvisioned: Waiting for VMProvisioned"))
	devMachine.SetKind("DevMachine")
	// An infrastructure cluster's terminal failure (v1beta1 contract).
	failedOSC := &unstructured.Unstructured{Object: map[string]any{"kind": "OpenStackCluster", "metadata": map[string]any{"name": "c-1"},
		"status": map[string]any{"failureReason": "CreateError", "failureMessage": "failed to create router:\n  * Quota exceeded for resources: ['router']"}}}
	// Infrastructure machines being deleted (a MachineHealthCheck
	// remediating them): their failures no longer count.
	remediated := &unstructured.Unstructured{Object: map[string]any{"kind": "OpenStackMachine", "metadata": map[string]any{"name": "m-0"},
		"status": map[string]any{"failureReason": "UpdateError", "failureMessage": "instance state ERROR"}}}
	remediated.SetDeletionTimestamp(&metav1.Time{Time: now.Add(-time.Minute)})
	badImageDeleting := osMachine("m-0", condition("InstanceReady", F, "InstanceCreateFailed", "Image 1234 could not be found."))
	badImageDeleting.SetDeletionTimestamp(&metav1.Time{Time: now.Add(-time.Minute)})
	replacement := osMachine("m-2", condition("InstanceReady", F, "InstanceNotReady", "Instance is BUILD"))

	tests := []struct {
		name           string
		current        string
		obs            observation
		ngs            []*objects.NodeGroup
		createDeadline time.Time
		deleteDeadline time.Time
		wantStatus     string
		wantReason     string // substring; "" means the reason must be empty
		wantGone       bool
	}{
		{name: "create: Cluster not found yet", current: objects.CreateInProgress,
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "waiting for Cluster"},
		{name: "create: Cluster not found after the timeout", current: objects.CreateInProgress,
			createDeadline: past, wantStatus: objects.CreateFailed, wantReason: "timed out"},
		{name: "create: available, settled, all nodegroups complete", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(2, 2, healthyConds()...)}, ngs: ngs(objects.CreateComplete, objects.CreateComplete),
			createDeadline: future, wantStatus: objects.CreateComplete, wantReason: ""},
		{name: "create: available but a nodegroup still in progress", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(2, 2, healthyConds()...)}, ngs: ngs(objects.CreateComplete, objects.CreateInProgress),
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "waiting for nodegroups: ng1"},
		{name: "create: available but still scaling up", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(2, 2, withCond(healthyConds(), condition("ScalingUp", T, "ScalingUp", "Scaling up from 1 to 3 replicas"))...)},
			ngs:            ngs(objects.CreateComplete),
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "ScalingUp True (ScalingUp): Scaling up from 1 to 3 replicas"},
		{name: "create: available but not fresh (observed generation behind)", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(3, 2, healthyConds()...)}, ngs: ngs(objects.CreateComplete),
			createDeadline: future, wantStatus: objects.CreateInProgress},
		{name: "create: deepest false condition is the infrastructure, plus the machine's quota error", current: objects.CreateInProgress,
			obs: observation{
				Cluster: capiCluster(1, 1,
					condition("InfrastructureReady", F, "NotReady", "OpenStackCluster status.initialization.provisioned is false"),
					condition("ControlPlaneInitialized", F, "NotInitialized", "Control plane not yet initialized")),
				InfraMachines: []*unstructured.Unstructured{quota},
			},
			createDeadline: future, wantStatus: objects.CreateInProgress,
			wantReason: "InfrastructureReady False (NotReady): OpenStackCluster status.initialization.provisioned is false; OpenStackMachine m-1: InstanceReady False (InstanceCreateFailed): Quota exceeded for cores"},
		{name: "create: control plane not available names that condition", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(1, 1,
				condition("InfrastructureReady", T, "Ready", ""),
				condition("ControlPlaneInitialized", T, "Initialized", ""),
				condition("ControlPlaneAvailable", F, "NotAvailable", "0 of 3 control plane machines are available"))},
			createDeadline: future, wantStatus: objects.CreateInProgress,
			wantReason: "ControlPlaneAvailable False (NotAvailable): 0 of 3 control plane machines are available"},
		{name: "create: unknown condition counts as not ready", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(1, 1,
				condition("InfrastructureReady", T, "Ready", ""),
				condition("ControlPlaneInitialized", U, "InitializedUnknown", "probing"))},
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "ControlPlaneInitialized Unknown (InitializedUnknown): probing"},
		{name: "create: quota error is retryable, stays in progress", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", F, "NotReady", "")), InfraMachines: []*unstructured.Unstructured{quota}},
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "Quota exceeded"},
		{name: "create: terminal infrastructure error fails at once", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", F, "NotReady", "")), InfraMachines: []*unstructured.Unstructured{badImage}},
			createDeadline: future, wantStatus: objects.CreateFailed, wantReason: "Image 1234 could not be found."},
		{name: "create: another provider's machine names its kind, its bulleted message condensed", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", T, "Ready", "")), InfraMachines: []*unstructured.Unstructured{devMachine}},
			createDeadline: future, wantStatus: objects.CreateInProgress,
			wantReason: "DevMachine w-1: Ready False (NotReady): VMProvisioned: Please check controller logs for errors; NodeProvisioned: Waiting for VMProvisioned"},
		{name: "create: the infrastructure cluster's terminal failure fails at once", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", F, "NotReady", "")), InfraCluster: failedOSC},
			createDeadline: future, wantStatus: objects.CreateFailed,
			wantReason: "OpenStackCluster c-1: failed (CreateError): failed to create router: Quota exceeded for resources: ['router']"},
		{name: "create: a failed infrastructure machine being deleted (remediated) does not fail it", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", T, "Ready", "")),
				InfraMachines: []*unstructured.Unstructured{remediated, replacement}},
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "OpenStackMachine m-2: InstanceReady False (InstanceNotReady): Instance is BUILD"},
		{name: "create: a terminal condition of a machine being deleted does not fail it", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", T, "Ready", "")),
				InfraMachines: []*unstructured.Unstructured{badImageDeleting, replacement}},
			createDeadline: future, wantStatus: objects.CreateInProgress, wantReason: "OpenStackMachine m-2: InstanceReady False (InstanceNotReady): Instance is BUILD"},
		{name: "update: an infrastructure machine's message joins the reason", current: objects.UpdateInProgress,
			obs: observation{Cluster: capiCluster(5, 5, withCond(healthyConds(), condition("ScalingUp", T, "ScalingUp", "Scaling up from 1 to 3 replicas"))...),
				InfraMachines: []*unstructured.Unstructured{quota}},
			wantStatus: objects.UpdateInProgress, wantReason: "OpenStackMachine m-1: InstanceReady False (InstanceCreateFailed): Quota exceeded for cores"},
		{name: "create: the topology refused by an admission check fails at once", current: objects.CreateInProgress,
			obs: observation{Cluster: capiCluster(1, 1, condition("TopologyReconciled", F, "ReconcileFailed",
				`failed to create KubeadmControlPlane: kubeadmcontrolplanes.controlplane.cluster.x-k8s.io "c-abc" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no`))},
			createDeadline: future, wantStatus: objects.CreateFailed, wantReason: "TopologyReconciled False (ReconcileFailed): failed to create KubeadmControlPlane"},
		{name: "create: another topology reconcile error is retried", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("TopologyReconciled", F, "ReconcileFailed", "failed to patch: connection refused"))},
			createDeadline: future, wantStatus: objects.CreateInProgress},
		{name: "create: timeout fails with the reason", current: objects.CreateInProgress,
			obs:            observation{Cluster: capiCluster(1, 1, condition("InfrastructureReady", F, "NotReady", "waiting for network"))},
			createDeadline: past, wantStatus: objects.CreateFailed, wantReason: "timed out: InfrastructureReady False (NotReady): waiting for network"},

		{name: "update: CAPI has not observed the change", current: objects.UpdateInProgress,
			obs:        observation{Cluster: capiCluster(5, 4, healthyConds()...)},
			wantStatus: objects.UpdateInProgress, wantReason: "waiting for CAPI to observe the change"},
		{name: "update: fresh, available, settled, reconciled, nodegroups complete", current: objects.UpdateInProgress,
			obs: observation{Cluster: capiCluster(5, 5, healthyConds()...)}, ngs: ngs(objects.UpdateComplete, objects.CreateComplete),
			wantStatus: objects.UpdateComplete, wantReason: ""},
		{name: "update: still rolling out", current: objects.UpdateInProgress,
			obs:        observation{Cluster: capiCluster(5, 5, withCond(healthyConds(), condition("RollingOut", T, "RollingOut", "Rolling out 2 not up-to-date replicas"))...)},
			ngs:        ngs(objects.UpdateInProgress),
			wantStatus: objects.UpdateInProgress, wantReason: "RollingOut True (RollingOut): Rolling out 2 not up-to-date replicas"},
		{name: "update: upgrade pending in the topology", current: objects.UpdateInProgress,
			obs:        observation{Cluster: capiCluster(5, 5, withCond(healthyConds(), condition("TopologyReconciled", F, "ControlPlaneUpgradePending", "Control plane upgrade to v1.34.1 on hold"))...)},
			wantStatus: objects.UpdateInProgress, wantReason: "TopologyReconciled False (ControlPlaneUpgradePending)"},
		{name: "update: topology reconcile failed", current: objects.UpdateInProgress,
			obs:        observation{Cluster: capiCluster(5, 5, withCond(healthyConds(), condition("TopologyReconciled", F, "ReconcileFailed", "failed to patch KubeadmControlPlane: admission webhook denied"))...)},
			wantStatus: objects.UpdateFailed, wantReason: "TopologyReconciled False (ReconcileFailed): failed to patch KubeadmControlPlane: admission webhook denied"},
		{name: "update: Cluster missing fails", current: objects.UpdateInProgress,
			wantStatus: objects.UpdateFailed, wantReason: "does not exist"},
		{name: "rollback: completes like an update", current: objects.RollbackInProgress,
			obs: observation{Cluster: capiCluster(5, 5, healthyConds()...)}, ngs: ngs(objects.RollbackComplete),
			wantStatus: objects.RollbackComplete, wantReason: ""},

		{name: "delete: Cluster exists, report the Deleting condition", current: objects.DeleteInProgress,
			obs: observation{Cluster: deleting}, deleteDeadline: future,
			wantStatus: objects.DeleteInProgress, wantReason: "Deleting True (WaitingForWorkersDeletion): MachineDeployments md-1 are being deleted"},
		{name: "delete: Cluster gone", current: objects.DeleteInProgress,
			wantStatus: objects.DeleteComplete, wantReason: "", wantGone: true},
		{name: "delete: timed out", current: objects.DeleteInProgress,
			obs: observation{Cluster: deleting}, deleteDeadline: past,
			wantStatus: objects.DeleteFailed, wantReason: "timed out"},
		{name: "settled states are left alone by the status machine", current: objects.CreateComplete,
			obs: observation{Cluster: capiCluster(1, 1)}, wantStatus: objects.CreateComplete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The driver's observation, judged by the status machine as the
			// conductor does; what the Cluster asks for (Request) is checked
			// on its own (TestObservationReportsTheRequest).
			c := &objects.Cluster{UUID: ptr("c-uuid"), StackID: ptr("ns/c"), Status: tc.current}
			for i, ng := range tc.ngs {
				ng.UUID = fmt.Sprintf("ng%d-uuid", i)
			}
			o := view{cluster: c, nodeGroups: tc.ngs, obs: tc.obs, now: now, createDeadline: tc.createDeadline,
				deleteDeadline: tc.deleteDeadline}.observation()
			o.Request = nil
			d := statusmachine.Decide(statusmachine.Input{Cluster: c, NodeGroups: tc.ngs, Observation: o, Fresh: true, Now: now})
			got := struct{ Status, Reason string }{Status: tc.current}
			if d.Cluster != nil {
				got.Status, got.Reason = d.Cluster.Status, deref(d.Cluster.StatusReason)
			}
			if got.Status != tc.wantStatus {
				t.Errorf("status = %s, want %s (reason %q, phase %s)", got.Status, tc.wantStatus, got.Reason, o.Phase)
			}
			if tc.wantReason == "" && got.Reason != "" && strings.HasSuffix(tc.wantStatus, "_COMPLETE") {
				t.Errorf("reason = %q, want it cleared", got.Reason)
			}
			if tc.wantReason != "" && !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", got.Reason, tc.wantReason)
			}
			if d.Deleted != tc.wantGone {
				t.Errorf("deleted = %v, want %v", d.Deleted, tc.wantGone)
			}
		})
	}
}

func md(gen, observed int64, replicas, upToDate, available int32, conds ...metav1.Condition) *clusterv1.MachineDeployment {
	m := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "md", Generation: gen}}
	m.Spec.Replicas = &replicas
	m.Status.ObservedGeneration = observed
	m.Status.UpToDateReplicas = &upToDate
	m.Status.AvailableReplicas = &available
	m.Status.Conditions = conds
	return m
}

// wantAnnotation marks, in a table case, the nodegroup's node_count when it
// is not the MachineDeployment's replicas.
const wantAnnotation = "test/nodegroup-node-count"

// nodeGroupWants sets, in a table case, the nodegroup's node_count.
func nodeGroupWants(m *clusterv1.MachineDeployment, n int) *clusterv1.MachineDeployment {
	m.Annotations = map[string]string{wantAnnotation: strconv.Itoa(n)}
	return m
}

func settledMDConds() []metav1.Condition {
	return []metav1.Condition{
		condition("Available", T, "Available", ""),
		condition("RollingOut", F, "NotRollingOut", ""),
		condition("ScalingUp", F, "NotScalingUp", ""),
		condition("ScalingDown", F, "NotScalingDown", ""),
	}
}

// TestMapWorkerNodeGroup covers the nodegroup rules of §5.2.
func TestMapWorkerNodeGroup(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	failed := md(1, 1, 3, 0, 0)
	//lint:ignore SA1019 v1beta1-converted objects still carry the Failed phase
	failed.Status.Phase = string(clusterv1.MachineDeploymentPhaseFailed)
	autoscaled := md(1, 1, 4, 4, 4, settledMDConds()...)
	autoscaled.Annotations = map[string]string{clusterv1.AutoscalerMinSizeAnnotation: "2", clusterv1.AutoscalerMaxSizeAnnotation: "5",
		annotationSizedNodeCount: "4"}
	unsized := md(1, 1, 2, 2, 2, settledMDConds()...) // created at its minimum, not yet sized to node_count 4
	unsized.Annotations = map[string]string{clusterv1.AutoscalerMinSizeAnnotation: "2", clusterv1.AutoscalerMaxSizeAnnotation: "5",
		wantAnnotation: "4"}
	tests := []struct {
		name       string
		status     string
		md         *clusterv1.MachineDeployment
		machines   int
		auto       bool
		deadline   time.Time
		want       drivers.Phase
		wantReason string
	}{
		{"create: complete when fresh, available, settled and counts match", objects.CreateInProgress, md(2, 2, 3, 3, 3, settledMDConds()...), 3, false, time.Time{}, drivers.PhaseReady, ""},
		{"update: complete", objects.UpdateInProgress, md(2, 2, 3, 3, 3, settledMDConds()...), 3, false, time.Time{}, drivers.PhaseReady, ""},
		{"update: not fresh", objects.UpdateInProgress, md(3, 2, 3, 3, 3, settledMDConds()...), 3, false, time.Time{}, drivers.PhaseInProgress, "waiting for CAPI to observe the change"},
		{"update: counts differ", objects.UpdateInProgress, md(2, 2, 3, 2, 3, settledMDConds()...), 3, false, time.Time{}, drivers.PhaseInProgress, "machines up to date"},
		{"resize not yet carried into the MachineDeployment: its settled old size is no answer", objects.UpdateInProgress,
			nodeGroupWants(md(2, 2, 1, 1, 1, settledMDConds()...), 3), 3, false, time.Time{}, drivers.PhaseInProgress, "waiting for the MachineDeployment to want 3 replicas (it wants 1)"},
		{"update: scaling down names the condition", objects.UpdateInProgress,
			md(2, 2, 2, 2, 3, withCond(settledMDConds(), condition("ScalingDown", T, "ScalingDown", "Scaling down from 3 to 2 replicas"))...), 3, false, time.Time{},
			drivers.PhaseInProgress, "ScalingDown True (ScalingDown): Scaling down from 3 to 2 replicas"},
		{"autoscaled: complete within min/max", objects.UpdateInProgress, autoscaled, 4, true, time.Time{}, drivers.PhaseReady, ""},
		{"autoscaled: its settled minimum size is no answer before the driver sized it", objects.CreateInProgress, unsized, 2, true, time.Time{},
			drivers.PhaseInProgress, "waiting for the MachineDeployment to be sized to 4 replicas"},
		{"MachineDeployment missing: wait, never crash", objects.CreateInProgress, nil, 0, false, now.Add(time.Hour), drivers.PhaseInProgress, "waiting for the MachineDeployment"},
		{"MachineDeployment missing past the deadline", objects.CreateInProgress, nil, 0, false, now.Add(-time.Second), drivers.PhaseFailed, "timed out"},
		{"phase Failed", objects.CreateInProgress, failed, 0, false, time.Time{}, drivers.PhaseFailed, "MachineDeployment failed"},
		{"delete: complete once MD and machines are gone", objects.DeleteInProgress, nil, 0, false, time.Time{}, drivers.PhaseGone, ""},
		{"delete: machines remain", objects.DeleteInProgress, nil, 2, false, time.Time{}, drivers.PhaseInProgress, "waiting for 2 machines"},
		// Settled, a nodegroup is reported as the back end shows it (the
		// status machine does not judge it): no sizing or node_count rule.
		{"settled nodegroup without its MachineDeployment", objects.CreateComplete, nil, 0, false, time.Time{}, drivers.PhaseGone, ""},
		{"settled autoscaled nodegroup the autoscaler resized", objects.UpdateComplete, unsized, 2, true, time.Time{}, drivers.PhaseReady, ""},
		// cluster_update resizes the default worker without claiming it:
		// settled, a MachineDeployment that does not want its node_count
		// has not been given the resize yet.
		{"settled nodegroup whose resize is not yet carried into the MachineDeployment", objects.CreateComplete,
			nodeGroupWants(md(2, 2, 1, 1, 1, settledMDConds()...), 2), 2, false, time.Time{}, drivers.PhaseInProgress, "waiting for the MachineDeployment to want 2 replicas (it wants 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ng := &objects.NodeGroup{Name: "ng", Status: tc.status}
			if tc.md != nil {
				ng.NodeCount = int64(*tc.md.Spec.Replicas)
				if w, ok := tc.md.Annotations[wantAnnotation]; ok {
					if _, err := fmt.Sscan(w, &ng.NodeCount); err != nil {
						t.Fatalf("%s: %v", wantAnnotation, err)
					}
				}
			}
			got := mapWorkerNodeGroup(ng, tc.md, tc.machines, tc.auto, "", now, tc.deadline)
			if got.Phase != tc.want {
				t.Errorf("phase = %s, want %s (reason %q)", got.Phase, tc.want, got.Reason)
			}
			if tc.wantReason != "" && !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("reason = %q, want %q", got.Reason, tc.wantReason)
			}
			if tc.wantReason == "" && got.Phase == drivers.PhaseReady && got.Reason != "" {
				t.Errorf("reason = %q, want empty", got.Reason)
			}
		})
	}
}

func TestMapControlPlaneNodeGroup(t *testing.T) {
	now := time.Now()
	mk := func(gen, observed int64, want, upToDate, ready int32, conds ...metav1.Condition) *controlPlane {
		cp := &controlPlane{}
		cp.Generation = gen
		cp.Spec.Replicas = &want
		cp.Status.ObservedGeneration = observed
		cp.Status.UpToDateReplicas, cp.Status.ReadyReplicas = &upToDate, &ready
		cp.Status.Conditions = conds
		return cp
	}
	ng := func(s string) *objects.NodeGroup {
		return &objects.NodeGroup{Name: "default-master", Role: "master", Status: s, NodeCount: 3}
	}
	if got := mapControlPlaneNodeGroup(ng(objects.CreateInProgress), mk(1, 1, 3, 3, 3, settledMDConds()...), "", now, time.Time{}); got.Phase != drivers.PhaseReady {
		t.Errorf("settled control plane: %+v, want ready", got)
	}
	if got := mapControlPlaneNodeGroup(ng(objects.UpdateInProgress), mk(1, 1, 3, 1, 3, withCond(settledMDConds(), condition("RollingOut", T, "RollingOut", "Rolling out 2 not up-to-date replicas"))...), "", now, time.Time{}); got.Phase != drivers.PhaseInProgress || !strings.Contains(got.Reason, "Rolling out 2") {
		t.Errorf("rolling control plane: %+v", got)
	}
	if got := mapControlPlaneNodeGroup(ng(objects.UpdateInProgress), mk(2, 2, 1, 1, 1, settledMDConds()...), "", now, time.Time{}); got.Phase != drivers.PhaseInProgress || !strings.Contains(got.Reason, "want 3 replicas (it wants 1)") {
		t.Errorf("control plane resize not carried into the KubeadmControlPlane yet: %+v, want in progress", got)
	}
	if got := mapControlPlaneNodeGroup(ng(objects.CreateInProgress), nil, "", now, now.Add(time.Hour)); got.Phase != drivers.PhaseInProgress || got.Reason != "waiting for the control plane" {
		t.Errorf("missing control plane: %+v", got)
	}
	// An upgrade not yet carried into the KubeadmControlPlane: settled on
	// the old version, it is no answer.
	old := mk(1, 1, 3, 3, 3, settledMDConds()...)
	old.Spec.Version = "v1.33.4"
	if got := mapControlPlaneNodeGroup(ng(objects.UpdateInProgress), old, "v1.34.1", now, time.Time{}); got.Phase != drivers.PhaseInProgress ||
		got.Reason != "waiting for the control plane to move to v1.34.1 (it runs v1.33.4)" {
		t.Errorf("upgrade not carried into the control plane yet: %+v, want in progress", got)
	}
	if got := mapControlPlaneNodeGroup(ng(objects.UpdateInProgress), old, "v1.33.4", now, time.Time{}); got.Phase != drivers.PhaseReady {
		t.Errorf("control plane on the topology's version: %+v, want ready", got)
	}
}

// A MachineDeployment the topology controller has not moved to the
// upgrade's version yet (it waits for the control plane) is settled on the
// old one: its nodegroup stays in progress.
func TestWorkerWaitsForTheTopologyVersion(t *testing.T) {
	m := md(2, 2, 3, 3, 3, settledMDConds()...)
	m.Spec.Template.Spec.Version = "v1.33.4"
	ng := &objects.NodeGroup{Name: "ng", Status: objects.UpdateInProgress, NodeCount: 3}
	got := mapWorkerNodeGroup(ng, m, 3, false, "v1.34.1", time.Now(), time.Time{})
	if got.Phase != drivers.PhaseInProgress || got.Reason != "waiting for the MachineDeployment to move to v1.34.1 (it runs v1.33.4)" {
		t.Errorf("%+v, want in progress waiting for the version", got)
	}
	if got := mapWorkerNodeGroup(ng, m, 3, false, "v1.33.4", time.Now(), time.Time{}); got.Phase != drivers.PhaseReady {
		t.Errorf("on the topology's version: %+v, want ready", got)
	}
}

func TestCoeVersionIsTheLowestReported(t *testing.T) {
	cl := capiCluster(1, 1)
	cl.Spec.Topology.Version = "v1.34.1"
	if got := coeVersion(observation{Cluster: cl}); got != "v1.34.1" {
		t.Errorf("topology fallback = %s", got)
	}
	cl.Status.ControlPlane = &clusterv1.ClusterControlPlaneStatus{Versions: []clusterv1.StatusVersion{{Version: "v1.34.1"}, {Version: "v1.33.10"}, {Version: "v1.33.9"}}}
	if got := coeVersion(observation{Cluster: cl}); got != "v1.33.9" {
		t.Errorf("coe_version = %s, want v1.33.9", got)
	}
}

func TestHealthNamesEachComponent(t *testing.T) {
	cl := capiCluster(1, 1, append(healthyConds(), condition("RemoteConnectionProbe", T, "ProbeSucceeded", ""))...)
	good := md(1, 1, 2, 2, 2, settledMDConds()...)
	h := healthOf(observation{Cluster: cl, Deployments: map[string]*clusterv1.MachineDeployment{"workers": good}})
	if h.Status != objects.Healthy || h.Reason["api"] != "ok" || h.Reason["controlplane"] != "ok" || h.Reason["workers"] != "ok" {
		t.Errorf("healthy cluster: %+v", h)
	}
	bad := md(1, 1, 3, 3, 1, settledMDConds()...)
	cl2 := capiCluster(1, 1, append(healthyConds(), condition("RemoteConnectionProbe", F, "ProbeFailed", "dial tcp 10.0.0.5:6443: i/o timeout"))...)
	h = healthOf(observation{Cluster: cl2, Deployments: map[string]*clusterv1.MachineDeployment{"workers": bad}})
	if h.Status != objects.Unhealthy {
		t.Fatalf("status = %s, want UNHEALTHY", h.Status)
	}
	if !strings.Contains(h.Reason["api"], "i/o timeout") || h.Reason["workers"] != "1/3 machines available" {
		t.Errorf("reason = %v", h.Reason)
	}
	if h := healthOf(observation{}); h.Status != objects.Unknown {
		t.Errorf("missing cluster: %+v", h)
	}

	// A Machine whose Node is not Ready makes the cluster UNHEALTHY,
	// named; one being deleted (a resize down drains it) does not.
	notReady := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "w-1"}}
	notReady.Status.Conditions = []metav1.Condition{condition("NodeHealthy", F, "NodeNotReady", "* Node.Ready: kubelet stopped posting node status")}
	h = healthOf(observation{Cluster: cl, Deployments: map[string]*clusterv1.MachineDeployment{"workers": good}, Machines: []*clusterv1.Machine{notReady}})
	if h.Status != objects.Unhealthy || h.Reason["w-1.node"] != "NodeHealthy False (NodeNotReady): Node.Ready: kubelet stopped posting node status" {
		t.Errorf("a node not ready: %+v", h)
	}
	notReady.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	h = healthOf(observation{Cluster: cl, Deployments: map[string]*clusterv1.MachineDeployment{"workers": good}, Machines: []*clusterv1.Machine{notReady}})
	if h.Status != objects.Healthy || len(h.Reason) != 4 {
		t.Errorf("a deleted Machine's node: %+v", h)
	}
}

func TestCheckUpgrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"v1.33.4", "v1.33.5", true},
		{"v1.33.4", "v1.34.0", true},
		{"v1.33.4", "v1.33.4", true},
		{"v1.33.4", "v1.35.0", false},
		{"v1.33.4", "v1.32.9", false},
		{"v1.33.4", "v2.33.4", false},
		{"v1.33.4", "latest", false},
	} {
		err := checkUpgrade(tc.from, tc.to)
		if (err == nil) != tc.ok {
			t.Errorf("checkUpgrade(%s, %s) = %v, want ok=%v", tc.from, tc.to, err, tc.ok)
		}
	}
}

// A nodegroup whose MachineDeployment failed fails the operation of its
// cluster, which the back end otherwise shows in progress or even ready
// (the status machine's rule, fed by the driver's observation); a
// deletion is not failed by it.
func TestFailedNodeGroupFailsTheOperation(t *testing.T) {
	now := time.Now()
	failedMD := md(1, 1, 3, 0, 0)
	//lint:ignore SA1019 v1beta1-converted objects still carry the Failed phase
	failedMD.Status.Phase = string(clusterv1.MachineDeploymentPhaseFailed)
	for _, tc := range []struct {
		current, want string
		conds         []metav1.Condition
	}{
		{objects.UpdateInProgress, objects.UpdateFailed, healthyConds()},
		{objects.UpdateInProgress, objects.UpdateFailed, withCond(healthyConds(), condition("RollingOut", T, "RollingOut", "x"))},
		{objects.CreateInProgress, objects.CreateFailed, healthyConds()},
		{objects.RollbackInProgress, objects.RollbackFailed, healthyConds()},
	} {
		c := &objects.Cluster{UUID: ptr("c-uuid"), StackID: ptr("ns/c"), Status: tc.current}
		ng := &objects.NodeGroup{UUID: "a-uuid", Name: "a", Status: tc.current, NodeCount: 3}
		if tc.current == objects.RollbackInProgress {
			ng.Status = objects.UpdateInProgress
		}
		obs := observation{Cluster: capiCluster(1, 1, tc.conds...), Deployments: map[string]*clusterv1.MachineDeployment{"a": failedMD}}
		o := view{cluster: c, nodeGroups: []*objects.NodeGroup{ng}, obs: obs, now: now}.observation()
		o.Request = nil
		d := statusmachine.Decide(statusmachine.Input{Cluster: c, NodeGroups: []*objects.NodeGroup{ng}, Observation: o, Fresh: true, Now: now})
		if d.Cluster.Status != tc.want || !strings.Contains(deref(d.Cluster.StatusReason), "nodegroup a failed: MachineDeployment failed") {
			t.Errorf("%s: %s %q, want %s naming the nodegroup", tc.current, d.Cluster.Status, deref(d.Cluster.StatusReason), tc.want)
		}
	}
}

// A nodegroup whose Machines do not all run the topology's version is not
// ready, whatever the replica counts say.
func TestHoldForVersion(t *testing.T) {
	got := holdForVersion(ngResult{Phase: drivers.PhaseReady}, 1, "v1.34.1")
	if got.Phase != drivers.PhaseInProgress || got.Reason != "waiting for 1 machines to move to v1.34.1" {
		t.Errorf("%+v, want in progress", got)
	}
	if got := holdForVersion(ngResult{Phase: drivers.PhaseReady}, 0, "v1.34.1"); got.Phase != drivers.PhaseReady {
		t.Errorf("every Machine on the version: %+v", got)
	}
	if got := holdForVersion(ngResult{Phase: drivers.PhaseFailed, Reason: "x"}, 2, "v1.34.1"); got.Phase != drivers.PhaseFailed {
		t.Errorf("a failure is not held: %+v", got)
	}
	m := &clusterv1.Machine{}
	m.Spec.Version = "v1.33.4"
	if !otherVersion(m, "v1.34.1") || otherVersion(m, "v1.33.4") || otherVersion(m, "") {
		t.Error("otherVersion")
	}
}

func TestConditionMessagesAreCondensedIntoOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Waiting for a Node", "Waiting for a Node"},
		{"* MachineDeployment md-0:\n  * Scaling up from 1 to 3 replicas\n* KubeadmControlPlane k8s-cp:\n  * Machine k8s-cp-x:\n    * NodeHealthy: Waiting for a Node\n",
			"MachineDeployment md-0: Scaling up from 1 to 3 replicas; KubeadmControlPlane k8s-cp: Machine k8s-cp-x: NodeHealthy: Waiting for a Node"},
		{"* Machines a, b are not up-to-date\n* Machine c is deleting", "Machines a, b are not up-to-date; Machine c is deleting"},
	} {
		if got := condense(tc.in); got != tc.want {
			t.Errorf("condense(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := condense("* " + strings.Repeat("x", 2*maxReasonMessage))
	if n := len([]rune(long)); n != maxReasonMessage || !strings.HasSuffix(long, "…") {
		t.Errorf("a long message is %d characters (%q…), want %d ending in …", n, long[:20], maxReasonMessage)
	}
	c := &metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "NotAvailable", Message: "* Control plane:\n  * not available"}
	if got, want := describe(c), "Available False (NotAvailable): Control plane: not available"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
