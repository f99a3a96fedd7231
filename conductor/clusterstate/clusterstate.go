// Package clusterstate records what the status machine
// (drivers/statusmachine) decided for a cluster: the saves, the
// notification, and the end of a deletion. The status sync and the RPC
// handlers (for an observation a driver returns with its result) both go
// through it, so a decision is persisted the same way wherever it was made.
//
// A decision was made on rows read earlier; meanwhile an operation may have
// started on the cluster (a claim by an RPC handler of this or another
// conductor), or another conductor may have recorded a newer decision. Apply
// therefore writes in one transaction that first locks the cluster row, and
// only while the cluster and its nodegroups are still as read: the same
// nodegroups, with the fields the operations write (db.ClusterGuardFields,
// db.NodeGroupGuardFields) unchanged. The handlers claim the cluster row
// before its nodegroups, in one transaction too, so a decision either lands
// before a claim (which then starts from it) or is dropped after it.
package clusterstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// Store is the part of db.Store Apply uses.
type Store interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
	LockCluster(ctx context.Context, uuid string) (*objects.Cluster, error)
	ListNodeGroups(ctx context.Context, clusterUUID string, opts db.ListOpts, f db.NodeGroupFilters) ([]*objects.NodeGroup, error)
	SaveClusterIf(ctx context.Context, c *objects.Cluster, cond db.ClusterCond) error
	SaveNodeGroupIf(ctx context.Context, ng *objects.NodeGroup, cond db.NodeGroupCond) error
	DestroyNodeGroupIf(ctx context.Context, clusterUUID, uuid string, cond db.NodeGroupCond) error
	DestroyNodeGroup(ctx context.Context, clusterUUID, uuid string) error
	DestroyCluster(ctx context.Context, uuid string) error
}

// Notifier emits the CADF notification magnum.cluster.<action> with an
// outcome (conductor.Notifications).
type Notifier interface {
	ClusterEvent(ctx context.Context, action, outcome string, c *objects.Cluster)
}

// CertDeleter removes a cluster's certificates (certmanager.Manager).
type CertDeleter interface {
	DeleteForCluster(ctx context.Context, c *objects.Cluster) error
}

// Applier records decisions. Notifier and Certs may be nil (nothing
// notified, no certificates deleted).
type Applier struct {
	Store    Store
	Notifier Notifier
	Certs    CertDeleter
	Log      *slog.Logger
}

// ErrStale is matched (with db.ErrStatusChanged) by the error of Apply when
// the rows changed since they were read: nothing was written, the decision
// is dropped, and the next sync decides again on fresh rows.
var ErrStale = fmt.Errorf("clusterstate: the cluster changed since it was read: %w", db.ErrStatusChanged)

// Outcome says what Apply did.
type Outcome struct {
	// Saved: the decision's writes landed (false when there were none).
	Saved bool
	// Deleted: the cluster's row and nodegroups are gone.
	Deleted bool
}

