package capi

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// controlPlane is the part of a KubeadmControlPlane the driver reads. The
// typed KCP package would pull in the kubeadm bootstrap types, so the cache
// keeps this projection instead.
type controlPlane struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32 `json:"replicas,omitempty"`
		Version  string `json:"version,omitempty"`
	} `json:"spec"`
	Status struct {
		Conditions         []metav1.Condition        `json:"conditions,omitempty"`
		Replicas           *int32                    `json:"replicas,omitempty"`
		ReadyReplicas      *int32                    `json:"readyReplicas,omitempty"`
		AvailableReplicas  *int32                    `json:"availableReplicas,omitempty"`
		UpToDateReplicas   *int32                    `json:"upToDateReplicas,omitempty"`
		Version            string                    `json:"version,omitempty"`
		ObservedGeneration int64                     `json:"observedGeneration,omitempty"`
		Versions           []clusterv1.StatusVersion `json:"versions,omitempty"`
	} `json:"status"`
}

// observation is everything the cache holds about one CAPI cluster.
type observation struct {
	Cluster       *clusterv1.Cluster // nil: not found
	ControlPlane  *controlPlane
	Deployments   map[string]*clusterv1.MachineDeployment // by topology deployment name
	Machines      []*clusterv1.Machine
	InfraCluster  *unstructured.Unstructured
	InfraMachines []*unstructured.Unstructured
}

// statusResult is the cluster's phase as the cache shows it.
type statusResult struct {
	Phase  drivers.Phase
	Reason string // "" clears it
}

// Messages used in status_reason.
const (
	reasonWaitingForCluster = "waiting for Cluster"
	reasonWaitingObserve    = "waiting for CAPI to observe the change"
)

func cond(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func isTrue(conds []metav1.Condition, t string) bool {
	c := cond(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// isFalse is true only for an explicit False (Unknown or missing is not).
func isFalse(conds []metav1.Condition, t string) bool {
	c := cond(conds, t)
	return c != nil && c.Status == metav1.ConditionFalse
}

// fresh reports whether condition t reflects generation gen.
func fresh(conds []metav1.Condition, t string, statusObserved, gen int64) bool {
	c := cond(conds, t)
	if c == nil {
		return false
	}
	if c.ObservedGeneration != 0 {
		return c.ObservedGeneration >= gen
	}
	return statusObserved >= gen
}

func describe(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	s := c.Type + " " + string(c.Status)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if m := condense(c.Message); m != "" {
		s += ": " + m
	}
	return s
}

// maxReasonMessage bounds one condition message in a status_reason: a
// cluster with hundreds of Machines gets a message per Machine.
const maxReasonMessage = 512

// condense turns Cluster API's multi-line, bulleted condition messages
// ("* MachineDeployment md-0:\n  * Scaling up from 1 to 3 replicas") into
// one readable line ("MachineDeployment md-0: Scaling up from 1 to 3
// replicas"), bounded to maxReasonMessage characters.
func condense(msg string) string {
	var b strings.Builder
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "* "), "- "))
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	out := b.String()
	if r := []rune(out); len(r) > maxReasonMessage {
		out = string(r[:maxReasonMessage-1]) + "…"
	}
	return out
}

// deepestNotReady names the first False/Unknown condition along the
// creation path, with its message.
func deepestNotReady(cl *clusterv1.Cluster) string {
	for _, t := range []string{
		clusterv1.InfrastructureReadyCondition,
		clusterv1.ClusterControlPlaneInitializedCondition,
		clusterv1.ClusterControlPlaneAvailableCondition,
		clusterv1.ClusterWorkersAvailableCondition,
		clusterv1.AvailableCondition,
	} {
		c := cond(cl.Status.Conditions, t)
		if c == nil {
			return t + " not reported yet"
		}
		if c.Status != metav1.ConditionTrue {
			return describe(c)
		}
	}
	for _, t := range []string{clusterv1.RollingOutCondition, clusterv1.ScalingUpCondition, clusterv1.ScalingDownCondition} {
		if isTrue(cl.Status.Conditions, t) {
			return describe(cond(cl.Status.Conditions, t))
		}
	}
	return ""
}

// unstructuredConditions reads status.conditions of an infrastructure
// object (CAPO types are not vendored).
func unstructuredConditions(u *unstructured.Unstructured) []metav1.Condition {
	if u == nil {
		return nil
	}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		s, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(s)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		out = append(out, c)
	}
	return out
}

