package capi

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// A create writes the Cluster, then its add-ons (apply). A conductor
// stopped between the two leaves a Cluster that Cluster API builds and a
// cluster row in CREATE_IN_PROGRESS whose add-ons nobody will write: the
// create would wait for its ClusterResourceSet until its timeout. So the
// status sync of a cluster being created whose Cluster exists without its
// ClusterResourceSet writes the add-ons (resumeAddOns), as the create would
// have: the same rendering, content-hashed Secrets, server-side apply, so
// a second writer at the same moment writes the same objects. A Cluster
// younger than addOnsResumeGrace is left to its create, which writes the
// add-ons right after it (and its autoscaler), in this conductor or in
// another.

// addOnsResumeGrace is how old (by its creationTimestamp) a Cluster being
// created must be before its missing add-ons count as a stopped create's.
const addOnsResumeGrace = 2 * time.Minute

// addOnsKey is the key of a cluster's add-on writes in d.guard.
func addOnsKey(c *objects.Cluster) string { return "addons/" + deref(c.UUID) }

// writeAddOns is reconcileAddOns under the cluster's add-on lock, so that
// an operation's write and a status sync's resumption do not interleave.
func (d *Driver) writeAddOns(ctx context.Context, c *objects.Cluster, r ref, applied *clusterv1.Cluster, uid string, l Labels) error {
	if !d.opts.AddOns.Enabled {
		return nil
	}
	unlock, err := d.guard.lock(ctx, addOnsKey(c))
	if err != nil {
		return fmt.Errorf("capi: add-ons of %s: %w", r, err)
	}
	defer unlock()
	return d.reconcileAddOns(ctx, c, r, applied, uid, l)
}

// resumeAddOns writes the add-ons of a cluster in CREATE_IN_PROGRESS whose
// Cluster (cl, from the cache) exists, created more than
// addOnsResumeGrace ago, while no ClusterResourceSet does: the cache shows
// none, nor does the management cluster (asked only then, so a set the
// cache has not caught up with is not written twice). A
// failure is logged and retried at the next sync; the create's deadline
// still bounds the wait.
func (d *Driver) resumeAddOns(ctx context.Context, c *objects.Cluster, r ref, cl *clusterv1.Cluster, l *Labels) {
	if !d.opts.AddOns.Enabled || c.Status != objects.CreateInProgress || cl == nil || cl.DeletionTimestamp != nil || l == nil {
		return
	}
	if d.now().Sub(cl.CreationTimestamp.Time) < addOnsResumeGrace {
		return // its create may be writing them now
	}
	if crs, _ := d.cache.Load().addOns(r.Namespace, r.Name); crs != nil {
		return
	}
	log := d.log.With(append(d.logAttrs(ctx, c), "capi_cluster", r.String())...)
	unlock, err := d.guard.lock(ctx, addOnsKey(c))
	if err != nil {
		log.Warn("could not check the add-ons of a cluster being created (another write of them holds its lock); retried at the next sync", "error", err)
		return
	}
	defer unlock()
	_, err = d.deps.Dynamic.Resource(gvrCRS).Namespace(r.Namespace).Get(ctx, crsName(r.Name), metav1.GetOptions{})
	if err == nil {
		return // written; the cache has not caught up yet
	}
	if !apierrors.IsNotFound(err) {
		log.Warn("could not check the add-ons of a cluster being created; retried at the next sync", "error", err)
		return
	}
	log.Warn("a cluster being created has no add-ons (its create stopped before writing them): writing them")
	if err := d.reconcileAddOns(ctx, c, r, cl, string(cl.UID), *l); err != nil {
		log.Warn("could not write the add-ons of a cluster being created; retried at the next sync", "error", err)
	}
}
