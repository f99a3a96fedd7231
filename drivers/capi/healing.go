package capi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// Auto-healing: the ClusterClass bundles (magnum-v2 on) define the
// MachineHealthChecks of the control plane and of the workers with the
// anchors' defaults; auto_healing_enabled switches them on, and the
// labels below override their timeouts and the number of Machines
// remediated at once, per cluster, through the Cluster's topology
// (healthCheck.checks and .remediation), so no new class is needed.
//
// A worker nodegroup's own auto_healing_enabled, _unhealthy_timeout,
// _node_startup_timeout and _max_unhealthy labels override the cluster's
// for its MachineDeployment, value by value (nodeGroupHealing);
// auto_healing_enabled=false on a nodegroup disables its
// MachineDeployment's health check (healthCheck.enabled false, which the
// topology allows per MachineDeployment) and true enables it on a cluster
// that has it off. The control plane's check, and
// auto_healing_control_plane_max_unhealthy, stay the cluster's (a
// nodegroup label that differs is reported, see nodeGroupLabelWarnings).
//
// Neither anchor has such labels (magnum-cluster-api hard-codes its
// health checks, magnum-capi-helm passes only enabled to its charts):
// the names are this driver's, in Magnum's auto_healing_ family.

// Label types of the auto-healing labels.
const (
	// LabelDuration is a duration: a Go duration ("5m", "90s", "1h30m")
	// or a number of seconds, within [Min, Max] seconds; parsed to seconds.
	LabelDuration LabelType = "duration"
	// LabelIntOrPercent is a count ("1") within [Min, Max], or a
	// percentage ("40%") from 0 to 100; parsed to an IntOrString.
	LabelIntOrPercent LabelType = "int-or-percent"
)

// variableHealthCheck is the pseudo-variable a class "declares" when it
// defines a MachineHealthCheck: the auto-healing labels need one, and a
// class without (magnum-v1) cannot apply them (see LabelWarnings). It is
// no valid variable name, so it never reaches a topology.
const variableHealthCheck = "(healthCheck)"

func healingLabelSpecs() LabelSchema {
	const (
		anchors  = "this driver's: mcapi hard-codes 5 minutes, capi-helm passes only `enabled`"
		anchors2 = "this driver's; mcapi: 80 % fixed"
		duration = "; a duration (`90s`, `10m`, `1h30m`) or seconds. The cluster's applies to the control plane and the " +
			"workers, a worker nodegroup's own overrides the cluster's for its machines"
	)
	return LabelSchema{
		{Name: "auto_healing_unhealthy_timeout", Type: LabelDuration, Min: i64(30), Max: i64(86400), Variable: variableHealthCheck,
			Unset: "the class's: `5m`", Anchors: anchors,
			Help: "how long a Node may be not Ready (or Unknown) before its Machine is replaced" + duration},
		{Name: "auto_healing_node_startup_timeout", Type: LabelDuration, Min: i64(30), Max: i64(86400), Variable: variableHealthCheck,
			Unset: "the class's: `20m`", Anchors: anchors,
			Help: "how long a Machine may be without a Node before it is replaced" + duration},
		{Name: "auto_healing_max_unhealthy", Type: LabelIntOrPercent, Min: i64(0), Max: i64(1000), Variable: variableHealthCheck,
			Unset: "the class's: `40%`", Anchors: anchors2,
			Help: "remediation of a nodegroup's workers pauses while more of its Machines than this are unhealthy (a " +
				"count or a percentage); a worker nodegroup's own value over the cluster's"},
		{Name: "auto_healing_control_plane_max_unhealthy", Type: LabelIntOrPercent, Min: i64(0), Max: i64(7), Variable: variableHealthCheck,
			Unset: "the class's: `1`", Anchors: anchors2,
			Help: "remediation of the control plane pauses while more of its Machines than this are unhealthy (a count or a percentage)"},
	}
}

// parseDuration parses a LabelDuration value to seconds.
func (l LabelSpec) parseDuration(v string) (int64, error) {
	v = strings.TrimSpace(v)
	var secs int64
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		secs = n
	} else if d, err := time.ParseDuration(v); err == nil && d%time.Second == 0 {
		secs = int64(d / time.Second)
	} else {
		return 0, errors.New("must be a duration like 300s, 5m or 1h30m (whole seconds), or a number of seconds")
	}
	if l.Min != nil && secs < *l.Min || l.Max != nil && secs > *l.Max {
		return 0, fmt.Errorf("must be between %s and %s seconds", bound(l.Min, "-inf"), bound(l.Max, "inf"))
	}
	return secs, nil
}

