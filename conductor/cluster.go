package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// ClusterCreate ports cluster_conductor.Handler.cluster_create: insert the
// cluster (CREATE_IN_PROGRESS) and its default master and worker
// nodegroups, generate the certificates, notify create/pending and start
// the driver. The cluster is the status sync's once its stack_id, from the
// driver's result (the cluster's uuid when the driver names none), is
// stored: a create is complete only when its driver says so. Any failure
// after the insert ends in CREATE_FAILED with the reason and a
// create/failure notification; a duplicate cluster changes nothing.
func (h *Handlers) ClusterCreate(ctx context.Context, c *objects.Cluster, masterCount, nodeCount int, createTimeout *int) (*objects.Cluster, error) {
	if c == nil {
		return nil, exception.InvalidParameterValue("cluster is required")
	}
	log := h.logger(ctx, "cluster_create", objects.Deref(c.UUID))
	if masterCount < 0 || nodeCount < 0 {
		err := exception.InvalidParameterValue(fmt.Sprintf("invalid node counts: master_count %d, node_count %d", masterCount, nodeCount))
		log.Error("cluster_create refused", "error", err)
		return nil, err
	}
	c.Status = objects.CreateInProgress
	c.StatusReason = nil
	// A missing template fails the create after the insert, as in Magnum
	// (CREATE_FAILED with the reason).
	ct, ctErr := h.store.GetClusterTemplateByUUID(ctx, objects.Deref(c.ClusterTemplateID))
	var master, worker *objects.NodeGroup
	var ngErr error
	// The cluster and its nodegroups exist together or not at all.
	insert := func(withNodeGroups bool) error {
		return h.inTx(ctx, func(ctx context.Context, b *batch) error {
			cl := objects.Clone(c)
			if err := h.store.CreateCluster(ctx, cl); err != nil {
				return err
			}
			b.done = append(b.done, func() { *c = *cl })
			if !withNodeGroups {
				return nil
			}
			master = defaultNodeGroup(cl, ct, masterCount, true)
			worker = defaultNodeGroup(cl, ct, nodeCount, false)
			for _, ng := range []*objects.NodeGroup{master, worker} {
				if err := b.createNodeGroup(ctx, ng); err != nil {
					ngErr = err
					return err
				}
			}
			return nil
		})
	}
	err := insert(ctErr == nil)
	if err != nil && ngErr != nil {
		// The nodegroups could not be inserted (a leftover row holds a
		// name): the cluster is recorded alone, failed, so that its user
		// sees why.
		err = insert(false)
	}
	if err != nil {
		log.Error("cannot insert cluster", "error", err)
		return nil, err
	}
	if ngErr != nil && ctErr == nil {
		ctErr = ngErr
	}
	uuid := objects.Deref(c.UUID)
	log = h.logger(ctx, "cluster_create", uuid)
	log.Info("creating cluster", "master_count", masterCount, "node_count", nodeCount)
	created := objects.Clone(c)

	fail := func(err error) (*objects.Cluster, error) {
		log.Error("cluster creation failed", "error", err)
		failed := objects.Clone(c)
		failed.Status = objects.CreateFailed
		failed.StatusReason = objects.Str(err.Error())
		_ = h.persist(ctx, log, objects.CreateFailed, func(ctx context.Context, b *batch) error {
			return b.cluster(ctx, failed, db.ClusterCond{Status: []string{objects.CreateInProgress}, Read: created,
				Fields: []string{"stack_id"}})
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionCreate, OutcomeFailure, failed)
		return nil, err
	}

	if ctErr != nil {
		return fail(ctErr)
	}
	if err := h.certs.GenerateForCluster(ctx, c); err != nil {
		return fail(err)
	}
	// The references are recorded at once: a create interrupted from here
	// on still knows its certificates. Only while the row has none: a
	// conductor that resumed this create meanwhile (this one took longer
	// than the resumption bound) recorded its own set, which stays, and
	// this one goes.
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		return b.cluster(ctx, c, db.ClusterCond{Status: []string{objects.CreateInProgress}, Read: created,
			Fields: certGuard()})
	}); err != nil {
		cctx, cancel := h.cleanupCtx(ctx)
		h.certs.DeleteRefs(cctx, uuid, refsOf(c).list())
		cancel()
		if errors.Is(err, db.ErrStatusChanged) {
			log.Warn("the create was resumed or ended meanwhile; this handler leaves it to that", "error", err)
			return h.store.GetClusterByUUID(ctx, uuid)
		}
		return fail(err)
	}
	created = objects.Clone(c)
	h.notify.ClusterEvent(ctx, ActionCreate, OutcomePending, c)
	d, err := h.drivers.ForTemplate(ct)
	if err != nil {
		return fail(err)
	}
	var timeout time.Duration
	if createTimeout != nil {
		timeout = time.Duration(*createTimeout) * time.Minute
	}
	req := drivers.CreateClusterRequest{ClusterRequest: clusterRequest(c, ct, []*objects.NodeGroup{master, worker}), Timeout: timeout}
	res, err := h.callDriver(ctx, log, "create_cluster", func(ctx context.Context) (drivers.Result, error) {
		return d.CreateCluster(ctx, req)
	})
	if err != nil {
		return fail(err)
	}
	c.StackID = objects.Str(res.StackID)
	if res.StackID == "" {
		// The stack_id marks the cluster as handed to its driver.
		c.StackID = objects.Str(uuid)
	}
	var ngRead, ngNext []*objects.NodeGroup
	for _, ng := range []*objects.NodeGroup{master, worker} {
		next := objects.Clone(ng)
		next.StackID = c.StackID
		ngRead, ngNext = append(ngRead, objects.Clone(ng)), append(ngNext, next)
	}
	// The stack_id is what the driver holds: it is recorded whatever
	// happened to the cluster meanwhile (a delete must find it), and only
	// a stack_id recorded before is not overwritten.
	if err := h.persist(ctx, log, "stack_id", func(ctx context.Context, b *batch) error {
		if err := b.cluster(ctx, c, db.ClusterCond{Read: created, Fields: []string{"stack_id"}}); err != nil {
			return err
		}
		for i, next := range ngNext {
			if err := b.nodegroup(ctx, next, db.NodeGroupCond{Read: ngRead[i], Fields: []string{"stack_id"}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if decided := h.judge(ctx, log, uuid, res.Observation); decided != nil {
		*c = *decided
	}
	return c, nil
}

// defaultNodeGroup ports conductor.utils._get_nodegroup_object (master:
// min_node_count from the labels applies to the worker only).
func defaultNodeGroup(c *objects.Cluster, ct *objects.ClusterTemplate, count int, isMaster bool) *objects.NodeGroup {
	ng := &objects.NodeGroup{
		ClusterID: objects.Deref(c.UUID), ProjectID: objects.Deref(c.ProjectID),
		NodeCount: int64(count), ImageID: ct.ImageID, IsDefault: true, Status: objects.CreateInProgress,
	}
	labels := map[string]string{}
	for k, v := range c.Labels {
		labels[k] = v
	}
	ng.Labels = labels
	ng.DockerVolumeSize = c.DockerVolumeSize
	if ng.DockerVolumeSize == nil {
		ng.DockerVolumeSize = ct.DockerVolumeSize
	}
	if isMaster {
		ng.Role = objects.RoleMaster
		ng.FlavorID = orStr(c.MasterFlavorID, ct.MasterFlavorID)
	} else {
		ng.Role = objects.RoleWorker
		ng.FlavorID = orStr(c.FlavorID, ct.FlavorID)
		if v, ok := c.Labels["min_node_count"]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				ng.MinNodeCount = n
			}
		}
	}
	ng.Name = "default-" + ng.Role
	// Python sets min_node_count explicitly, so its row holds 0, not NULL.
	objects.MarkChanged(ng, "min_node_count")
	return ng
}

// orStr is Python's `a or b` for nullable strings.
func orStr(a, b *string) *string {
	if a != nil && *a != "" {
		return a
	}
	return b
}

// defaultWorker returns the first default nodegroup whose role is not
// master (Cluster.default_ng_worker).
func defaultWorker(ngs []*objects.NodeGroup) (*objects.NodeGroup, error) {
	for _, ng := range ngs {
		if ng.IsDefault && ng.Role != objects.RoleMaster {
			return ng, nil
		}
	}
	return nil, exception.NodeGroupNotFound("default-worker")
}

// refused is refuse for a claim lost to the cluster's current status: the
// notification shows the cluster as it is now.
func (h *Handlers) refused(ctx context.Context, log *slog.Logger, action, verb string, c *objects.Cluster, r *refusal) error {
	if r.current != nil {
		*c = *r.current
	}
	return h.refuse(ctx, log, action, verb, c, r.status)
}

// refuse sends the failure notification of a guard refusal and returns
// NotSupported('<verb> a cluster when status is "<S>"').
func (h *Handlers) refuse(ctx context.Context, log *slog.Logger, action, verb string, c *objects.Cluster, status string) error {
	h.notify.ClusterEvent(ctx, action, OutcomeFailure, c)
	err := exception.NotSupported(fmt.Sprintf("%s a cluster when status is \"%s\"", verb, status))
	log.Warn("operation refused", "status", status, "error", err)
	return err
}

// resultWrites stores what a driver's Result names on the cluster, under
// the operation's claim (status expect, the claimed row unchanged).
func resultWrites(c *objects.Cluster, res drivers.Result, expect string) func(ctx context.Context, b *batch) error {
	claimed := objects.Clone(c)
	return func(ctx context.Context, b *batch) error {
		next := objects.Clone(claimed)
		next.StackID = objects.Str(res.StackID)
		if err := b.cluster(ctx, next, db.ClusterCond{Status: []string{expect}, Read: claimed,
			Fields: db.ClusterGuardFields()}); err != nil {
			return err
		}
		b.done = append(b.done, func() { *c = *next })
		return nil
	}
}

// finish records a successful driver call: its Result's stack_id, then
// its observation. It returns the cluster to reply with.
func (h *Handlers) finish(ctx context.Context, log *slog.Logger, c *objects.Cluster, res drivers.Result, expect string) (*objects.Cluster, error) {
	if res.StackID != "" && res.StackID != objects.Deref(c.StackID) {
		if err := h.persist(ctx, log, "stack_id", resultWrites(c, res, expect)); err != nil {
			return nil, err
		}
	}
	if decided := h.judge(ctx, log, objects.Deref(c.UUID), res.Observation); decided != nil {
		return decided, nil
	}
	return c, nil
}

// ClusterUpdate ports cluster_conductor.Handler.cluster_update: resize the
// default worker nodegroup through driver.update_cluster, or store only the
// health fields. It returns nil (None) when nothing changed. The rollback
// flag (Heat's) is accepted and ignored, as every driver does.
func (h *Handlers) ClusterUpdate(ctx context.Context, c *objects.Cluster, nodeCount int, healthStatus string,
	healthStatusReason map[string]string, _ bool) (*objects.Cluster, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	uuid := *c.UUID
	log := h.logger(ctx, "cluster_update", uuid)
	if !contains(allowUpdateStatus(), c.Status) {
		return nil, h.refuse(ctx, log, ActionUpdate, "Updating", c, c.Status)
	}
	ngs, err := h.store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		log.Error("cannot list the cluster's nodegroups", "error", err)
		return nil, err
	}
	worker, err := defaultWorker(ngs)
	if err != nil {
		log.Error("cannot find the default worker nodegroup", "error", err)
		return nil, err
	}
	if worker.NodeCount == int64(nodeCount) && c.HealthStatus == healthStatus &&
		reflect.DeepEqual(c.HealthStatusReason, healthStatusReason) {
		return nil, nil
	}
	c.HealthStatus = healthStatus
	c.HealthStatusReason = healthStatusReason
	if worker.NodeCount == int64(nodeCount) {
		// Only the health columns are written: no status to guard.
		if err := h.store.SaveCluster(ctx, c); err != nil {
			log.Error("cannot save health status", "error", err)
			return nil, err
		}
		return c, nil
	}
	if nodeCount < 0 {
		err := exception.InvalidParameterValue(fmt.Sprintf("invalid node_count %d", nodeCount))
		log.Error("cluster_update refused", "error", err)
		return nil, err
	}
	d, ct, err := h.driverFor(ctx, c)
	if err != nil {
		log.Error("cannot load the cluster's driver", "error", err)
		return nil, err
	}
	if err := admit(ctx, log, d, c, ct, ngs); err != nil {
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	workerRead := objects.Clone(worker)
	resized := objects.Clone(worker)
	resized.NodeCount = int64(nodeCount)
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		if err := h.claimCluster(ctx, b, c, objects.UpdateInProgress, allowUpdateStatus()); err != nil {
			return err
		}
		// The API read the worker's size before this update: another
		// resize since then wins.
		err := b.nodegroup(ctx, resized, db.NodeGroupCond{Read: workerRead, Fields: db.NodeGroupGuardFields()})
		if errors.Is(err, db.ErrStatusChanged) {
			return &refusal{nodegroup: true}
		}
		return err
	}); err != nil {
		r := asRefusal(err)
		switch {
		case r != nil && !r.nodegroup:
			return nil, h.refused(ctx, log, ActionUpdate, "Updating", c, r)
		case r != nil:
			err = exception.NotSupportedMessage("Updating a cluster whose default worker nodegroup changed meanwhile is not supported; retry.")
			log.Warn("operation refused", "error", err)
			h.notify.ClusterEvent(ctx, ActionUpdate, OutcomeFailure, c)
			return nil, err
		}
		log.Error("cluster update failed", "error", err)
		return nil, err
	}
	// Magnum notifies before it saves the new size: the old counts.
	h.notify.ClusterEventWith(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason), ngs)
	req := clusterRequest(c, ct, ngs, resized)
	res, err := h.callDriver(ctx, log, "update_cluster", func(ctx context.Context) (drivers.Result, error) {
		return d.UpdateCluster(ctx, req)
	})
	if err != nil {
		log.Error("cluster update failed", "error", err)
		failed := objects.Clone(c)
		failed.Status = objects.UpdateFailed
		failed.StatusReason = objects.Str(err.Error())
		restored := objects.Clone(resized)
		restored.NodeCount = workerRead.NodeCount
		claimed, claimedWorker := objects.Clone(c), objects.Clone(resized)
		_ = h.persist(ctx, log, objects.UpdateFailed, func(ctx context.Context, b *batch) error {
			if err := b.cluster(ctx, failed, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()}); err != nil {
				return err
			}
			return b.nodegroup(ctx, restored, db.NodeGroupCond{Read: claimedWorker, Fields: db.NodeGroupGuardFields()})
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, failed)
		return nil, err
	}
	return h.finish(ctx, log, c, res, objects.UpdateInProgress)
}

