package periodic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// CADF actions and outcomes (pycadf.cadftaxonomy).
const (
	ActionCreate   = "create"
	ActionUpdate   = "update"
	ActionDelete   = "delete"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomePending = "pending"
)

// statusToEvent is ClusterUpdateJob.status_to_event.
var statusToEvent = map[string]string{
	objects.DeleteComplete:   ActionDelete,
	objects.CreateComplete:   ActionCreate,
	objects.UpdateComplete:   ActionUpdate,
	objects.RollbackComplete: ActionUpdate,
	objects.CreateFailed:     ActionCreate,
	objects.DeleteFailed:     ActionDelete,
	objects.UpdateFailed:     ActionUpdate,
	objects.RollbackFailed:   ActionUpdate,
}

// StatusToEvent returns the CADF action and outcome notified when a
// cluster reaches status, as status_to_event does; ok is false for statuses
// without an action (they are logged, never fatal, unlike Magnum's
// KeyError, §K.4).
func StatusToEvent(status string) (action, outcome string, ok bool) {
	switch {
	case strings.HasSuffix(status, "_COMPLETE"):
		outcome = OutcomeSuccess
	case strings.HasSuffix(status, "_FAILED"):
		outcome = OutcomeFailure
	default:
		return "", "", false
	}
	action, ok = statusToEvent[status]
	return action, outcome, ok
}

// syncStatuses are the statuses sync_cluster_status polls. DELETE_COMPLETE
// is added to Magnum's four: a row still in that state is a deletion whose
// clean-up was interrupted, finished here without a second notification.
var syncStatuses = []string{
	objects.CreateInProgress, objects.UpdateInProgress, objects.DeleteInProgress,
	objects.RollbackInProgress, objects.DeleteComplete,
}

// SyncOptions configure sync_cluster_status.
type SyncOptions struct {
	// Spacing defaults to 10 s, Magnum's fixed value; negative disables.
	Spacing time.Duration
	// Workers bounds the clusters handled at once (default 32).
	Workers int
	// ClusterTimeout bounds one cluster's driver call and saves (default
	// 60 s).
	ClusterTimeout time.Duration
}

// Deps are what the cluster jobs need.
type Deps struct {
	Store    ClusterStore
	Drivers  DriverLookup
	Notifier Notifier
	Certs    CertDeleter
	Sharder  Sharder
	Log      *slog.Logger
	Metrics  *Metrics
}

// SyncClusterStatus is the sync_cluster_status task.
type SyncClusterStatus struct {
	o        SyncOptions
	d        Deps
	inflight inFlight
}

