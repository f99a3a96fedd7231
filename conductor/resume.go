package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/conductor/clusterstate"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// Resume resumes an operation of cluster c that was claimed and never
// reached its driver (a conductor killed between its claim and the driver
// call, or one that lost its database there), as the status sync decided
// on c and ngs as it read them (statusmachine.Resume).
//
// It first records the attempt (r.Note as the status_reason) in one
// transaction that locks the cluster row, only while the cluster and its
// nodegroups are still as read and its status_reason too: of two
// conductors deciding the same, one resumes and the other gets an error
// matching clusterstate.ErrStale; an operation that started meanwhile wins
// the same way. Then, for a create, it generates the certificates when
// their references are missing (recorded conditionally: a set another
// conductor recorded first is kept and this one deleted), and makes the
// driver calls in order, with requests built from the rows as they are now:
// every operation is idempotent (package drivers), so a call the back end
// already had is harmless. Results are recorded as the handlers record
// them: stack_ids, the observation a driver returns, and on a driver error
// the operation's failure with its notification. A driver that is not
// ready (drivers.ErrNotReady) fails nothing: the note says so, and the next
// attempt comes after the bound; nor does ctx ending (the conductor stops).
// Each driver call is bounded by Deps.DriverTimeout, not by ctx's deadline
// alone: give it a context that lives as long as the conductor.
func (h *Handlers) Resume(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, r sm.Resume) error {
	uuid := objects.Deref(c.UUID)
	log := h.log.With("method", "resume", "cluster_uuid", uuid, "status", c.Status, "attempt", r.Attempt,
		"attempts", r.Of)
	claimed, rows, err := h.claimResume(ctx, c, ngs, r.Note)
	if err != nil {
		if errors.Is(err, clusterstate.ErrStale) {
			log.Info("an interrupted operation changed before it could be resumed (resumed by another conductor, " +
				"or another operation started); left to it")
		}
		return err
	}
	log.Warn("resuming an operation interrupted before its driver call", "calls", r.Calls)
	rs := &resumption{h: h, log: log, c: claimed, ngs: rows}
	d, ct, err := h.driverFor(ctx, claimed)
	if err != nil {
		return rs.fail(ctx, r.Calls[0], err)
	}
	rs.d, rs.ct = d, ct
	var last *drivers.Observation
	for _, call := range r.Calls {
		res, err := rs.call(ctx, call)
		if err != nil {
			if errors.Is(err, drivers.ErrNotReady) {
				return rs.notReady(ctx, r.Note, err)
			}
			if errors.Is(err, clusterstate.ErrStale) {
				log.Info("the cluster changed during the resumption; left to what changed it", "error", err)
				return err
			}
			if ctx.Err() != nil {
				// The conductor stops: the next attempt comes after the
				// bound, from this conductor or another.
				log.Warn("the conductor stopped during the resumption; it is resumed again later", "error", err)
				return err
			}
			return rs.fail(ctx, call, err)
		}
		if err := rs.record(ctx, call, res); err != nil {
			return err
		}
		if res.Observation != nil {
			last = res.Observation
		}
	}
	log.Info("interrupted operation resumed: its driver has it", "calls", r.Calls)
	h.judge(ctx, log, uuid, last)
	return nil
}