// worstInfraMessage names the first infrastructure object that reports a
// problem, with its message condensed: the infrastructure cluster, then
// the infrastructure machines (sorted by name), of whatever kinds the
// cache watches (OpenStackCluster and OpenStackMachine on OpenStack: this
// is where Nova and Neutron errors such as quota exhaustion surface). An
// object's terminal failure (the failureReason and failureMessage of
// Cluster API's v1beta1 provider contract) comes first, else its first
// False condition with a message. terminal is true when the provider will
// not retry (that failure, or a condition isTerminal recognises). An
// object being deleted is passed over: a machine a MachineHealthCheck
// remediates, say, whose failure its replacement makes good.
func worstInfraMessage(obs observation) (msg string, terminal bool) {
	objs := []*unstructured.Unstructured{}
	if obs.InfraCluster != nil {
		objs = append(objs, obs.InfraCluster)
	}
	ms := slices.Clone(obs.InfraMachines)
	sort.Slice(ms, func(i, j int) bool { return ms[i].GetName() < ms[j].GetName() })
	objs = append(objs, ms...)
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetDeletionTimestamp() != nil })
	for _, o := range objs {
		if m, _, _ := unstructured.NestedString(o.Object, "status", "failureMessage"); strings.TrimSpace(m) != "" {
			r, _, _ := unstructured.NestedString(o.Object, "status", "failureReason")
			what := "failed"
			if r != "" {
				what += " (" + r + ")"
			}
			return fmt.Sprintf("%s %s: %s: %s", o.GetKind(), o.GetName(), what, condense(m)), true
		}
	}
	for _, o := range objs {
		for _, c := range unstructuredConditions(o) {
			if c.Status == metav1.ConditionFalse && strings.TrimSpace(c.Message) != "" && c.Type != clusterv1.DeletingCondition {
				return fmt.Sprintf("%s %s: %s", o.GetKind(), o.GetName(), describe(&c)), isTerminal(&c)
			}
		}
	}
	return "", false
}

// nonRetryable matches infrastructure failures CAPO will not fix by retrying.
var nonRetryable = regexp.MustCompile(`(?i)(invalid|not found|could not be found|forbidden|unauthorized|no such)`)

// admissionDenied matches the error of a write an admission webhook or
// policy refused (Kubernetes' own wording for both).
var admissionDenied = regexp.MustCompile(`denied (the )?request`)

func isTerminal(c *metav1.Condition) bool {
	if c == nil {
		return false
	}
	if c.Reason == "InstanceStateError" {
		return true
	}
	return strings.HasSuffix(c.Reason, "CreateFailed") && nonRetryable.MatchString(c.Message)
}

func joinReason(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "; ")
}

func settled(conds []metav1.Condition) bool {
	return !isTrue(conds, clusterv1.RollingOutCondition) && !isTrue(conds, clusterv1.ScalingUpCondition) &&
		!isTrue(conds, clusterv1.ScalingDownCondition)
}