// NewSyncClusterStatus returns the sync_cluster_status job.
func NewSyncClusterStatus(o SyncOptions, d Deps) (*SyncClusterStatus, error) {
	if o.Spacing == 0 {
		o.Spacing = 10 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.ClusterTimeout <= 0 {
		o.ClusterTimeout = 60 * time.Second
	}
	if d.Store == nil || d.Drivers == nil || d.Sharder == nil || d.Log == nil {
		return nil, errors.New("periodic: sync_cluster_status needs a store, drivers, a sharder and a logger")
	}
	return &SyncClusterStatus{o: o, d: d}, nil
}

// Name implements Job.
func (j *SyncClusterStatus) Name() string { return "sync_cluster_status" }

// Spacing implements Job.
func (j *SyncClusterStatus) Spacing() time.Duration { return j.o.Spacing }

// RunOnce asks the driver of every in-progress cluster this conductor owns
// for its status, saves what changed, notifies the end of operations and
// finishes deletions (ClusterUpdateJob.update_status).
func (j *SyncClusterStatus) RunOnce(ctx context.Context) error {
	ctx = request.With(ctx, request.Admin())
	shard, err := j.d.Sharder.Snapshot(ctx)
	if err != nil {
		return err
	}
	clusters, err := j.d.Store.ListClusters(ctx, db.ListOpts{}, db.ClusterFilters{Status: syncStatuses})
	if err != nil {
		return fmt.Errorf("listing clusters in progress: %w", err)
	}
	counts := map[string]int{}
	var mine []*objects.Cluster
	for _, c := range clusters {
		counts[c.Status]++
		if shard.Owns(objects.Deref(c.UUID)) {
			mine = append(mine, c)
		}
	}
	j.d.Metrics.setClusters(j.Name(), counts, syncStatuses)
	j.d.Metrics.setHandled(j.Name(), len(mine))
	// One query (per 500 clusters) for all their nodegroups instead of one
	// per cluster. Some operations are allowed on a cluster in progress
	// (resize, nodegroup create and update in UPDATE_IN_PROGRESS), so a
	// cluster whose poll would write anything has its nodegroups read
	// again first, and its result is dropped if they changed (syncOne).
	uuids := make([]string, len(mine))
	for i, c := range mine {
		uuids[i] = objects.Deref(c.UUID)
	}
	nodegroups, err := j.d.Store.ListNodeGroupsOfClusters(ctx, uuids)
	if err != nil {
		return fmt.Errorf("listing the nodegroups of clusters in progress: %w", err)
	}
	var templates onceMap[*objects.ClusterTemplate]
	forEach(ctx, j.o.Workers, mine, func(c *objects.Cluster) {
		uuid := objects.Deref(c.UUID)
		if !j.inflight.acquire(uuid) {
			j.d.Metrics.skipped(j.Name())
			j.d.Log.Info("cluster still being synced by a previous run; skipped", "cluster_uuid", uuid)
			return
		}
		defer j.inflight.release(uuid)
		cctx, cancel := context.WithTimeout(ctx, j.o.ClusterTimeout)
		defer cancel()
		if stage, err := j.syncOne(cctx, c, nodegroups[uuid], &templates); err != nil {
			j.d.Metrics.failure(j.Name(), stage)
			if errors.Is(err, drivers.ErrNotReady) { // the driver logs its own retries
				j.d.Log.Debug("cluster status sync waits for its driver", "cluster_uuid", uuid, "error", err)
				return
			}
			j.d.Log.Warn("cluster status sync failed; retried next cycle", "cluster_uuid", uuid,
				"stage", stage, "error", err)
		}
	})
	return nil
}

// driverFor returns the driver of c's template, loading each template once
// per cycle.
func driverFor(ctx context.Context, store ClusterStore, lookup DriverLookup, templates *onceMap[*objects.ClusterTemplate], c *objects.Cluster) (drivers.Driver, error) {
	ctID := objects.Deref(c.ClusterTemplateID)
	ct, err := templates.get(ctID, func() (*objects.ClusterTemplate, error) {
		return store.GetClusterTemplateByUUID(ctx, ctID)
	})
	if err != nil {
		return nil, fmt.Errorf("loading cluster template %s: %w", ctID, err)
	}
	d, err := lookup.ForTemplate(ct)
	if err != nil {
		return nil, fmt.Errorf("selecting the driver: %w", err)
	}
	return d, nil
}

func (j *SyncClusterStatus) syncOne(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, templates *onceMap[*objects.ClusterTemplate]) (stage string, err error) {
	defer func() {
		if p := recover(); p != nil {
			stage, err = "panic", fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	uuid := objects.Deref(c.UUID)
	if c.Status == objects.DeleteComplete {
		j.finishDelete(ctx, c)
		return "", nil
	}
	d, err := driverFor(ctx, j.d.Store, j.d.Drivers, templates, c)
	if err != nil {
		return "driver", err
	}
	prev := c.Status
	loaded := nodeGroupsState(ngs)
	healStackID(c, ngs)
	if err := d.UpdateClusterStatus(ctx, c, ngs); err != nil {
		return "driver", fmt.Errorf("update_cluster_status: %w", err)
	}
	j.d.Log.Debug("cluster status polled", "cluster_uuid", uuid, "status", c.Status, "previous_status", prev)
	if writes(c, ngs) {
		// The nodegroups were read at the start of the cycle. If an
		// operation changed them since (a resize, a new nodegroup), the
		// driver judged stale data: saving its result could overwrite
		// the operation's nodegroups, or complete the cluster without
		// the new one. The next cycle polls it again.
		now, err := j.d.Store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
		if err != nil {
			return "db", fmt.Errorf("reading the nodegroups again: %w", err)
		}
		if nodeGroupsState(now) != loaded {
			j.d.Log.Info("nodegroups changed while the cluster was polled; result dropped, polled again next cycle",
				"cluster_uuid", uuid, "polled_status", c.Status)
			return "", nil
		}
	}

	if c.Status != objects.DeleteComplete {
		for _, ng := range ngs {
			if err := j.saveNodeGroup(ctx, uuid, ng); err != nil {
				return "db", err
			}
		}
	}
	// The conditional save is the claim: if another conductor or an RPC
	// handler moved the cluster meanwhile, this result is stale and
	// nothing is notified or deleted.
	if len(objects.Changes(c)) == 0 {
		return "", nil
	}
	if err := j.d.Store.SaveClusterIfStatus(ctx, c, []string{prev}); err != nil {
		if errors.Is(err, db.ErrStatusChanged) || errors.Is(err, exception.ClusterNotFound("")) {
			j.d.Log.Info("cluster changed while its status was polled; result dropped", "cluster_uuid", uuid,
				"polled_status", c.Status)
			return "", nil
		}
		return "db", fmt.Errorf("saving the cluster: %w", err)
	}
	if c.Status != prev {
		if action, outcome, ok := StatusToEvent(c.Status); ok {
			if j.d.Notifier != nil {
				j.d.Notifier.ClusterEvent(ctx, action, outcome, c)
			}
		} else if strings.HasSuffix(c.Status, "_COMPLETE") || strings.HasSuffix(c.Status, "_FAILED") {
			j.d.Log.Warn("no CADF action for the status the driver set; not notified", "cluster_uuid", uuid,
				"status", c.Status)
		}
		j.d.Log.Info("cluster status changed", "cluster_uuid", uuid, "status", c.Status, "previous_status", prev,
			"status_reason", objects.Deref(c.StatusReason))
	}
	if c.Status == objects.DeleteComplete {
		j.finishDelete(ctx, c)
	}
	return "", nil
}

// healStackID gives c's default nodegroups c's stack_id when they have
// none: cluster_create copies it after the driver call and only logs a
// failed copy, so the sync saves it with the poll's result.
func healStackID(c *objects.Cluster, ngs []*objects.NodeGroup) {
	sid := objects.Deref(c.StackID)
	if sid == "" {
		return
	}
	for _, ng := range ngs {
		if ng.IsDefault && objects.Deref(ng.StackID) == "" {
			ng.StackID = objects.Str(sid)
		}
	}
}

// writes reports whether saving a poll's result would write anything.
func writes(c *objects.Cluster, ngs []*objects.NodeGroup) bool {
	if len(objects.Changes(c)) > 0 || c.Status == objects.DeleteComplete {
		return true
	}
	for _, ng := range ngs {
		if len(objects.Changes(ng)) > 0 || ng.Status == objects.DeleteComplete {
			return true
		}
	}
	return false
}

// nodeGroupsState is what an operation changes in a cluster's nodegroups
// (which ones exist, their status, sizes and last update), comparable.
func nodeGroupsState(ngs []*objects.NodeGroup) string {
	rows := make([]string, len(ngs))
	for i, ng := range ngs {
		var updated int64
		if ng.UpdatedAt != nil {
			updated = ng.UpdatedAt.UnixNano()
		}
		var maxCount int64 = -1
		if ng.MaxNodeCount != nil {
			maxCount = *ng.MaxNodeCount
		}
		rows[i] = fmt.Sprintf("%s %s %d %d %d %d", ng.UUID, ng.Status, ng.NodeCount, ng.MinNodeCount, maxCount, updated)
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

func (j *SyncClusterStatus) saveNodeGroup(ctx context.Context, clusterUUID string, ng *objects.NodeGroup) error {
	if ng.Status == objects.DeleteComplete {
		// The Heat poller destroyed nodegroups whose deletion completed.
		err := j.d.Store.DestroyNodeGroup(ctx, clusterUUID, ng.UUID)
		if err != nil && !errors.Is(err, exception.NodeGroupNotFound("")) {
			return fmt.Errorf("destroying nodegroup %s: %w", ng.UUID, err)
		}
		return nil
	}
	if len(objects.Changes(ng)) == 0 {
		return nil
	}
	if err := j.d.Store.SaveNodeGroup(ctx, ng); err != nil && !errors.Is(err, exception.NodeGroupNotFound("")) {
		return fmt.Errorf("saving nodegroup %s: %w", ng.UUID, err)
	}
	return nil
}

// finishDelete removes the certificates, the nodegroups and the cluster row.
// Each step tolerates what another conductor already removed.
func (j *SyncClusterStatus) finishDelete(ctx context.Context, c *objects.Cluster) {
	uuid := objects.Deref(c.UUID)
	if j.d.Certs != nil {
		if err := j.d.Certs.DeleteForCluster(ctx, c); err != nil {
			j.d.Log.Warn("deleting the cluster's certificates failed", "cluster_uuid", uuid, "error", err)
		}
	}
	ngs, err := j.d.Store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		j.d.Metrics.failure(j.Name(), "db")
		j.d.Log.Warn("listing nodegroups of a deleted cluster failed; retried next cycle", "cluster_uuid", uuid, "error", err)
		return
	}
	for _, ng := range ngs {
		if err := j.d.Store.DestroyNodeGroup(ctx, uuid, ng.UUID); err != nil && !errors.Is(err, exception.NodeGroupNotFound("")) {
			j.d.Metrics.failure(j.Name(), "db")
			j.d.Log.Warn("destroying a nodegroup of a deleted cluster failed; retried next cycle", "cluster_uuid", uuid,
				"nodegroup_uuid", ng.UUID, "error", err)
			return
		}
	}
	if err := j.d.Store.DestroyCluster(ctx, uuid); err != nil {
		if errors.Is(err, exception.ClusterNotFound("")) {
			return
		}
		j.d.Metrics.failure(j.Name(), "db")
		j.d.Log.Warn("destroying a deleted cluster failed; retried next cycle", "cluster_uuid", uuid, "error", err)
		return
	}
	j.d.Log.Info("cluster deleted", "cluster_uuid", uuid)
}
