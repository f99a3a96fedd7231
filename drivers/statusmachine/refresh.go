package statusmachine

import (
	"maps"
	"slices"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Settled reports whether a cluster in status has no operation for the
// status machine to judge (neither in progress nor a DELETE_COMPLETE
// leftover).
func Settled(status string) bool {
	return !InProgress(status) && status != objects.DeleteComplete
}

// Refresh applies what a driver reports of a settled cluster (see
// drivers.SettledObserver): the fields a back end decides on its own
// after an operation has ended, stored at every sync as Decide stores them
// during one. They are the node_count of a nodegroup the back end sizes
// itself (an autoscaler: vexxhost/magnum-cluster-api #521, #907), the
// nodegroups' node_addresses and version, and the cluster's api_address,
// coe_version and container_version. Statuses and reasons are left as they
// are, phases are not judged, and nodegroups in progress (or being
// deleted) are left alone. Like Decide it does no I/O; a cluster that is not
// settled gets a Skip.
func Refresh(in Input) Decision {
	c := in.Cluster
	if !Settled(c.Status) {
		return Decision{Skip: "status " + c.Status + " is not settled"}
	}
	o := in.Observation
	d := Decision{Cluster: objects.Clone(c)}
	if o.APIAddress != "" && o.APIAddress != objects.Deref(c.APIAddress) {
		d.Cluster.APIAddress = objects.Str(o.APIAddress)
	}
	if o.COEVersion != "" && o.COEVersion != objects.Deref(c.CoeVersion) {
		d.Cluster.CoeVersion = objects.Str(o.COEVersion)
	}
	if o.ContainerVersion != "" && o.ContainerVersion != objects.Deref(c.ContainerVersion) {
		d.Cluster.ContainerVersion = objects.Str(o.ContainerVersion)
	}
	applyHealth(d.Cluster, c, o.Health)
	for _, row := range in.NodeGroups {
		ob, ok := o.NodeGroups[row.UUID]
		if !ok || InProgress(row.Status) {
			continue
		}
		ng := objects.Clone(row)
		if ob.NodeAddresses != nil && !slices.Equal(ob.NodeAddresses, row.NodeAddresses) {
			ng.NodeAddresses = slices.Clone(ob.NodeAddresses)
		}
		if ob.NodeCount != nil && int64(*ob.NodeCount) != row.NodeCount {
			ng.NodeCount = int64(*ob.NodeCount)
		}
		if ob.Version != "" && ob.Version != objects.Deref(row.Version) {
			ng.Version = objects.Str(ob.Version)
		}
		if len(objects.Changes(ng)) > 0 {
			d.NodeGroups = append(d.NodeGroups, ng)
		}
	}
	return d
}

// applyHealth stores on c the health h reports, when it reports one that
// differs from row's: health_status and health_status_reason, as the
// health poll stores them (an empty reason is {}).
func applyHealth(c, row *objects.Cluster, h *drivers.Health) {
	if h == nil || h.Status == "" {
		return
	}
	reason := h.Reason
	if reason == nil {
		reason = map[string]string{}
	}
	if h.Status == row.HealthStatus && maps.Equal(reason, row.HealthStatusReason) {
		return
	}
	c.HealthStatus = h.Status
	c.HealthStatusReason = maps.Clone(reason)
}
