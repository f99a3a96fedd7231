package capi

import (
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// createDeadlineFor is when a nodegroup in CREATE_IN_PROGRESS has failed:
// the cluster's create deadline for the nodegroups created with it, and
// created_at + the cluster's create timeout for one added later (else a
// nodegroup added after that deadline would fail at its first sync).
func createDeadlineFor(timeout time.Duration, ng *objects.NodeGroup, clusterDeadline time.Time) time.Time {
	if ng.Status != objects.CreateInProgress {
		return time.Time{}
	}
	if ng.CreatedAt != nil {
		if own := ng.CreatedAt.Add(timeout); own.After(clusterDeadline) {
			return own
		}
	}
	return clusterDeadline
}

// deadlinePassed reports whether this sync may fail c or one of its
// nodegroups on a deadline: the delete deadline has passed, or the create
// deadline has passed while something is still being created (nodegroup
// deadlines are never earlier than the cluster's).
func deadlinePassed(c *objects.Cluster, ngs []*objects.NodeGroup, now, createDeadline, deleteDeadline time.Time) bool {
	if !deleteDeadline.IsZero() && now.After(deleteDeadline) {
		return true
	}
	if createDeadline.IsZero() || !now.After(createDeadline) {
		return false
	}
	if c.Status == objects.CreateInProgress {
		return true
	}
	for _, ng := range ngs {
		if ng.Status == objects.CreateInProgress {
			return true
		}
	}
	return false
}

// createTimeout is the cluster's create_timeout, or the driver's default.
func (d *Driver) createTimeout(c *objects.Cluster) time.Duration {
	if n := deref(c.CreateTimeout); n > 0 {
		return time.Duration(n) * time.Minute
	}
	return d.opts.CreateTimeout
}

// createDeadline comes from the annotation written at create, else from
// created_at + create_timeout.
func (d *Driver) createDeadline(c *objects.Cluster, cl *clusterv1.Cluster) time.Time {
	if cl != nil {
		if t, err := time.Parse(time.RFC3339, cl.Annotations[annotationCreateDeadline]); err == nil {
			return t
		}
	}
	if c.CreatedAt == nil {
		return time.Time{}
	}
	return c.CreatedAt.Add(d.createTimeout(c))
}