// claimResume records note on the cluster, while it and its nodegroups are
// as read (status_reason included), and returns the rows as claimed.
func (h *Handlers) claimResume(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, note string) (*objects.Cluster, []*objects.NodeGroup, error) {
	uuid := objects.Deref(c.UUID)
	var claimed *objects.Cluster
	var rows []*objects.NodeGroup
	err := h.store.InTx(ctx, func(ctx context.Context) error {
		now, err := h.store.LockCluster(ctx, uuid)
		if err != nil {
			return err
		}
		if !db.ClusterUnchanged(c, now) || objects.Deref(c.StatusReason) != objects.Deref(now.StatusReason) {
			return clusterstate.ErrStale
		}
		current, err := h.store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
		if err != nil {
			return err
		}
		if !sameNodeGroups(ngs, current) {
			return clusterstate.ErrStale
		}
		next := objects.Clone(now)
		next.StatusReason = objects.Str(note)
		fields := append(db.ClusterGuardFields(), "status_reason")
		if err := h.store.SaveClusterIf(ctx, next, db.ClusterCond{Status: []string{c.Status}, Read: now, Fields: fields}); err != nil {
			return err
		}
		claimed, rows = next, current
		return nil
	})
	switch {
	case err == nil:
		return claimed, rows, nil
	case errors.Is(err, db.ErrStatusChanged), errors.Is(err, exception.ClusterNotFound("")):
		return nil, nil, clusterstate.ErrStale
	}
	return nil, nil, err
}

// sameNodeGroups reports whether now holds the nodegroups read, with their
// guarded fields unchanged.
func sameNodeGroups(read, now []*objects.NodeGroup) bool {
	if len(read) != len(now) {
		return false
	}
	for _, n := range now {
		r := nodeGroupIn(read, n.UUID)
		if r == nil || !db.NodeGroupUnchanged(r, n) {
			return false
		}
	}
	return true
}

func nodeGroupIn(ngs []*objects.NodeGroup, uuid string) *objects.NodeGroup {
	for _, ng := range ngs {
		if ng.UUID == uuid {
			return ng
		}
	}
	return nil
}

// resumption is one resumption under way.
type resumption struct {
	h   *Handlers
	log *slog.Logger
	c   *objects.Cluster     // the cluster as claimed (with the note)
	ngs []*objects.NodeGroup // its nodegroups as claimed
	d   drivers.Driver
	ct  *objects.ClusterTemplate
	// rotated is a resumed CA rotation's cluster with the new references
	// the driver accepted, and oldCerts the references they replace.
	rotated  *objects.Cluster
	oldCerts []string
}

// call makes one driver call of the resumption.
func (rs *resumption) call(ctx context.Context, call sm.Call) (drivers.Result, error) {
	h, c, ngs := rs.h, rs.c, rs.ngs
	ng := nodeGroupIn(ngs, call.NodeGroup)
	if call.NodeGroup != "" && ng == nil {
		return drivers.Result{}, fmt.Errorf("nodegroup %s is gone", call.NodeGroup)
	}
	op := string(call.Op)
	drive := func(fn func(ctx context.Context) (drivers.Result, error)) (drivers.Result, error) {
		return h.callDriver(ctx, rs.log, op, fn)
	}
	switch call.Op {
	case sm.OpCreateCluster:
		if err := rs.certificates(ctx); err != nil {
			return drivers.Result{}, err
		}
		req := drivers.CreateClusterRequest{ClusterRequest: clusterRequest(rs.c, rs.ct, ngs)}
		if n := c.CreateTimeout; n != nil && *n > 0 {
			req.Timeout = minutes(*n)
		}
		return drive(func(ctx context.Context) (drivers.Result, error) { return rs.d.CreateCluster(ctx, req) })
	case sm.OpDeleteCluster:
		req := clusterRequest(c, rs.ct, ngs)
		return drive(func(ctx context.Context) (drivers.Result, error) {
			if p, ok := rs.d.(drivers.PreDeleter); ok {
				if err := p.PreDeleteCluster(ctx, req); err != nil {
					return drivers.Result{}, err
				}
			}
			return rs.d.DeleteCluster(ctx, req)
		})
	case sm.OpUpdateCluster:
		req := clusterRequest(c, rs.ct, ngs)
		return drive(func(ctx context.Context) (drivers.Result, error) { return rs.d.UpdateCluster(ctx, req) })
	case sm.OpResizeCluster:
		req := drivers.ResizeRequest{ClusterRequest: clusterRequest(c, rs.ct, ngs), NodeGroup: objects.Clone(ng),
			NodeCount: int(ng.NodeCount)}
		return drive(func(ctx context.Context) (drivers.Result, error) { return rs.d.ResizeCluster(ctx, req) })
	case sm.OpUpgradeCluster:
		req, err := rs.upgradeRequest(ctx, call, ng)
		if err != nil {
			return drivers.Result{}, err
		}
		return drive(func(ctx context.Context) (drivers.Result, error) { return rs.d.UpgradeCluster(ctx, req) })
	case sm.OpRotateCA:
		return rs.rotateCA(ctx)
	case sm.OpCreateNodeGroup, sm.OpUpdateNodeGroup, sm.OpDeleteNodeGroup:
		req := drivers.NodeGroupRequest{ClusterRequest: clusterRequest(c, rs.ct, ngs), NodeGroup: objects.Clone(ng)}
		return drive(func(ctx context.Context) (drivers.Result, error) {
			switch call.Op {
			case sm.OpCreateNodeGroup:
				return rs.d.CreateNodeGroup(ctx, req)
			case sm.OpUpdateNodeGroup:
				return rs.d.UpdateNodeGroup(ctx, req)
			}
			return rs.d.DeleteNodeGroup(ctx, req)
		})
	}
	return drivers.Result{}, fmt.Errorf("no driver call %q", call.Op)
}

