package capi

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Monitor implements drivers.MonitorProvider: health as the management
// cluster sees it, read from the informer cache (no API requests, no
// connection to the workload cluster).
func (d *Driver) Monitor(ctx context.Context, req drivers.ClusterRequest) (drivers.Monitor, error) {
	if err := d.current(); err != nil {
		return nil, err
	}
	if err := notManaged(req.Cluster); err != nil {
		d.warnNotManaged(ctx, req.Cluster, err)
		return nil, err
	}
	r, ok := refOf(req.Cluster)
	if !ok {
		return nil, nil
	}
	return monitor{d: d, r: r}, nil
}

type monitor struct {
	d *Driver
	r ref
}

// PollHealth implements drivers.Monitor.
func (m monitor) PollHealth(ctx context.Context) (drivers.Health, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Health{}, err
	}
	if err := m.d.current(); err != nil {
		return drivers.Health{}, err
	}
	return healthOf(m.d.cache.Load().observe(m.r.Namespace, m.r.Name)), nil
}

func conditionHealth(conds []metav1.Condition, t string) (bool, string) {
	c := cond(conds, t)
	if c == nil {
		return false, t + " not reported"
	}
	if c.Status == metav1.ConditionTrue {
		return true, "ok"
	}
	return false, describe(c)
}

// healthOf is HEALTHY iff the Cluster is Available, its API server answers
// the management cluster's probe, the control plane is available, every
// MachineDeployment is available with all its replicas, and no Machine
// (but those being deleted) reports its node unhealthy. The reason names
// each component, and each Machine whose node is unhealthy
// ("<Machine>.node").
func healthOf(obs observation) drivers.Health {
	cl := obs.Cluster
	if cl == nil {
		return drivers.Health{Status: objects.Unknown, Reason: map[string]string{"api": "Cluster not found"}}
	}
	if cl.DeletionTimestamp != nil {
		return drivers.Health{Status: objects.Unknown, Reason: map[string]string{"api": "Cluster is being deleted"}}
	}
	reason := map[string]string{}
	healthy := true
	check := func(key string, ok bool, msg string) {
		reason[key] = msg
		healthy = healthy && ok
	}
	ok, msg := conditionHealth(cl.Status.Conditions, clusterv1.AvailableCondition)
	check("cluster", ok, msg)
	ok, msg = conditionHealth(cl.Status.Conditions, clusterv1.ClusterRemoteConnectionProbeCondition)
	check("api", ok, msg)
	if obs.ControlPlane != nil {
		ok, msg = conditionHealth(obs.ControlPlane.Status.Conditions, clusterv1.AvailableCondition)
	} else {
		ok, msg = conditionHealth(cl.Status.Conditions, clusterv1.ClusterControlPlaneAvailableCondition)
	}
	check("controlplane", ok, msg)
	names := make([]string, 0, len(obs.Deployments))
	for n := range obs.Deployments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		md := obs.Deployments[n]
		ok, msg := conditionHealth(md.Status.Conditions, clusterv1.AvailableCondition)
		if ok && md.Spec.Replicas != nil && i32(md.Status.AvailableReplicas) < *md.Spec.Replicas {
			ok, msg = false, fmt.Sprintf("%d/%d machines available", max(i32(md.Status.AvailableReplicas), 0), *md.Spec.Replicas)
		}
		check(n, ok, msg)
	}
	for _, m := range obs.Machines {
		if m.DeletionTimestamp != nil {
			continue // being removed (a resize down, a rollout): its node is drained on purpose
		}
		if c := cond(m.Status.Conditions, clusterv1.MachineNodeHealthyCondition); c != nil && c.Status == metav1.ConditionFalse {
			reason[m.Name+".node"] = describe(c)
			healthy = false
		}
	}
	status := objects.Healthy
	if !healthy {
		status = objects.Unhealthy
	}
	return drivers.Health{Status: status, Reason: reason}
}

// autoHealerReportsHealth is true for a cluster whose health
// magnum-auto-healer writes (auto_healing_enabled with
// auto_healing_controller magnum-auto-healer, as Magnum's poll skips them):
// the driver reports none for it.
func autoHealerReportsHealth(c *objects.Cluster) bool {
	switch strings.ToLower(strings.TrimSpace(c.Labels["auto_healing_enabled"])) {
	case "1", "t", "true", "on", "y", "yes": // oslo's bool_from_string, as the poll reads it
		return c.Labels["auto_healing_controller"] == "magnum-auto-healer"
	}
	return false
}