// Apply records d, made on read and readNGs: the saves in one transaction
// conditional on the rows (ErrStale when they changed), then the
// notification, then, for a finished deletion, the removal of the
// certificates, nodegroups and row. A cluster that is gone is not an error.
func (a *Applier) Apply(ctx context.Context, read *objects.Cluster, readNGs []*objects.NodeGroup, d statusmachine.Decision) (Outcome, error) {
	if d.Cluster == nil {
		return Outcome{}, nil
	}
	uuid := objects.Deref(read.UUID)
	if read.Status == objects.DeleteComplete {
		// A leftover of an interrupted clean-up: finish it.
		return Outcome{Deleted: a.FinishDelete(ctx, read) == nil}, nil
	}
	if !d.Changed() {
		return Outcome{}, nil
	}
	err := a.Store.InTx(ctx, func(ctx context.Context) error {
		now, err := a.Store.LockCluster(ctx, uuid)
		if err != nil {
			return err
		}
		if !db.ClusterUnchanged(read, now) {
			return ErrStale
		}
		ngs, err := a.Store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
		if err != nil {
			return err
		}
		if !sameNodeGroups(readNGs, ngs) {
			return ErrStale
		}
		for _, ng := range d.NodeGroups {
			cond := db.NodeGroupCond{Read: byUUID(readNGs, ng.UUID), Fields: db.NodeGroupGuardFields()}
			if err := a.Store.SaveNodeGroupIf(ctx, ng, cond); err != nil {
				return fmt.Errorf("saving nodegroup %s: %w", ng.UUID, err)
			}
		}
		for _, ng := range d.Destroy {
			cond := db.NodeGroupCond{Read: ng, Fields: db.NodeGroupGuardFields()}
			if err := a.Store.DestroyNodeGroupIf(ctx, uuid, ng.UUID, cond); err != nil {
				return fmt.Errorf("destroying nodegroup %s: %w", ng.UUID, err)
			}
		}
		if len(objects.Changes(d.Cluster)) > 0 {
			if err := a.Store.SaveClusterIf(ctx, d.Cluster, db.ClusterCond{Read: read, Fields: db.ClusterGuardFields()}); err != nil {
				return fmt.Errorf("saving the cluster: %w", err)
			}
		}
		return nil
	})
	switch {
	case err == nil:
	case errors.Is(err, exception.ClusterNotFound("")), errors.Is(err, exception.NodeGroupNotFound("")):
		return Outcome{}, ErrStale
	case errors.Is(err, db.ErrStatusChanged):
		return Outcome{}, ErrStale
	default:
		return Outcome{}, err
	}
	out := Outcome{Saved: true}
	log := a.Log.With("cluster_uuid", uuid)
	if d.Cluster.Status != read.Status {
		log.Info("cluster status changed", "status", d.Cluster.Status, "previous_status", read.Status,
			"status_reason", objects.Deref(d.Cluster.StatusReason))
	}
	for _, ng := range d.NodeGroups {
		if old := byUUID(readNGs, ng.UUID); old != nil && old.Status != ng.Status {
			log.Info("nodegroup status changed", "nodegroup_uuid", ng.UUID, "nodegroup_name", ng.Name,
				"status", ng.Status, "previous_status", old.Status, "status_reason", objects.Deref(ng.StatusReason))
		}
	}
	for _, ng := range d.Destroy {
		log.Info("nodegroup deleted", "nodegroup_uuid", ng.UUID, "nodegroup_name", ng.Name)
	}
	if d.Event != nil && a.Notifier != nil {
		a.Notifier.ClusterEvent(ctx, d.Event.Action, d.Event.Outcome, d.Cluster)
	}
	if d.Deleted {
		out.Deleted = a.FinishDelete(ctx, d.Cluster) == nil
	}
	return out, nil
}

func byUUID(ngs []*objects.NodeGroup, uuid string) *objects.NodeGroup {
	for _, ng := range ngs {
		if ng.UUID == uuid {
			return ng
		}
	}
	return nil
}

// sameNodeGroups reports whether now holds the nodegroups read, with their
// guarded fields unchanged.
func sameNodeGroups(read, now []*objects.NodeGroup) bool {
	if len(read) != len(now) {
		return false
	}
	for _, n := range now {
		r := byUUID(read, n.UUID)
		if r == nil || !db.NodeGroupUnchanged(r, n) {
			return false
		}
	}
	return true
}

// FinishDelete removes the certificates, the nodegroups and the row of a
// cluster whose deletion completed. Each step tolerates what another
// conductor already removed; a failure is logged and returned, and the next
// sync (which polls DELETE_COMPLETE leftovers) finishes it.
func (a *Applier) FinishDelete(ctx context.Context, c *objects.Cluster) error {
	uuid := objects.Deref(c.UUID)
	log := a.Log.With("cluster_uuid", uuid)
	if a.Certs != nil {
		if err := a.Certs.DeleteForCluster(ctx, c); err != nil {
			log.Warn("deleting the cluster's certificates failed", "error", err)
		}
	}
	ngs, err := a.Store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		log.Warn("listing nodegroups of a deleted cluster failed; retried next cycle", "error", err)
		return err
	}
	for _, ng := range ngs {
		if err := a.Store.DestroyNodeGroup(ctx, uuid, ng.UUID); err != nil && !errors.Is(err, exception.NodeGroupNotFound("")) {
			log.Warn("destroying a nodegroup of a deleted cluster failed; retried next cycle",
				"nodegroup_uuid", ng.UUID, "error", err)
			return err
		}
	}
	if err := a.Store.DestroyCluster(ctx, uuid); err != nil {
		if errors.Is(err, exception.ClusterNotFound("")) {
			return nil
		}
		log.Warn("destroying a deleted cluster failed; retried next cycle", "error", err)
		return err
	}
	log.Info("cluster deleted")
	return nil
}
