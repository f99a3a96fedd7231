package capi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/capi/cloudsweep"
)

// DeleteCluster implements drivers.Driver: delete the Cluster (background
// propagation: Cluster API orders the teardown); Observe waits for it to
// go, then removes the labelled Secrets and the credential before it
// reports the cluster gone.
func (d *Driver) DeleteCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, d.deleteCluster(ctx, req.Cluster)
}

func (d *Driver) deleteCluster(ctx context.Context, c *objects.Cluster) error {
	if err := d.usable(); err != nil {
		return err
	}
	if err := notManaged(c); err != nil {
		// Never "nothing to delete": the cluster may be running under
		// another driver's objects (foreign.go).
		return err
	}
	r, ok := refOf(c)
	if !ok {
		d.log.Info("cluster has no CAPI cluster to delete", d.logAttrs(ctx, c)...)
		return nil
	}
	// When this attempt began, for its delete_timeout (a retry after
	// DELETE_FAILED starts a new one).
	now := d.now().UTC()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotationDeleteRequested, now.Format(time.RFC3339))
	if _, err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Patch(ctx, r.Name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: annotate Cluster %s for deletion: %w", r, err)
	}
	d.noteDeleteRequested(r, now)
	// What an earlier apply changed no longer matters: the deletion is
	// what is pending now.
	d.written.forget(r)
	d.addOnsWritten.forget(r)
	d.sweepBeforeDelete(ctx, c, r.Namespace)
	// Background, not foreground: Cluster API's own finalizer tears the
	// cluster down in order (workers, control plane, then the
	// infrastructure cluster: network, router, load balancer) and removes
	// the Cluster last. Foreground propagation would have the garbage
	// collector delete the infrastructure cluster beside servers that
	// still use it, and without a collector leave the Cluster with its
	// foregroundDeletion finalizer for ever (cluster-api#4085).
	bg := metav1.DeletePropagationBackground
	err := d.deps.Dynamic.Resource(gvrCluster).Namespace(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("capi: delete Cluster %s: %w", r, err)
	}
	d.log.Info("CAPI cluster deletion requested", append(d.logAttrs(ctx, c), "capi_cluster", r.String())...)
	return nil
}

// cleanup removes what the driver created beside the Cluster: the cloud
// resources of its add-ons (sweepCloud), the labelled Secrets and the
// cloud credentials they name. Concurrent clean-ups of a cluster run one
// after the other (d.guard): the later one lists what the first left, so
// nothing is revoked or deleted twice.
func (d *Driver) cleanup(ctx context.Context, c *objects.Cluster, ns string) error {
	unlock, err := d.guard.lock(ctx, "cleanup/"+deref(c.UUID))
	if err != nil {
		return err
	}
	defer unlock()
	secrets, err := d.deps.Core.ListSecrets(ctx, ns, LabelClusterUUID+"="+deref(c.UUID))
	if err != nil {
		return err
	}
	// The cloud resources the cluster's add-ons created go first, while
	// its credential still works: the load balancers a Service created
	// after the first sweep, and the volumes, detached now that the
	// servers are gone. What is left (a volume still detaching) keeps the
	// delete in progress until the next sync.
	if err := d.deleteAutoscalerOf(ctx, c, ns); err != nil {
		return err
	}
	remaining, err := d.sweepCloud(ctx, c, secrets, cloudsweep.What{LoadBalancers: true, Volumes: true,
		ServerGroupPrefix: serverGroupPrefix(c)})
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		return fmt.Errorf("waiting for %s", strings.Join(remaining, ", "))
	}
	var errs []error
	for _, s := range secrets {
		if ref := credentialRefOf(s); ref.ID != "" {
			if err := d.deps.Credentials.Revoke(ctx, c, ref); err != nil {
				errs = append(errs, fmt.Errorf("revoke credential %s: %w", ref.ID, err))
				continue
			}
		}
		if err := d.deps.Core.DeleteSecret(ctx, ns, s.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