// ClusterDelete ports cluster_conductor.Handler.cluster_delete: notify
// delete/pending, run the driver's pre-delete and delete, and leave the
// cluster in DELETE_IN_PROGRESS for the periodic sync to remove. A failure
// notifies delete/failure (showing the status before the delete, as
// Magnum does) and sets DELETE_FAILED.
func (h *Handlers) ClusterDelete(ctx context.Context, uuid string) error {
	log := h.logger(ctx, "cluster_delete", uuid)
	if uuid == "" {
		return exception.InvalidParameterValue("cluster uuid is required")
	}
	c, err := h.store.GetClusterByUUID(ctx, uuid)
	if err != nil {
		log.Error("cannot load cluster", "error", err)
		return err
	}
	d, ct, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		return h.claimCluster(ctx, b, c, objects.DeleteInProgress, allowDeleteStatus())
	}); err != nil {
		if r := asRefusal(err); r != nil {
			return h.refused(ctx, log, ActionDelete, "Deleting", c, r)
		}
		log.Error("cannot claim the cluster", "error", err)
		return err
	}
	before := snapshot(c, oldStatus, oldReason)
	h.notify.ClusterEvent(ctx, ActionDelete, OutcomePending, before)
	req := clusterRequest(c, ct, ngs)
	res, err := h.callDriver(ctx, log, "delete_cluster", func(ctx context.Context) (drivers.Result, error) {
		if p, ok := d.(drivers.PreDeleter); ok {
			if err := p.PreDeleteCluster(ctx, req); err != nil {
				return drivers.Result{}, err
			}
		}
		return d.DeleteCluster(ctx, req)
	})
	if err != nil {
		log.Error("cluster deletion failed", "error", err)
		failed := objects.Clone(c)
		failed.Status = objects.DeleteFailed
		failed.StatusReason = objects.Str(err.Error())
		claimed := objects.Clone(c)
		_ = h.persist(ctx, log, objects.DeleteFailed, func(ctx context.Context, b *batch) error {
			return b.cluster(ctx, failed, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()})
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionDelete, OutcomeFailure, before)
		return err
	}
	_, err = h.finish(ctx, log, c, res, objects.DeleteInProgress)
	return err
}