// parseIntOrPercent parses a LabelIntOrPercent value.
func (l LabelSpec) parseIntOrPercent(v string) (intstr.IntOrString, error) {
	v = strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || n > 100 {
			return intstr.IntOrString{}, errors.New("must be a percentage from 0% to 100%, or a number of machines")
		}
		return intstr.FromString(strconv.FormatInt(n, 10) + "%"), nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return intstr.IntOrString{}, errors.New("must be a number of machines or a percentage like 40%")
	}
	if l.Min != nil && n < *l.Min || l.Max != nil && n > *l.Max {
		return intstr.IntOrString{}, fmt.Errorf("must be between %s and %s machines, or a percentage", bound(l.Min, "-inf"), bound(l.Max, "inf"))
	}
	return intstr.FromInt32(int32(n)), nil
}

// healing is what the auto-healing labels of a cluster override (nil:
// the class's value).
type healing struct {
	unhealthyTimeout, nodeStartupTimeout   *int32
	maxUnhealthy, controlPlaneMaxUnhealthy *intstr.IntOrString
}

func healingOf(l Labels) healing {
	var h healing
	if n, ok := l.Int("auto_healing_unhealthy_timeout"); ok {
		h.unhealthyTimeout = ptr(int32(n))
	}
	if n, ok := l.Int("auto_healing_node_startup_timeout"); ok {
		h.nodeStartupTimeout = ptr(int32(n))
	}
	if v, ok := l.values["auto_healing_max_unhealthy"].(intstr.IntOrString); ok {
		h.maxUnhealthy = &v
	}
	if v, ok := l.values["auto_healing_control_plane_max_unhealthy"].(intstr.IntOrString); ok {
		h.controlPlaneMaxUnhealthy = &v
	}
	return h
}

// nodeGroupLabelSpec is the cluster label spec name applies to a
// nodegroup's label of that name.
func nodeGroupLabelSpec(name string) LabelSpec {
	s := DefaultLabelSchema()
	return s[slices.IndexFunc(s, func(l LabelSpec) bool { return l.Name == name })]
}

// nodeGroupHealing is the auto-healing of a worker nodegroup's
// MachineDeployment: the cluster's (autoHeal, h) with each of the
// nodegroup's own labels over it (an empty one is unset). Its labels are
// checked by the rules of the cluster's; a bad one is
// InvalidParameterValue naming the nodegroup.
func nodeGroupHealing(ng *objects.NodeGroup, autoHeal bool, h healing) (bool, healing, error) {
	for _, name := range []string{"auto_healing_enabled", "auto_healing_unhealthy_timeout",
		"auto_healing_node_startup_timeout", "auto_healing_max_unhealthy"} {
		raw := ng.Labels[name]
		if raw == "" {
			continue
		}
		v, err := nodeGroupLabelSpec(name).parse(raw)
		if err != nil {
			return false, healing{}, invalid("Invalid value %q for label %s of nodegroup %s: %v.", raw, name, ng.Name, err)
		}
		switch v := v.(type) {
		case bool:
			autoHeal = v
		case int64:
			if name == "auto_healing_unhealthy_timeout" {
				h.unhealthyTimeout = ptr(int32(v))
			} else {
				h.nodeStartupTimeout = ptr(int32(v))
			}
		case intstr.IntOrString:
			h.maxUnhealthy = &v
		}
	}
	return autoHeal, h, nil
}

// healingOffWarning is how a label warning says why auto-healing labels
// are not applied.
const healingOffWarning = "not applied (auto_healing_enabled is false)"

// workerHealingLabels are the auto-healing labels a worker nodegroup may
// set for itself; auto_healing_control_plane_max_unhealthy is the
// cluster's only.
var workerHealingLabels = []string{"auto_healing_unhealthy_timeout", "auto_healing_node_startup_timeout", "auto_healing_max_unhealthy"}

// autoHealing is whether auto-healing is on for labels raw (the cluster's;
// unset: the schema's default), and then for ng's own auto_healing_enabled
// over it when ng is not nil; ok is false when a value does not parse
// (which the apply refuses on its own).
func (s LabelSchema) autoHealing(raw map[string]string, ng *objects.NodeGroup) (on, ok bool) {
	i := slices.IndexFunc(s, func(l LabelSpec) bool { return l.Name == "auto_healing_enabled" })
	if i < 0 {
		return false, false
	}
	v := raw["auto_healing_enabled"]
	if v == "" {
		v = s[i].Default
	}
	if ng != nil && ng.Labels["auto_healing_enabled"] != "" {
		v = ng.Labels["auto_healing_enabled"]
	}
	b, err := s[i].parse(v)
	on, ok = b.(bool)
	return on, ok && err == nil
}

