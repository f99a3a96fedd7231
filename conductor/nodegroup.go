package conductor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Nodegroup operations send no notifications (nodegroup_conductor.py).

// ngGuard ports the allowed_operation decorator: a nodegroup whose status
// is set must be in ALLOWED_NODEGROUP_STATES. Unlike Magnum, the message
// names the nodegroup's status.
func ngGuard(op string, ng *objects.NodeGroup) error {
	if ng.Status != "" && !contains(allowedNodeGroupStates(), ng.Status) {
		return exception.NotSupported(fmt.Sprintf("%s when nodegroup status is \"%s\"", op, ng.Status))
	}
	return nil
}

// ngOp holds what the three nodegroup handlers share.
type ngOp struct {
	h         *Handlers
	name      string
	log       *slog.Logger
	c         *objects.Cluster
	ng        *objects.NodeGroup
	uuid      string
	oldStatus string
	oldReason *string
}

func (h *Handlers) startNodeGroupOp(ctx context.Context, op string, c *objects.Cluster, ng *objects.NodeGroup, guard bool) (*ngOp, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	if ng == nil {
		return nil, exception.InvalidParameterValue("nodegroup is required")
	}
	uuid := *c.UUID
	log := h.logger(ctx, op, uuid).With("nodegroup_uuid", ng.UUID, "nodegroup_name", ng.Name)
	if ng.ClusterID == "" {
		ng.ClusterID = uuid
	}
	if ng.ClusterID != uuid {
		err := exception.InvalidParameterValue(fmt.Sprintf("nodegroup %s does not belong to cluster %s", ng.UUID, uuid))
		log.Error("operation refused", "error", err)
		return nil, err
	}
	if guard {
		if err := ngGuard(op, ng); err != nil {
			log.Warn("operation refused", "error", err)
			return nil, err
		}
	}
	o := &ngOp{h: h, name: op, log: log, c: c, ng: ng, uuid: uuid, oldStatus: c.Status, oldReason: c.StatusReason}
	if err := h.claimCluster(ctx, c, objects.UpdateInProgress, allowNodeGroupOpClusterStatus(), func(cur string) error {
		return exception.NotSupported(fmt.Sprintf("%s when cluster status is \"%s\"", op, cur))
	}); err != nil {
		log.Warn("operation refused", "error", err)
		return nil, err
	}
	return o, nil
}

// abort puts the cluster back when the operation stopped before touching
// the nodegroup.
func (o *ngOp) abort(ctx context.Context, err error) error {
	cctx, cancel := o.h.cleanupCtx(ctx)
	defer cancel()
	o.log.Error("nodegroup operation failed", "error", err)
	o.h.revertCluster(cctx, o.log, o.c, objects.UpdateInProgress, o.oldStatus, o.oldReason)
	return err
}

// fail records a failure after the nodegroup was claimed: nodegroup
// failedStatus with the reason, cluster UPDATE_FAILED.
func (o *ngOp) fail(ctx context.Context, err error, claimed, failedStatus string) error {
	cctx, cancel := o.h.cleanupCtx(ctx)
	defer cancel()
	o.log.Error("nodegroup operation failed", "error", err)
	fng := o.h.freshNodeGroup(cctx, o.log, o.ng, o.uuid, o.ng.UUID, err)
	fng.Status = failedStatus
	fng.StatusReason = objects.Str(err.Error())
	o.h.finishNodeGroup(cctx, o.log, fng, claimed)
	fc := o.h.freshCluster(cctx, o.log, o.c, o.uuid, err)
	fc.Status = objects.UpdateFailed
	fc.StatusReason = objects.Str(err.Error())
	o.h.finishCluster(cctx, o.log, fc, objects.UpdateInProgress)
	return err
}

// runDriver loads the cluster's driver and runs one of its nodegroup methods.
func (o *ngOp) runDriver(ctx context.Context, method string, fn func(ctx context.Context, d drivers.Driver) error) error {
	d, _, err := o.h.driverFor(ctx, o.c)
	if err != nil {
		return err
	}
	return o.h.callDriver(ctx, o.log, method, func(ctx context.Context) error { return fn(ctx, d) })
}