// ClusterResize ports cluster_conductor.Handler.cluster_resize: set the
// nodegroup's new size (UPDATE_IN_PROGRESS), notify update/pending and call
// driver.resize_cluster. On failure the cluster and nodegroup go to
// UPDATE_FAILED and the old size is restored.
func (h *Handlers) ClusterResize(ctx context.Context, c *objects.Cluster, nodeCount int, nodesToRemove []string,
	ng *objects.NodeGroup) (*objects.Cluster, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	if err := requireNodeGroup(ng); err != nil {
		return nil, err
	}
	uuid := *c.UUID
	log := h.logger(ctx, "cluster_resize", uuid).With("nodegroup_uuid", ng.UUID)
	if !contains(allowResizeStatus(), c.Status) {
		return nil, h.refuse(ctx, log, ActionUpdate, "Resizing", c, c.Status)
	}
	if nodeCount < 0 {
		err := exception.InvalidParameterValue(fmt.Sprintf("invalid node_count %d", nodeCount))
		log.Error("cluster_resize refused", "error", err)
		return nil, err
	}
	if ng.ClusterID == "" {
		ng.ClusterID = uuid
	}
	d, ct, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	oldCount := ng.NodeCount
	ng.NodeCount = int64(nodeCount)
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		if err := h.claimCluster(ctx, b, c, objects.UpdateInProgress, allowResizeStatus()); err != nil {
			return err
		}
		return h.claimNodeGroup(ctx, b, ng, objects.UpdateInProgress, allowResizedNodeGroupStatus())
	}); err != nil {
		ng.NodeCount = oldCount
		r := asRefusal(err)
		switch {
		case r != nil && !r.nodegroup:
			return nil, h.refused(ctx, log, ActionUpdate, "Resizing", c, r)
		case r != nil:
			err = exception.NotSupported(fmt.Sprintf("Resizing a nodegroup when status is \"%s\"", r.status))
			log.Warn("nodegroup refused the resize", "error", err)
			h.notify.ClusterEvent(ctx, ActionUpdate, OutcomeFailure, c)
			return nil, err
		}
		log.Error("cluster resize failed", "error", err)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason))
	req := drivers.ResizeRequest{ClusterRequest: clusterRequest(c, ct, ngs, ng), NodeGroup: objects.Clone(ng),
		NodeCount: nodeCount, NodesToRemove: nodesToRemove}
	res, err := h.callDriver(ctx, log, "resize_cluster", func(ctx context.Context) (drivers.Result, error) {
		return d.ResizeCluster(ctx, req)
	})
	if err != nil {
		log.Error("cluster resize failed", "error", err)
		failed := objects.Clone(c)
		failed.Status = objects.UpdateFailed
		failed.StatusReason = objects.Str(err.Error())
		failedNG := objects.Clone(ng)
		failedNG.NodeCount = oldCount
		failedNG.Status = objects.UpdateFailed
		failedNG.StatusReason = objects.Str(err.Error())
		claimed, claimedNG := objects.Clone(c), objects.Clone(ng)
		_ = h.persist(ctx, log, objects.UpdateFailed, func(ctx context.Context, b *batch) error {
			if err := b.cluster(ctx, failed, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()}); err != nil {
				return err
			}
			return b.nodegroup(ctx, failedNG, db.NodeGroupCond{Read: claimedNG, Fields: db.NodeGroupGuardFields()})
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, failed)
		return nil, err
	}
	return h.finish(ctx, log, c, res, objects.UpdateInProgress)
}

