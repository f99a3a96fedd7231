package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// ClusterCreate ports cluster_conductor.Handler.cluster_create: insert the
// cluster (CREATE_IN_PROGRESS) and its default master and worker
// nodegroups, generate the certificates, notify create/pending and start
// the driver. Any failure after the insert ends in CREATE_FAILED with the
// reason and a create/failure notification; a duplicate cluster changes
// nothing.
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
	if err := h.store.CreateCluster(ctx, c); err != nil {
		log.Error("cannot insert cluster", "error", err)
		return nil, err
	}
	uuid := objects.Deref(c.UUID)
	log = h.logger(ctx, "cluster_create", uuid)
	log.Info("creating cluster", "master_count", masterCount, "node_count", nodeCount)

	// The certificates' references, once generated: a driver call given
	// up on leaves c to the driver, and the row reloaded in its place
	// does not hold them yet. Without them on the failed row, the
	// cluster's deletion could not find its certificates.
	var refs certRefs
	fail := func(err error) (*objects.Cluster, error) {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		fc := h.freshCluster(cctx, log, c, uuid, err)
		if fc != c && len(refs.list()) > 0 {
			refs.setOn(fc)
		}
		fc.Status = objects.CreateFailed
		fc.StatusReason = objects.Str(err.Error())
		log.Error("cluster creation failed", "error", err)
		h.finishCluster(cctx, log, fc, objects.CreateInProgress)
		h.notify.ClusterEvent(cctx, ActionCreate, OutcomeFailure, fc)
		return nil, err
	}

	ct, err := h.store.GetClusterTemplateByUUID(ctx, objects.Deref(c.ClusterTemplateID))
	if err != nil {
		return fail(err)
	}
	master := defaultNodeGroup(c, ct, masterCount, true)
	if err := h.store.CreateNodeGroup(ctx, master); err != nil {
		return fail(err)
	}
	worker := defaultNodeGroup(c, ct, nodeCount, false)
	if err := h.store.CreateNodeGroup(ctx, worker); err != nil {
		return fail(err)
	}
	if err := h.certs.GenerateForCluster(ctx, c); err != nil {
		return fail(err)
	}
	refs = refsOf(c)
	h.notify.ClusterEvent(ctx, ActionCreate, OutcomePending, c)
	d, err := h.drivers.ForTemplate(ct)
	if err != nil {
		return fail(err)
	}
	timeout := 0
	if createTimeout != nil {
		timeout = *createTimeout
	}
	if err := h.callDriver(ctx, log, "create_cluster", func(ctx context.Context) error {
		return d.CreateCluster(ctx, c, timeout)
	}); err != nil {
		return fail(err)
	}
	if err := h.store.SaveCluster(ctx, c); err != nil {
		return fail(err)
	}
	for _, ng := range []*objects.NodeGroup{master, worker} {
		ng.StackID = c.StackID
		if err := h.store.SaveNodeGroup(ctx, ng); err != nil {
			// The next sync_cluster_status copies it (periodic.healStackID).
			log.Error("cannot copy stack_id to nodegroup; the status sync will", "nodegroup_uuid", ng.UUID, "error", err)
		}
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
	// Python sets node_count explicitly, so a 0 is stored as 0 rather than
	// left unset (which the store would write as NULL and read back as 1).
	objects.MarkChanged(ng, "node_count", "min_node_count")
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
func (h *Handlers) defaultWorker(ctx context.Context, clusterUUID string) (*objects.NodeGroup, error) {
	ngs, err := h.store.ListNodeGroups(ctx, clusterUUID, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		return nil, err
	}
	for _, ng := range ngs {
		if ng.IsDefault && ng.Role != objects.RoleMaster {
			return ng, nil
		}
	}
	return nil, exception.NodeGroupNotFound("default-worker")
}

// refuse sends the failure notification of a guard refusal and returns
// NotSupported('<verb> a cluster when status is "<S>"').
func (h *Handlers) refuse(ctx context.Context, log *slog.Logger, action, verb string, c *objects.Cluster, status string) error {
	h.notify.ClusterEvent(ctx, action, OutcomeFailure, c)
	err := exception.NotSupported(fmt.Sprintf("%s a cluster when status is \"%s\"", verb, status))
	log.Warn("operation refused", "status", status, "error", err)
	return err
}

// ClusterUpdate ports cluster_conductor.Handler.cluster_update: resize the
// default worker nodegroup through driver.update_cluster, or store only the
// health fields. It returns nil (None) when nothing changed.
func (h *Handlers) ClusterUpdate(ctx context.Context, c *objects.Cluster, nodeCount int, healthStatus string,
	healthStatusReason map[string]string, rollback bool) (*objects.Cluster, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	uuid := *c.UUID
	log := h.logger(ctx, "cluster_update", uuid)
	if !contains(allowUpdateStatus(), c.Status) {
		return nil, h.refuse(ctx, log, ActionUpdate, "Updating", c, c.Status)
	}
	worker, err := h.defaultWorker(ctx, uuid)
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
	d, sm, err := h.driverAndScaleManager(ctx, log, c)
	if err != nil {
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	if err := h.claimCluster(ctx, c, objects.UpdateInProgress, allowUpdateStatus(), func(cur string) error {
		return h.refuse(ctx, log, ActionUpdate, "Updating", c, cur)
	}); err != nil {
		return nil, err
	}
	oldCount := worker.NodeCount
	fail := func(err error) (*objects.Cluster, error) {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		log.Error("cluster update failed", "error", err)
		fc := h.freshCluster(cctx, log, c, uuid, err)
		fc.Status = objects.UpdateFailed
		fc.StatusReason = objects.Str(err.Error())
		h.finishCluster(cctx, log, fc, objects.UpdateInProgress)
		worker.NodeCount = oldCount
		if err := h.store.SaveNodeGroup(cctx, worker); err != nil {
			log.Error("cannot restore the worker node count", "nodegroup_uuid", worker.UUID, "error", err)
		}
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, fc)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason))
	worker.NodeCount = int64(nodeCount)
	if err := h.store.SaveNodeGroup(ctx, worker); err != nil {
		return fail(err)
	}
	if err := h.callDriver(ctx, log, "update_cluster", func(ctx context.Context) error {
		return d.UpdateCluster(ctx, c, sm, rollback)
	}); err != nil {
		return fail(err)
	}
	c.Status = objects.UpdateInProgress
	c.StatusReason = nil
	if err := h.store.SaveCluster(ctx, c); err != nil {
		log.Error("cannot save cluster", "error", err)
		return nil, err
	}
	return c, nil
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
	d, _, err := h.driverFor(ctx, c)
	if err != nil {
		log.Error("cannot load the cluster's driver", "error", err)
		return err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	if err := h.claimCluster(ctx, c, objects.DeleteInProgress, allowDeleteStatus(), func(cur string) error {
		return h.refuse(ctx, log, ActionDelete, "Deleting", c, cur)
	}); err != nil {
		return err
	}
	before := snapshot(c, oldStatus, oldReason)
	h.notify.ClusterEvent(ctx, ActionDelete, OutcomePending, before)
	err = h.callDriver(ctx, log, "delete_cluster", func(ctx context.Context) error {
		if p, ok := d.(drivers.PreDeleter); ok {
			if err := p.PreDeleteCluster(ctx, c); err != nil {
				return err
			}
		}
		return d.DeleteCluster(ctx, c)
	})
	if err != nil {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		log.Error("cluster deletion failed", "error", err)
		if !abandoned(err) {
			before = snapshot(c, oldStatus, oldReason)
		}
		h.notify.ClusterEvent(cctx, ActionDelete, OutcomeFailure, before)
		fc := h.freshCluster(cctx, log, c, uuid, err)
		fc.Status = objects.DeleteFailed
		fc.StatusReason = objects.Str(err.Error())
		h.finishCluster(cctx, log, fc, objects.DeleteInProgress)
		return err
	}
	c.Status = objects.DeleteInProgress
	c.StatusReason = nil
	if err := h.store.SaveCluster(ctx, c); err != nil {
		log.Error("cannot save cluster", "error", err)
		return err
	}
	return nil
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
	d, sm, err := h.driverAndScaleManager(ctx, log, c)
	if err != nil {
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	oldCount := ng.NodeCount
	if err := h.claimCluster(ctx, c, objects.UpdateInProgress, allowResizeStatus(), func(cur string) error {
		return h.refuse(ctx, log, ActionUpdate, "Resizing", c, cur)
	}); err != nil {
		return nil, err
	}
	ng.NodeCount = int64(nodeCount)
	if err := h.claimNodeGroup(ctx, ng, objects.UpdateInProgress, allowResizedNodeGroupStatus(), func(cur string) error {
		return exception.NotSupported(fmt.Sprintf("Resizing a nodegroup when status is \"%s\"", cur))
	}); err != nil {
		ng.NodeCount = oldCount
		log.Warn("nodegroup refused the resize", "error", err)
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.revertCluster(cctx, log, c, objects.UpdateInProgress, oldStatus, oldReason)
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, c)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason))
	err = h.callDriver(ctx, log, "resize_cluster", func(ctx context.Context) error {
		return d.ResizeCluster(ctx, c, sm, nodeCount, nodesToRemove, ng)
	})
	if err != nil {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		log.Error("cluster resize failed", "error", err)
		fc := h.freshCluster(cctx, log, c, uuid, err)
		fc.Status = objects.UpdateFailed
		fc.StatusReason = objects.Str(err.Error())
		h.finishCluster(cctx, log, fc, objects.UpdateInProgress)
		fng := h.freshNodeGroup(cctx, log, ng, uuid, ng.UUID, err)
		fng.NodeCount = oldCount
		fng.Status = objects.UpdateFailed
		fng.StatusReason = objects.Str(err.Error())
		h.finishNodeGroup(cctx, log, fng, objects.UpdateInProgress)
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, fc)
		return nil, err
	}
	c.Status = objects.UpdateInProgress
	c.StatusReason = nil
	if err := h.store.SaveCluster(ctx, c); err != nil {
		log.Error("cannot save cluster", "error", err)
		return nil, err
	}
	return c, nil
}