// rotateCA resumes a CA rotation as its handler makes it: new CAs and client
// certificate, then the driver call with them. The certificates the
// interrupted handler generated were never recorded, so no driver can hold
// them (a handler killed after its driver call and before recording them
// leaves the driver with CAs nobody holds, which this rotation replaces).
// The new certificates are deleted when the driver refuses them (or is not
// ready), kept when the call was given up on or the conductor stops.
func (rs *resumption) rotateCA(ctx context.Context) (drivers.Result, error) {
	rot, ok := rs.d.(drivers.CARotator)
	if !ok {
		return drivers.Result{}, exception.NotSupportedMessage("'rotate_ca_certificate' is not supported by this driver.")
	}
	rotated := objects.Clone(rs.c)
	oldList, err := rs.h.certs.RotateForCluster(ctx, rotated)
	if err != nil {
		return drivers.Result{}, err
	}
	req := clusterRequest(rotated, rs.ct, rs.ngs)
	res, err := rs.h.callDriver(ctx, rs.log, string(sm.OpRotateCA), func(ctx context.Context) (drivers.Result, error) {
		return rot.RotateCACertificate(ctx, req)
	})
	if err != nil {
		if abandoned(err) || ctx.Err() != nil {
			rs.log.Warn("driver call given up on; the new certificates are kept, the old ones stay recorded",
				"new_refs", refsOf(rotated).list())
		} else {
			cctx, cancel := rs.h.cleanupCtx(ctx)
			rs.h.certs.DeleteRefs(cctx, objects.Deref(rs.c.UUID), refsOf(rotated).list())
			cancel()
		}
		return drivers.Result{}, err
	}
	rs.rotated, rs.oldCerts = rotated, oldList
	return res, nil
}