// upgradedNodeGroups returns the nodegroups an upgrade through target
// moves: every nodegroup (not being created or deleted) when target is a
// default nodegroup, else target alone.
func upgradedNodeGroups(ngs []*objects.NodeGroup, target *objects.NodeGroup) []*objects.NodeGroup {
	if !target.IsDefault {
		return []*objects.NodeGroup{target}
	}
	out := []*objects.NodeGroup{target}
	for _, ng := range ngs {
		if ng.UUID != target.UUID && contains(allowResizedNodeGroupStatus(), ng.Status) {
			out = append(out, ng)
		}
	}
	return out
}

// ClusterUpgrade ports cluster_conductor.Handler.cluster_upgrade: call
// driver.upgrade_cluster and leave the cluster and the upgraded nodegroups
// in UPDATE_IN_PROGRESS. The upgrade is recorded with the claim, before the
// driver call: through a default nodegroup the cluster moves to the new
// template (its cluster_template_id and kube_tag label) and every nodegroup
// gets the new kube_tag as version and the template's image; through
// another nodegroup only that one does. When the driver does not take it,
// that is put back: NotSupported from the driver is returned untouched and
// no status changes (after an update/failure notification); any other
// error sets UPDATE_FAILED on the cluster and the upgraded nodegroups. The
// rollback flag (Heat's) is accepted and ignored.
func (h *Handlers) ClusterUpgrade(ctx context.Context, c *objects.Cluster, ct *objects.ClusterTemplate, maxBatchSize int,
	ng *objects.NodeGroup, _ bool) (*objects.Cluster, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	if err := requireNodeGroup(ng); err != nil {
		return nil, err
	}
	if ct == nil {
		return nil, exception.InvalidParameterValue("cluster_template is required")
	}
	uuid := *c.UUID
	log := h.logger(ctx, "cluster_upgrade", uuid).With("nodegroup_uuid", ng.UUID)
	if !contains(allowUpdateStatus(), c.Status) {
		return nil, h.refuse(ctx, log, ActionUpdate, "Upgrading", c, c.Status)
	}
	if ng.ClusterID == "" {
		ng.ClusterID = uuid
	}
	d, current, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	// The target as the API sent it, the others as stored.
	moved := upgradedNodeGroups(ngs, ng)
	// What the driver is asked to leave: the cluster and nodegroups as they
	// are, in UPDATE_IN_PROGRESS.
	asIs := objects.Clone(c)
	asIs.Status, asIs.StatusReason = objects.UpdateInProgress, nil
	asIsNGs := make([]*objects.NodeGroup, len(moved))
	for i, n := range moved {
		asIsNGs[i] = objects.Clone(n)
		asIsNGs[i].Status = objects.UpdateInProgress
	}
	// The upgrade is recorded with the claim (the template, kube_tag,
	// versions and images), so that the status sync never judges the
	// upgrade on the back end's old state, and a conductor that dies before
	// its driver call leaves a change the back end does not show (resumed,
	// see statusmachine.Resume); a failed driver call puts it back.
	upgraded, ngUp := recordUpgrade(c, moved, ng, ct)
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		if err := h.claimCluster(ctx, b, upgraded, objects.UpdateInProgress, allowUpdateStatus()); err != nil {
			return err
		}
		for _, n := range ngUp {
			if err := h.claimNodeGroup(ctx, b, n, objects.UpdateInProgress, allowResizedNodeGroupStatus()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		r := asRefusal(err)
		switch {
		case r != nil && !r.nodegroup:
			return nil, h.refused(ctx, log, ActionUpdate, "Upgrading", c, r)
		case r != nil:
			err = exception.NotSupported(fmt.Sprintf("Upgrading a nodegroup when status is \"%s\"", r.status))
			log.Warn("nodegroup refused the upgrade", "error", err)
			h.notify.ClusterEvent(ctx, ActionUpdate, OutcomeFailure, c)
			return nil, err
		}
		log.Error("cluster upgrade failed", "error", err)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(asIs, oldStatus, oldReason))
	req := drivers.UpgradeRequest{ClusterRequest: clusterRequest(asIs, current, ngs, asIsNGs...), NewTemplate: objects.Clone(ct),
		NodeGroup: objects.Clone(asIsNGs[0]), MaxBatchSize: maxBatchSize}
	res, err := h.callDriver(ctx, log, "upgrade_cluster", func(ctx context.Context) (drivers.Result, error) {
		return d.UpgradeCluster(ctx, req)
	})
	if err != nil {
		// The driver did not take the upgrade: the template, kube_tag,
		// versions and images go back, under the claim.
		back := objects.Clone(upgraded)
		back.ClusterTemplateID, back.Labels = c.ClusterTemplateID, c.Labels
		var ngBack []*objects.NodeGroup
		for i, n := range ngUp {
			nb := objects.Clone(n)
			nb.ImageID, nb.Version, nb.Labels = moved[i].ImageID, moved[i].Version, moved[i].Labels
			ngBack = append(ngBack, nb)
		}
		if isNotSupported(err) {
			log.Warn("driver does not support the upgrade", "error", err)
			back.Status, back.StatusReason = oldStatus, oldReason
			for i, nb := range ngBack {
				nb.Status, nb.StatusReason = moved[i].Status, moved[i].StatusReason
			}
		} else {
			log.Error("cluster upgrade failed", "error", err)
			back.Status, back.StatusReason = objects.UpdateFailed, objects.Str(err.Error())
			for _, nb := range ngBack {
				nb.Status, nb.StatusReason = objects.UpdateFailed, objects.Str(err.Error())
			}
		}
		claimed := objects.Clone(upgraded)
		claimedNGs := make([]*objects.NodeGroup, len(ngUp))
		for i, n := range ngUp {
			claimedNGs[i] = objects.Clone(n)
		}
		_ = h.persist(ctx, log, back.Status, func(ctx context.Context, b *batch) error {
			if err := b.cluster(ctx, back, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()}); err != nil {
				return err
			}
			for i, nb := range ngBack {
				if err := b.nodegroup(ctx, nb, db.NodeGroupCond{Read: claimedNGs[i], Fields: db.NodeGroupGuardFields()}); err != nil {
					return err
				}
			}
			return nil
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, back)
		return nil, err
	}
	*c = *upgraded
	return h.finish(ctx, log, c, res, objects.UpdateInProgress)
}

// recordUpgrade returns copies of c and moved with the upgrade to ct
// through ng recorded: through a default nodegroup the cluster's
// cluster_template_id and kube_tag label; on every nodegroup moved, the new
// kube_tag as version (and label, where it has one) and the template's
// image.
func recordUpgrade(c *objects.Cluster, moved []*objects.NodeGroup, ng *objects.NodeGroup, ct *objects.ClusterTemplate) (*objects.Cluster, []*objects.NodeGroup) {
	tag, hasTag := ct.Labels["kube_tag"]
	upgraded := objects.Clone(c)
	if ng.IsDefault {
		upgraded.ClusterTemplateID = ct.UUID
		if hasTag {
			labels := maps.Clone(c.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["kube_tag"] = tag
			upgraded.Labels = labels
		}
	}
	var ngUp []*objects.NodeGroup
	for _, n := range moved {
		nu := objects.Clone(n)
		if ct.ImageID != nil {
			nu.ImageID = ct.ImageID
		}
		if hasTag {
			nu.Version = objects.Str(tag)
			if _, ok := nu.Labels["kube_tag"]; ok {
				labels := maps.Clone(nu.Labels)
				labels["kube_tag"] = tag
				nu.Labels = labels
			}
		}
		ngUp = append(ngUp, nu)
	}
	return upgraded, ngUp
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isNotSupported reports whether err is Magnum's NotSupported (or a
// subclass).
func isNotSupported(err error) bool {
	return errors.Is(err, exception.ClassNotSupported.New(nil))
}
