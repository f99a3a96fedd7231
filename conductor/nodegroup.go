package conductor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
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
	h    *Handlers
	name string
	log  *slog.Logger
	c    *objects.Cluster
	ng   *objects.NodeGroup
	uuid string
	d    drivers.Driver
	ct   *objects.ClusterTemplate
	ngs  []*objects.NodeGroup
}

// startNodeGroupOp checks the arguments and loads the driver and the
// cluster's nodegroups.
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
	d, ct, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return nil, err
	}
	return &ngOp{h: h, name: op, log: log, c: c, ng: ng, uuid: uuid, d: d, ct: ct, ngs: ngs}, nil
}

// claim moves the cluster to UPDATE_IN_PROGRESS and, in the same
// transaction, does the nodegroup's part (insert or claim). A lost claim is
// NotSupported naming the status that refused it.
func (o *ngOp) claim(ctx context.Context, ngPart func(ctx context.Context, b *batch) error) error {
	err := o.h.inTx(ctx, func(ctx context.Context, b *batch) error {
		if err := o.h.claimCluster(ctx, b, o.c, objects.UpdateInProgress, allowNodeGroupOpClusterStatus()); err != nil {
			return err
		}
		return ngPart(ctx, b)
	})
	if r := asRefusal(err); r != nil {
		what := "cluster"
		if r.nodegroup {
			what = "nodegroup"
		}
		err = exception.NotSupported(fmt.Sprintf("%s when %s status is \"%s\"", o.name, what, r.status))
	}
	if err != nil {
		o.log.Warn("operation refused", "error", err)
	}
	return err
}

// fail records a failed driver call: nodegroup failedStatus with the
// reason, cluster UPDATE_FAILED, both only as the operation claimed them.
func (o *ngOp) fail(ctx context.Context, err error, failedStatus string) error {
	o.log.Error("nodegroup operation failed", "error", err)
	claimed, claimedNG := objects.Clone(o.c), objects.Clone(o.ng)
	failed, failedNG := objects.Clone(o.c), objects.Clone(o.ng)
	failed.Status, failed.StatusReason = objects.UpdateFailed, objects.Str(err.Error())
	failedNG.Status, failedNG.StatusReason = failedStatus, objects.Str(err.Error())
	_ = o.h.persist(ctx, o.log, failedStatus, func(ctx context.Context, b *batch) error {
		if err := b.nodegroup(ctx, failedNG, db.NodeGroupCond{Read: claimedNG, Fields: db.NodeGroupGuardFields()}); err != nil {
			return err
		}
		return b.cluster(ctx, failed, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()})
	})
	return err
}

// finish records a successful driver call: the Result's stack_id on the
// nodegroup, then its observation.
func (o *ngOp) finish(ctx context.Context, res drivers.Result) error {
	if res.StackID != "" && res.StackID != objects.Deref(o.ng.StackID) {
		claimedNG := objects.Clone(o.ng)
		next := objects.Clone(o.ng)
		next.StackID = objects.Str(res.StackID)
		if err := o.h.persist(ctx, o.log, "stack_id", func(ctx context.Context, b *batch) error {
			if err := b.nodegroup(ctx, next, db.NodeGroupCond{Read: claimedNG, Fields: db.NodeGroupGuardFields()}); err != nil {
				return err
			}
			b.done = append(b.done, func() { *o.ng = *next })
			return nil
		}); err != nil {
			return err
		}
	}
	o.h.judge(ctx, o.log, o.uuid, res.Observation)
	return nil
}

// NodeGroupCreate ports nodegroup_conductor.Handler.nodegroup_create:
// cluster UPDATE_IN_PROGRESS and the nodegroup inserted in
// CREATE_IN_PROGRESS (one transaction), then driver.create_nodegroup. On
// failure the nodegroup is CREATE_FAILED with the reason and the cluster
// UPDATE_FAILED.
func (h *Handlers) NodeGroupCreate(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) (*objects.NodeGroup, error) {
	o, err := h.startNodeGroupOp(ctx, "nodegroup_create", c, ng, true)
	if err != nil {
		return nil, err
	}
	ng.Status = objects.CreateInProgress
	if ng.ProjectID == "" {
		ng.ProjectID = objects.Deref(c.ProjectID)
	}
	if err := o.claim(ctx, func(ctx context.Context, b *batch) error { return b.createNodeGroup(ctx, ng) }); err != nil {
		return nil, err
	}
	o.log = o.log.With("nodegroup_uuid", ng.UUID)
	req := drivers.NodeGroupRequest{ClusterRequest: clusterRequest(c, o.ct, o.ngs, ng), NodeGroup: objects.Clone(ng)}
	res, err := h.callDriver(ctx, o.log, "create_nodegroup", func(ctx context.Context) (drivers.Result, error) {
		return o.d.CreateNodeGroup(ctx, req)
	})
	if err != nil {
		return nil, o.fail(ctx, err, objects.CreateFailed)
	}
	if err := o.finish(ctx, res); err != nil {
		return nil, err
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
	if err := o.claim(ctx, func(ctx context.Context, b *batch) error {
		return h.claimNodeGroup(ctx, b, ng, objects.UpdateInProgress, allowedNodeGroupStates())
	}); err != nil {
		return nil, err
	}
	req := drivers.NodeGroupRequest{ClusterRequest: clusterRequest(c, o.ct, o.ngs, ng), NodeGroup: objects.Clone(ng)}
	res, err := h.callDriver(ctx, o.log, "update_nodegroup", func(ctx context.Context) (drivers.Result, error) {
		return o.d.UpdateNodeGroup(ctx, req)
	})
	if err != nil {
		return nil, o.fail(ctx, err, objects.UpdateFailed)
	}
	if err := o.finish(ctx, res); err != nil {
		return nil, err
	}
	return ng, nil
}

// NodeGroupDelete ports nodegroup_conductor.Handler.nodegroup_delete:
// cluster UPDATE_IN_PROGRESS, nodegroup DELETE_IN_PROGRESS (saved, unlike
// Magnum), then driver.delete_nodegroup; the periodic sync removes the
// row once the driver reports it gone. On failure the nodegroup is
// DELETE_FAILED with the reason and the cluster UPDATE_FAILED.
func (h *Handlers) NodeGroupDelete(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	if err := requireNodeGroup(ng); err != nil {
		return err
	}
	o, err := h.startNodeGroupOp(ctx, "nodegroup_delete", c, ng, false)
	if err != nil {
		return err
	}
	if err := o.claim(ctx, func(ctx context.Context, b *batch) error {
		return h.claimNodeGroup(ctx, b, ng, objects.DeleteInProgress, allowNodeGroupDeleteStatus())
	}); err != nil {
		return err
	}
	req := drivers.NodeGroupRequest{ClusterRequest: clusterRequest(c, o.ct, o.ngs, ng), NodeGroup: objects.Clone(ng)}
	res, err := h.callDriver(ctx, o.log, "delete_nodegroup", func(ctx context.Context) (drivers.Result, error) {
		return o.d.DeleteNodeGroup(ctx, req)
	})
	if err != nil {
		return o.fail(ctx, err, objects.DeleteFailed)
	}
	return o.finish(ctx, res)
}