// upgradeRequest is the request of an upgrade the handler recorded at its
// claim: the cluster as the back end still has it (FromTemplateID), towards
// the template the row names now.
func (rs *resumption) upgradeRequest(ctx context.Context, call sm.Call, ng *objects.NodeGroup) (drivers.UpgradeRequest, error) {
	target := ng
	if target == nil {
		for _, n := range rs.ngs {
			if n.IsDefault && (target == nil || n.Role != objects.RoleMaster) {
				target = n
			}
		}
		if target == nil {
			return drivers.UpgradeRequest{}, exception.NodeGroupNotFound("default-worker")
		}
	}
	from, fromCT := objects.Clone(rs.c), rs.ct
	if id := call.FromTemplateID; id != "" && id != objects.Deref(rs.c.ClusterTemplateID) {
		ct, err := rs.h.store.GetClusterTemplateByUUID(ctx, id)
		if err != nil {
			return drivers.UpgradeRequest{}, fmt.Errorf("loading the template the cluster upgrades from: %w", err)
		}
		from.ClusterTemplateID, fromCT = objects.Str(id), ct
		if tag, ok := ct.Labels["kube_tag"]; ok {
			labels := maps.Clone(from.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["kube_tag"] = tag
			from.Labels = labels
		}
	}
	return drivers.UpgradeRequest{ClusterRequest: clusterRequest(from, fromCT, rs.ngs), NewTemplate: objects.Clone(rs.ct),
		NodeGroup: objects.Clone(target)}, nil
}

// certificates generates the cluster's certificates when their references
// are missing, and records them only while the row has none: a set
// recorded first by another conductor is kept, and this one deleted.
func (rs *resumption) certificates(ctx context.Context) error {
	c := rs.c
	if objects.Deref(c.CACertRef) != "" && objects.Deref(c.MagnumCertRef) != "" &&
		objects.Deref(c.EtcdCACertRef) != "" && objects.Deref(c.FrontProxyCACertRef) != "" {
		return nil
	}
	with := objects.Clone(c)
	if err := rs.h.certs.GenerateForCluster(ctx, with); err != nil {
		return err
	}
	err := rs.h.inTx(ctx, func(ctx context.Context, b *batch) error {
		return b.cluster(ctx, with, db.ClusterCond{Status: []string{objects.CreateInProgress}, Read: c, Fields: certGuard()})
	})
	if err != nil {
		cctx, cancel := rs.h.cleanupCtx(ctx)
		rs.h.certs.DeleteRefs(cctx, objects.Deref(c.UUID), refsOf(with).list())
		cancel()
		if errors.Is(err, db.ErrStatusChanged) || errors.Is(err, exception.ClusterNotFound("")) {
			return fmt.Errorf("certificates recorded meanwhile: %w", clusterstate.ErrStale)
		}
		return err
	}
	rs.log.Info("certificates generated for the resumed create")
	rs.c = with
	return nil
}

// certGuard guards the record of a create's certificate references: the
// create not handed over yet, no references recorded since, no resumption
// since.
func certGuard() []string {
	return []string{"stack_id", "ca_cert_ref", "magnum_cert_ref", "etcd_ca_cert_ref", "front_proxy_ca_cert_ref", "status_reason"}
}

// record stores what a successful call returned: the stack_id (the
// cluster's, a create's default nodegroups', or a nodegroup operation's).
func (rs *resumption) record(ctx context.Context, call sm.Call, res drivers.Result) error {
	h, c := rs.h, rs.c
	switch call.Op {
	case sm.OpCreateNodeGroup, sm.OpUpdateNodeGroup, sm.OpDeleteNodeGroup:
		ng := nodeGroupIn(rs.ngs, call.NodeGroup)
		if res.StackID == "" || res.StackID == objects.Deref(ng.StackID) {
			return nil
		}
		read, next := objects.Clone(ng), objects.Clone(ng)
		next.StackID = objects.Str(res.StackID)
		return h.persist(ctx, rs.log, "stack_id", func(ctx context.Context, b *batch) error {
			return b.nodegroup(ctx, next, db.NodeGroupCond{Read: read, Fields: db.NodeGroupGuardFields()})
		})
	case sm.OpRotateCA:
		recorded, err := h.recordRotation(ctx, rs.log, c, rs.rotated, res, rs.oldCerts)
		if err == nil && !recorded {
			return fmt.Errorf("the new certificate references: %w", clusterstate.ErrStale)
		}
		return err
	case sm.OpCreateCluster:
		next := objects.Clone(c)
		next.StackID = objects.Str(res.StackID)
		if res.StackID == "" {
			next.StackID = c.UUID
		}
		var ngRead, ngNext []*objects.NodeGroup
		for _, ng := range rs.ngs {
			if ng.IsDefault && objects.Deref(ng.StackID) == "" {
				n := objects.Clone(ng)
				n.StackID = next.StackID
				ngRead, ngNext = append(ngRead, objects.Clone(ng)), append(ngNext, n)
			}
		}
		read := objects.Clone(c)
		return h.persist(ctx, rs.log, "stack_id", func(ctx context.Context, b *batch) error {
			if err := b.cluster(ctx, next, db.ClusterCond{Read: read, Fields: []string{"stack_id"}}); err != nil {
				return err
			}
			for i, n := range ngNext {
				if err := b.nodegroup(ctx, n, db.NodeGroupCond{Read: ngRead[i], Fields: []string{"stack_id"}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if res.StackID == "" || res.StackID == objects.Deref(c.StackID) {
		return nil
	}
	return h.persist(ctx, rs.log, "stack_id", resultWrites(c, res, c.Status))
}

// notReady records that the driver could not be reached for this attempt:
// the next one comes after the bound.
func (rs *resumption) notReady(ctx context.Context, note string, err error) error {
	rs.log.Warn("the driver is not ready; the interrupted operation is resumed again later", "error", err)
	next := objects.Clone(rs.c)
	next.StatusReason = objects.Str(note + ": " + err.Error())
	read := objects.Clone(rs.c)
	_ = rs.h.persist(ctx, rs.log, "resumption note", func(ctx context.Context, b *batch) error {
		return b.cluster(ctx, next, db.ClusterCond{Read: read, Fields: append(db.ClusterGuardFields(), "status_reason")})
	})
	return err
}

// fail records the failure of the operation whose call failed, as its
// handler would have: the cluster (and the nodegroup of a nodegroup call)
// *_FAILED with the error, an upgrade's template rolled back, and the
// operation's failure notification.
func (rs *resumption) fail(ctx context.Context, call sm.Call, err error) error {
	h, c := rs.h, rs.c
	rs.log.Error("the resumed operation failed", "driver_method", string(call.Op), "error", err)
	failed := objects.Clone(c)
	failed.Status = failedStatus(c.Status)
	reason := err.Error()
	if call.Op == sm.OpUpgradeCluster && call.NodeGroup == "" && call.FromTemplateID != "" &&
		call.FromTemplateID != objects.Deref(c.ClusterTemplateID) {
		failed.ClusterTemplateID = objects.Str(call.FromTemplateID)
		reason += "; cluster_template_id rolled back to " + call.FromTemplateID
	}
	failed.StatusReason = objects.Str(reason)
	var ngRead, ngFailed []*objects.NodeGroup
	if c.Status == objects.UpdateInProgress {
		for _, ng := range rs.ngs {
			if ng.UUID != call.NodeGroup && (call.NodeGroup != "" || ng.Status != objects.UpdateInProgress) {
				continue
			}
			if !sm.InProgress(ng.Status) {
				continue
			}
			f := objects.Clone(ng)
			f.Status, f.StatusReason = failedStatus(ng.Status), objects.Str(err.Error())
			ngRead, ngFailed = append(ngRead, objects.Clone(ng)), append(ngFailed, f)
		}
	}
	read := objects.Clone(c)
	_ = h.persist(ctx, rs.log, failed.Status, func(ctx context.Context, b *batch) error {
		for i, f := range ngFailed {
			if err := b.nodegroup(ctx, f, db.NodeGroupCond{Read: ngRead[i], Fields: db.NodeGroupGuardFields()}); err != nil {
				return err
			}
		}
		return b.cluster(ctx, failed, db.ClusterCond{Read: read, Fields: db.ClusterGuardFields()})
	})
	if action, outcome, ok := sm.StatusToEvent(failed.Status); ok {
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, action, outcome, failed)
	}
	return err
}

func minutes(n int64) time.Duration { return time.Duration(n) * time.Minute }

// failedStatus is the *_FAILED status of an *_IN_PROGRESS one.
func failedStatus(s string) string {
	switch s {
	case objects.CreateInProgress:
		return objects.CreateFailed
	case objects.DeleteInProgress:
		return objects.DeleteFailed
	case objects.RollbackInProgress:
		return objects.RollbackFailed
	}
	return objects.UpdateFailed
}