// healingLabelWarnings reports the cluster's auto-healing labels that
// nothing applies because auto-healing is off: its control plane's
// maximum when the cluster has it off, and each of the workers' labels
// unless a worker nodegroup with auto-healing on takes it (one with its
// own, other value does not). A class without health checks is left to
// LabelWarnings; a label set to its default, or to nothing, is not
// reported. Names only, never values.
func (s LabelSchema) healingLabelWarnings(raw map[string]string, ngs []*objects.NodeGroup, declared map[string]bool) []string {
	if on, ok := s.autoHealing(raw, nil); on || !ok || !declared[variableHealthCheck] {
		return nil
	}
	applied := map[string]bool{}
	for _, ng := range ngs {
		if on, ok := s.autoHealing(raw, ng); ng.Role == objects.RoleMaster || !on || !ok {
			continue
		}
		for _, name := range workerHealingLabels {
			if v := ng.Labels[name]; v == "" || v == raw[name] {
				applied[name] = true
			}
		}
	}
	var off []string
	for _, l := range s {
		if l.Variable == variableHealthCheck && !applied[l.Name] && raw[l.Name] != "" && raw[l.Name] != l.Default {
			off = append(off, l.Name)
		}
	}
	if len(off) == 0 {
		return nil
	}
	slices.Sort(off)
	return []string{"labels " + healingOffWarning + ": " + strings.Join(off, ", ")}
}

// workers reports whether h overrides the workers' health checks.
func (h healing) workers() bool {
	return h.unhealthyTimeout != nil || h.nodeStartupTimeout != nil || h.maxUnhealthy != nil
}

// controlPlane reports whether h overrides the control plane's.
func (h healing) controlPlane() bool {
	return h.unhealthyTimeout != nil || h.nodeStartupTimeout != nil || h.controlPlaneMaxUnhealthy != nil
}

// overrideChecks applies h to checks (the class's, converted), in place.
func (h healing) overrideChecks(startup **int32, conds []clusterv1.UnhealthyNodeCondition) {
	if h.nodeStartupTimeout != nil {
		*startup = ptr(*h.nodeStartupTimeout)
	}
	if h.unhealthyTimeout != nil {
		for i := range conds {
			conds[i].TimeoutSeconds = ptr(*h.unhealthyTimeout)
		}
	}
}

// convertVia copies in to out through JSON: the ClusterClass's health
// check and the topology's override have the same fields.
func convertVia(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// workerHealthCheck is the healthCheck of a MachineDeployment of class
// mdClass: enabled when auto-healing is on and the class defines one,
// with the class's checks and remediation overridden by the labels (the
// override replaces the class's definition as a whole, so it carries all
// of it). Without labels the class's definition applies unchanged.
func workerHealthCheck(autoHeal bool, hc healthChecks, mdClass string, h healing) (clusterv1.MachineDeploymentTopologyHealthCheck, error) {
	def, ok := hc.workerDefs[mdClass]
	out := clusterv1.MachineDeploymentTopologyHealthCheck{Enabled: ptr(autoHeal && ok)}
	if !autoHeal || !ok || !h.workers() {
		return out, nil
	}
	if err := convertVia(def.Checks, &out.Checks); err != nil {
		return out, fmt.Errorf("capi: health check of %s: %w", mdClass, err)
	}
	if err := convertVia(def.Remediation, &out.Remediation); err != nil {
		return out, fmt.Errorf("capi: health check of %s: %w", mdClass, err)
	}
	h.overrideChecks(&out.Checks.NodeStartupTimeoutSeconds, out.Checks.UnhealthyNodeConditions)
	if h.maxUnhealthy != nil {
		out.Remediation.TriggerIf = clusterv1.MachineDeploymentTopologyHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: ptr(*h.maxUnhealthy)}
	}
	return out, nil
}

// controlPlaneHealthCheck is the control plane's healthCheck, as
// workerHealthCheck; a class that defines none keeps the field unset.
func controlPlaneHealthCheck(autoHeal bool, hc healthChecks, h healing) (clusterv1.ControlPlaneTopologyHealthCheck, error) {
	if hc.controlPlaneDef == nil {
		return clusterv1.ControlPlaneTopologyHealthCheck{}, nil
	}
	out := clusterv1.ControlPlaneTopologyHealthCheck{Enabled: ptr(autoHeal)}
	if !autoHeal || !h.controlPlane() {
		return out, nil
	}
	if err := convertVia(hc.controlPlaneDef.Checks, &out.Checks); err != nil {
		return out, fmt.Errorf("capi: health check of the control plane: %w", err)
	}
	if err := convertVia(hc.controlPlaneDef.Remediation, &out.Remediation); err != nil {
		return out, fmt.Errorf("capi: health check of the control plane: %w", err)
	}
	h.overrideChecks(&out.Checks.NodeStartupTimeoutSeconds, out.Checks.UnhealthyNodeConditions)
	if h.controlPlaneMaxUnhealthy != nil {
		out.Remediation.TriggerIf = clusterv1.ControlPlaneTopologyHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: ptr(*h.controlPlaneMaxUnhealthy)}
	}
	return out, nil
}