// revertCluster puts back the status a claim replaced, when the operation
// stops before it changed anything else.
func (h *Handlers) revertCluster(ctx context.Context, log *slog.Logger, c *objects.Cluster, claimed, status string, reason *string) {
	c.Status = status
	c.StatusReason = reason
	h.finishCluster(ctx, log, c, claimed)
}

// ClusterUpgrade ports cluster_conductor.Handler.cluster_upgrade: call
// driver.upgrade_cluster and leave the cluster and nodegroup in
// UPDATE_IN_PROGRESS. NotSupported from the driver is returned untouched
// and no status changes (after an update/failure notification); any other
// error sets UPDATE_FAILED on both.
func (h *Handlers) ClusterUpgrade(ctx context.Context, c *objects.Cluster, ct *objects.ClusterTemplate, maxBatchSize int,
	ng *objects.NodeGroup, rollback bool) (*objects.Cluster, error) {
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
	// Magnum's cluster_upgrade asks for no scale manager: the driver gets
	// none.
	d, _, err := h.driverFor(ctx, c)
	if err != nil {
		log.Error("cannot load the cluster's driver", "error", err)
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	oldNGStatus, oldNGReason := ng.Status, ng.StatusReason
	if err := h.claimCluster(ctx, c, objects.UpdateInProgress, allowUpdateStatus(), func(cur string) error {
		return h.refuse(ctx, log, ActionUpdate, "Upgrading", c, cur)
	}); err != nil {
		return nil, err
	}
	if err := h.claimNodeGroup(ctx, ng, objects.UpdateInProgress, allowResizedNodeGroupStatus(), func(cur string) error {
		return exception.NotSupported(fmt.Sprintf("Upgrading a nodegroup when status is \"%s\"", cur))
	}); err != nil {
		ng.Status, ng.StatusReason = oldNGStatus, oldNGReason
		log.Warn("nodegroup refused the upgrade", "error", err)
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.revertCluster(cctx, log, c, objects.UpdateInProgress, oldStatus, oldReason)
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, c)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason))
	err = h.callDriver(ctx, log, "upgrade_cluster", func(ctx context.Context) error {
		return d.UpgradeCluster(ctx, c, ct, maxBatchSize, ng, nil, rollback)
	})
	if err != nil {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		fc := h.freshCluster(cctx, log, c, uuid, err)
		fng := h.freshNodeGroup(cctx, log, ng, uuid, ng.UUID, err)
		if isNotSupported(err) {
			log.Warn("driver does not support the upgrade", "error", err)
			fng.Status, fng.StatusReason = oldNGStatus, oldNGReason
			h.finishNodeGroup(cctx, log, fng, objects.UpdateInProgress)
			h.revertCluster(cctx, log, fc, objects.UpdateInProgress, oldStatus, oldReason)
			h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, fc)
			return nil, err
		}
		log.Error("cluster upgrade failed", "error", err)
		fc.Status = objects.UpdateFailed
		fc.StatusReason = objects.Str(err.Error())
		h.finishCluster(cctx, log, fc, objects.UpdateInProgress)
		fng.Status = objects.UpdateFailed
		fng.StatusReason = objects.Str(err.Error())
		h.finishNodeGroup(cctx, log, fng, objects.UpdateInProgress)
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, fc)
		return nil, err
	}
	ng.Status = objects.UpdateInProgress
	c.Status = objects.UpdateInProgress
	c.StatusReason = nil
	if err := h.store.SaveNodeGroup(ctx, ng); err != nil {
		log.Error("cannot save nodegroup", "error", err)
		return nil, err
	}
	if err := h.store.SaveCluster(ctx, c); err != nil {
		log.Error("cannot save cluster", "error", err)
		return nil, err
	}
	return c, nil
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
	return errors.Is(err, exception.New("NotSupported", nil))
}