// mapClusterStatus is capi-driver.md §5.2 for the cluster, as a phase of
// the operation the request's status names (current): what the back end
// shows for a create, an update (upgrade, resize, rollback) or a delete.
// Whether that completes or fails the operation, together with the
// nodegroups, is the status machine's business. createDeadline and
// deleteDeadline (the driver's own create_timeout and delete_timeout) are
// zero when unknown; past them the back end's operation has failed.
func mapClusterStatus(current string, obs observation, now, createDeadline, deleteDeadline time.Time) statusResult {
	cl := obs.Cluster
	switch current {
	case objects.CreateInProgress:
		timedOut := !createDeadline.IsZero() && now.After(createDeadline)
		if cl == nil {
			if timedOut {
				return statusResult{Phase: drivers.PhaseFailed, Reason: "timed out: " + reasonWaitingForCluster}
			}
			return statusResult{Phase: drivers.PhasePending, Reason: reasonWaitingForCluster}
		}
		gen := cl.Generation
		if isTrue(cl.Status.Conditions, clusterv1.AvailableCondition) &&
			fresh(cl.Status.Conditions, clusterv1.AvailableCondition, cl.Status.ObservedGeneration, gen) &&
			settled(cl.Status.Conditions) {
			return statusResult{Phase: drivers.PhaseReady}
		}
		// The topology refused by an admission check: the controllers
		// retry the same request, which will not help.
		if topo := cond(cl.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition); topo != nil &&
			topo.Status == metav1.ConditionFalse && topo.Reason == clusterv1.ClusterTopologyReconciledFailedReason &&
			admissionDenied.MatchString(topo.Message) {
			return statusResult{Phase: drivers.PhaseFailed, Reason: describe(topo)}
		}
		infraMsg, terminal := worstInfraMessage(obs)
		reason := joinReason(deepestNotReady(cl), infraMsg)
		if reason == "" {
			reason = reasonWaitingObserve
		}
		if terminal {
			return statusResult{Phase: drivers.PhaseFailed, Reason: reason}
		}
		if timedOut {
			return statusResult{Phase: drivers.PhaseFailed, Reason: "timed out: " + reason}
		}
		return statusResult{Phase: drivers.PhaseInProgress, Reason: reason}

	case objects.DeleteInProgress:
		if cl == nil {
			return statusResult{Phase: drivers.PhaseGone}
		}
		reason := "deleting"
		if c := cond(cl.Status.Conditions, clusterv1.DeletingCondition); c != nil && c.Status == metav1.ConditionTrue {
			reason = describe(c)
		} else if cl.DeletionTimestamp == nil {
			reason = "waiting for the Cluster deletion to start"
		}
		if !deleteDeadline.IsZero() && now.After(deleteDeadline) {
			return statusResult{Phase: drivers.PhaseFailed, Reason: "timed out: " + reason}
		}
		return statusResult{Phase: drivers.PhaseInProgress, Reason: reason}
	}
	// An update or a rollback in progress, or a settled cluster (whose
	// phase the status machine does not judge).
	if cl == nil {
		return statusResult{Phase: drivers.PhaseGone, Reason: "the Cluster API Cluster does not exist"}
	}
	gen := cl.Generation
	if cl.Status.ObservedGeneration < gen {
		return statusResult{Phase: drivers.PhasePending, Reason: reasonWaitingObserve}
	}
	topo := cond(cl.Status.Conditions, clusterv1.ClusterTopologyReconciledCondition)
	if topo != nil && topo.Status == metav1.ConditionFalse && topo.Reason == clusterv1.ClusterTopologyReconciledFailedReason {
		return statusResult{Phase: drivers.PhaseFailed, Reason: describe(topo)}
	}
	if isTrue(cl.Status.Conditions, clusterv1.AvailableCondition) &&
		fresh(cl.Status.Conditions, clusterv1.AvailableCondition, cl.Status.ObservedGeneration, gen) &&
		isFalse(cl.Status.Conditions, clusterv1.RollingOutCondition) &&
		isFalse(cl.Status.Conditions, clusterv1.ScalingUpCondition) &&
		isFalse(cl.Status.Conditions, clusterv1.ScalingDownCondition) &&
		topo != nil && topo.Status == metav1.ConditionTrue {
		return statusResult{Phase: drivers.PhaseReady}
	}
	infraMsg, _ := worstInfraMessage(obs)
	var topoMsg string
	if topo != nil && topo.Status != metav1.ConditionTrue {
		topoMsg = describe(topo)
	}
	reason := joinReason(topoMsg, deepestNotReady(cl), infraMsg)
	if reason == "" {
		reason = "waiting for RollingOut, ScalingUp and ScalingDown to be False"
	}
	return statusResult{Phase: drivers.PhaseInProgress, Reason: reason}
}