// NodeGroupCreate ports nodegroup_conductor.Handler.nodegroup_create:
// cluster UPDATE_IN_PROGRESS, insert the nodegroup CREATE_IN_PROGRESS and
// call driver.create_nodegroup. On failure the nodegroup is CREATE_FAILED
// with the reason and the cluster UPDATE_FAILED.
func (h *Handlers) NodeGroupCreate(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) (*objects.NodeGroup, error) {
	o, err := h.startNodeGroupOp(ctx, "nodegroup_create", c, ng, true)
	if err != nil {
		return nil, err
	}
	ng.Status = objects.CreateInProgress
	if ng.ProjectID == "" {
		ng.ProjectID = objects.Deref(c.ProjectID)
	}
	if err := h.store.CreateNodeGroup(ctx, ng); err != nil {
		return nil, o.abort(ctx, err)
	}
	o.log = o.log.With("nodegroup_uuid", ng.UUID)
	if err := o.runDriver(ctx, "create_nodegroup", func(ctx context.Context, d drivers.Driver) error {
		return d.CreateNodeGroup(ctx, c, ng)
	}); err != nil {
		return nil, o.fail(ctx, err, objects.CreateInProgress, objects.CreateFailed)
	}
	if err := h.store.SaveNodeGroup(ctx, ng); err != nil {
		return nil, o.fail(ctx, err, objects.CreateInProgress, objects.CreateFailed)
	}
	return ng, nil
}

// NodeGroupUpdate ports nodegroup_conductor.Handler.nodegroup_update:
// cluster and nodegroup UPDATE_IN_PROGRESS (the nodegroup, with its patched
// fields, is saved before the driver runs), then driver.update_nodegroup.
// On failure the nodegroup is UPDATE_FAILED with the reason and the cluster
// UPDATE_FAILED.
func (h *Handlers) NodeGroupUpdate(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) (*objects.NodeGroup, error) {
	if err := requireNodeGroup(ng); err != nil {
		return nil, err
	}
	o, err := h.startNodeGroupOp(ctx, "nodegroup_update", c, ng, true)
	if err != nil {
		return nil, err
	}
	if err := h.claimNodeGroup(ctx, ng, objects.UpdateInProgress, allowedNodeGroupStates(), func(cur string) error {
		return exception.NotSupported(fmt.Sprintf("nodegroup_update when nodegroup status is \"%s\"", cur))
	}); err != nil {
		return nil, o.abort(ctx, err)
	}
	if err := o.runDriver(ctx, "update_nodegroup", func(ctx context.Context, d drivers.Driver) error {
		return d.UpdateNodeGroup(ctx, c, ng)
	}); err != nil {
		return nil, o.fail(ctx, err, objects.UpdateInProgress, objects.UpdateFailed)
	}
	if err := h.store.SaveNodeGroup(ctx, ng); err != nil {
		return nil, o.fail(ctx, err, objects.UpdateInProgress, objects.UpdateFailed)
	}
	return ng, nil
}

// NodeGroupDelete ports nodegroup_conductor.Handler.nodegroup_delete:
// cluster UPDATE_IN_PROGRESS, nodegroup DELETE_IN_PROGRESS (saved, unlike
// Magnum), then driver.delete_nodegroup; the periodic sync removes the
// row. On failure the nodegroup is DELETE_FAILED with the reason and the
// cluster UPDATE_FAILED.
func (h *Handlers) NodeGroupDelete(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	if err := requireNodeGroup(ng); err != nil {
		return err
	}
	o, err := h.startNodeGroupOp(ctx, "nodegroup_delete", c, ng, false)
	if err != nil {
		return err
	}
	if err := h.claimNodeGroup(ctx, ng, objects.DeleteInProgress, allowNodeGroupDeleteStatus(), func(cur string) error {
		return exception.NotSupported(fmt.Sprintf("nodegroup_delete when nodegroup status is \"%s\"", cur))
	}); err != nil {
		return o.abort(ctx, err)
	}
	if err := o.runDriver(ctx, "delete_nodegroup", func(ctx context.Context, d drivers.Driver) error {
		return d.DeleteNodeGroup(ctx, c, ng)
	}); err != nil {
		return o.fail(ctx, err, objects.DeleteInProgress, objects.DeleteFailed)
	}
	return nil
}