func i32(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// ngResult is one nodegroup's phase as the cache shows it.
type ngResult struct {
	Phase  drivers.Phase
	Reason string
}

// waiting is the result of a nodegroup in progress while it waits for
// reason, or failed once the driver's deadline has passed.
func waiting(reason string, timedOut bool) ngResult {
	if timedOut {
		return ngResult{Phase: drivers.PhaseFailed, Reason: "timed out: " + reason}
	}
	return ngResult{Phase: drivers.PhaseInProgress, Reason: reason}
}

// mapWorkerNodeGroup maps a worker nodegroup from its MachineDeployment
// (nil when absent) and the number of Machines still carrying its label.
// version is the Cluster's topology version ("" when unknown). The
// nodegroup's status says what is asked of it: a deletion, a change in
// progress (whose node_count the MachineDeployment must want before its
// status says anything about it), or nothing (settled: its phase is
// reported as the back end shows it, and not judged).
func mapWorkerNodeGroup(ng *objects.NodeGroup, md *clusterv1.MachineDeployment, machines int, autoscaled bool, version string, now, deadline time.Time) ngResult {
	cur := ng.Status
	timedOut := !deadline.IsZero() && now.After(deadline)
	if cur == objects.DeleteInProgress {
		if md == nil && machines == 0 {
			return ngResult{Phase: drivers.PhaseGone}
		}
		return waiting(fmt.Sprintf("waiting for %d machines to be deleted", machines), timedOut)
	}
	inProgress := strings.HasSuffix(cur, "_IN_PROGRESS")
	if md == nil {
		if !inProgress {
			return ngResult{Phase: drivers.PhaseGone}
		}
		if timedOut {
			return ngResult{Phase: drivers.PhaseFailed, Reason: "timed out waiting for the MachineDeployment"}
		}
		return ngResult{Phase: drivers.PhaseInProgress, Reason: "waiting for the MachineDeployment"}
	}
	//lint:ignore SA1019 deprecated in v1beta2 but still set on objects converted from v1beta1
	if md.Status.Phase == string(clusterv1.MachineDeploymentPhaseFailed) {
		return ngResult{Phase: drivers.PhaseFailed, Reason: "MachineDeployment failed: " + mdNotReady(md)}
	}
	conds := md.Status.Conditions
	counts := false
	want := i32(md.Spec.Replicas)
	if autoscaled {
		if inProgress && !sized(ng, md) {
			reason := fmt.Sprintf("waiting for the MachineDeployment to be sized to %d replicas", sizingTarget(ng, md))
			return waiting(reason, timedOut)
		}
		min, max := autoscalerBounds(md)
		ready := i32(md.Status.AvailableReplicas)
		counts = ready >= min && (max < 0 || ready <= max) && i32(md.Status.UpToDateReplicas) == ready &&
			ready == i32(md.Spec.Replicas)
	} else {
		// The MachineDeployment must want what the nodegroup asks for: until
		// the topology controller has carried a resize into it, its old,
		// settled status says nothing about the new size. That holds for a
		// settled nodegroup too: cluster_update resizes the default worker
		// without claiming it (the end-to-end test over RPC saw the update
		// complete before the MachineDeployment wanted the new size).
		if int64(want) != ng.NodeCount {
			reason := fmt.Sprintf("waiting for the MachineDeployment to want %d replicas (it wants %d)", ng.NodeCount, want)
			return waiting(reason, timedOut)
		}
		counts = want >= 0 && want == i32(md.Status.UpToDateReplicas) && want == i32(md.Status.AvailableReplicas)
	}
	// Likewise the version: in an upgrade the topology controller moves
	// the control plane first and each MachineDeployment only after it;
	// until then the MachineDeployment is settled on the old version.
	if v := md.Spec.Template.Spec.Version; version != "" && v != "" && v != version {
		reason := fmt.Sprintf("waiting for the MachineDeployment to move to %s (it runs %s)", version, v)
		return waiting(reason, timedOut)
	}
	if md.Status.ObservedGeneration >= md.Generation && isTrue(conds, clusterv1.AvailableCondition) &&
		isFalse(conds, clusterv1.RollingOutCondition) && isFalse(conds, clusterv1.ScalingUpCondition) &&
		isFalse(conds, clusterv1.ScalingDownCondition) && counts {
		return ngResult{Phase: drivers.PhaseReady}
	}
	return waiting(mdNotReady(md), timedOut)
}

func mdNotReady(md *clusterv1.MachineDeployment) string {
	if md.Status.ObservedGeneration < md.Generation {
		return reasonWaitingObserve
	}
	for _, t := range []string{clusterv1.AvailableCondition, clusterv1.RollingOutCondition, clusterv1.ScalingUpCondition, clusterv1.ScalingDownCondition} {
		c := cond(md.Status.Conditions, t)
		bad := c == nil || (t == clusterv1.AvailableCondition) != (c.Status == metav1.ConditionTrue)
		if bad {
			if c == nil {
				return t + " not reported yet"
			}
			return describe(c)
		}
	}
	return fmt.Sprintf("%d/%d machines up to date and available", max(i32(md.Status.AvailableReplicas), 0), max(i32(md.Spec.Replicas), 0))
}

// appliedAutoscaled reports whether the MachineDeployment was applied as
// autoscaled: the apply then writes the autoscaler's size annotations.
func appliedAutoscaled(md *clusterv1.MachineDeployment) bool {
	if md == nil {
		return false
	}
	_, ok := md.Annotations[clusterv1.AutoscalerMinSizeAnnotation]
	return ok
}

func autoscalerBounds(md *clusterv1.MachineDeployment) (int32, int32) {
	min, max := int32(0), int32(-1)
	fmt.Sscan(md.Annotations[clusterv1.AutoscalerMinSizeAnnotation], &min)
	fmt.Sscan(md.Annotations[clusterv1.AutoscalerMaxSizeAnnotation], &max)
	return min, max
}

// mapControlPlaneNodeGroup maps the master nodegroup from the control plane.
// version is the Cluster's topology version ("" when unknown).
func mapControlPlaneNodeGroup(ng *objects.NodeGroup, cp *controlPlane, version string, now, deadline time.Time) ngResult {
	cur := ng.Status
	inProgress := strings.HasSuffix(cur, "_IN_PROGRESS") && cur != objects.DeleteInProgress
	if cp == nil {
		switch {
		case !inProgress:
			// Deleted with its cluster, or not there for a settled one.
			return ngResult{Phase: drivers.PhaseGone}
		case !deadline.IsZero() && now.After(deadline):
			return ngResult{Phase: drivers.PhaseFailed, Reason: "timed out waiting for the control plane"}
		}
		return ngResult{Phase: drivers.PhaseInProgress, Reason: "waiting for the control plane"}
	}
	timedOut := inProgress && !deadline.IsZero() && now.After(deadline)
	conds := cp.Status.Conditions
	want := i32(cp.Spec.Replicas)
	if inProgress && int64(want) != ng.NodeCount {
		reason := fmt.Sprintf("waiting for the control plane to want %d replicas (it wants %d)", ng.NodeCount, want)
		return waiting(reason, timedOut)
	}
	// Until the topology controller has carried an upgrade into the
	// control plane, its settled status is the old version's.
	if version != "" && cp.Spec.Version != "" && cp.Spec.Version != version {
		reason := fmt.Sprintf("waiting for the control plane to move to %s (it runs %s)", version, cp.Spec.Version)
		return waiting(reason, timedOut)
	}
	if cp.Status.ObservedGeneration >= cp.Generation && isTrue(conds, clusterv1.AvailableCondition) &&
		settled(conds) && want >= 0 && want == i32(cp.Status.UpToDateReplicas) && want == i32(cp.Status.ReadyReplicas) {
		return ngResult{Phase: drivers.PhaseReady}
	}
	reason := fmt.Sprintf("%d/%d control plane machines up to date and ready", max(i32(cp.Status.ReadyReplicas), 0), max(want, 0))
	for _, t := range []string{clusterv1.AvailableCondition, clusterv1.RollingOutCondition, clusterv1.ScalingUpCondition, clusterv1.ScalingDownCondition} {
		c := cond(conds, t)
		if c != nil && (t == clusterv1.AvailableCondition) != (c.Status == metav1.ConditionTrue) {
			reason = describe(c)
			break
		}
	}
	return waiting(reason, timedOut)
}

// machineAddress picks the address Magnum shows for a node: the external
// IP when there is one, else the internal IP.
func machineAddress(m *clusterv1.Machine) string {
	var internal string
	for _, a := range m.Status.Addresses {
		switch a.Type {
		case clusterv1.MachineExternalIP:
			return a.Address
		case clusterv1.MachineInternalIP:
			if internal == "" {
				internal = a.Address
			}
		}
	}
	return internal
}

// coeVersion is the lowest version the control plane reports, else the
// topology version.
func coeVersion(obs observation) string {
	var vs []string
	if obs.Cluster != nil && obs.Cluster.Status.ControlPlane != nil {
		for _, v := range obs.Cluster.Status.ControlPlane.Versions {
			vs = append(vs, v.Version)
		}
	}
	if len(vs) == 0 && obs.ControlPlane != nil && obs.ControlPlane.Status.Version != "" {
		vs = append(vs, obs.ControlPlane.Status.Version)
	}
	if len(vs) == 0 {
		if obs.Cluster == nil {
			return ""
		}
		return obs.Cluster.Spec.Topology.Version
	}
	slices.SortFunc(vs, compareVersions)
	return vs[0]
}

// parseVersion splits vMAJOR.MINOR.PATCH (ok false otherwise).
func parseVersion(v string) (maj, min, patch int, ok bool) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, 0, false
	}
	fmt.Sscan(m[1], &maj)
	fmt.Sscan(m[2], &min)
	fmt.Sscan(m[3], &patch)
	return maj, min, patch, true
}

func compareVersions(a, b string) int {
	a1, a2, a3, _ := parseVersion(a)
	b1, b2, b3, _ := parseVersion(b)
	for _, d := range []int{a1 - b1, a2 - b2, a3 - b3} {
		if d != 0 {
			return d
		}
	}
	return strings.Compare(a, b)
}

// otherVersion reports whether Machine m runs a version other than the
// topology's (both known).
func otherVersion(m *clusterv1.Machine, version string) bool {
	return version != "" && m.Spec.Version != "" && m.Spec.Version != version
}
