package periodic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/conductor/clusterstate"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// syncStatuses are the statuses sync_cluster_status polls. DELETE_COMPLETE
// is added to Magnum's four: a row still in that state is a deletion whose
// clean-up was interrupted, finished here without a second notification.
var syncStatuses = []string{
	objects.CreateInProgress, objects.UpdateInProgress, objects.DeleteInProgress,
	objects.RollbackInProgress, objects.DeleteComplete,
}

// SyncOptions configure sync_cluster_status.
type SyncOptions struct {
	// Timeouts are the status machine's deadlines.
	Timeouts statusmachine.Timeouts
	// Spacing defaults to 10 s, Magnum's fixed value; negative disables.
	Spacing time.Duration
	// Workers bounds the clusters handled at once (default 32).
	Workers int
	// ClusterTimeout bounds one cluster's driver call and saves (default
	// 60 s).
	ClusterTimeout time.Duration
	// Now is the clock the deadlines are judged by (default time.Now).
	Now func() time.Time
	// Settled also observes, at every cycle, the settled clusters of the
	// drivers that ask for it (drivers.SettledObserver), and stores what
	// their back ends decided on their own (statusmachine.Refresh: the
	// node_count of autoscaled nodegroups, among others). It lists every
	// cluster instead of those in progress only.
	Settled bool
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
	// Resumer resumes the operations the status machine finds interrupted
	// before their driver call (SyncOptions.Timeouts.Resume); nil only
	// logs them.
	Resumer Resumer
}

// SyncClusterStatus is the sync_cluster_status task.
type SyncClusterStatus struct {
	o        SyncOptions
	d        Deps
	applier  *clusterstate.Applier
	now      func() time.Time
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
	j := &SyncClusterStatus{o: o, d: d, now: o.Now}
	if j.now == nil {
		j.now = time.Now
	}
	j.applier = &clusterstate.Applier{Store: d.Store, Certs: d.Certs, Log: d.Log}
	if d.Notifier != nil {
		j.applier.Notifier = d.Notifier
	}
	return j, nil
}

// Name implements Job.
func (j *SyncClusterStatus) Name() string { return "sync_cluster_status" }

// Spacing implements Job.
func (j *SyncClusterStatus) Spacing() time.Duration { return j.o.Spacing }

// RunOnce asks the driver of every in-progress cluster this conductor owns
// what its back end shows, has the status machine judge it, and records the
// decision: saves conditional on the rows as read at the start of the
// cycle, notifications of the operations that ended, deletions finished
// (ClusterUpdateJob.update_status).
func (j *SyncClusterStatus) RunOnce(ctx context.Context) error {
	ctx = request.With(ctx, request.Admin())
	shard, err := j.d.Sharder.Snapshot(ctx)
	if err != nil {
		return err
	}
	filters := db.ClusterFilters{Status: syncStatuses}
	if j.o.Settled {
		filters = db.ClusterFilters{}
	}
	clusters, err := j.d.Store.ListClusters(ctx, db.ListOpts{}, filters)
	if err != nil {
		return fmt.Errorf("listing clusters in progress: %w", err)
	}
	counts := map[string]int{}
	var mine []*objects.Cluster
	handled := 0
	for _, c := range clusters {
		settled := statusmachine.Settled(c.Status)
		if !settled {
			counts[c.Status]++
		}
		if shard.Owns(objects.Deref(c.UUID)) {
			mine = append(mine, c)
			if !settled {
				handled++
			}
		}
	}
	j.d.Metrics.setClusters(j.Name(), counts, syncStatuses)
	j.d.Metrics.setHandled(j.Name(), handled)
	// One query (per 500 clusters) for all their nodegroups instead of one
	// per cluster. Some operations are allowed on a cluster in progress
	// (resize, nodegroup create and update in UPDATE_IN_PROGRESS): a
	// decision is recorded only while the cluster and its nodegroups are
	// still as read here (clusterstate.Apply).
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
		if stage, err := j.syncOne(cctx, ctx, c, nodegroups[uuid], &templates); err != nil {
			j.d.Metrics.failure(j.Name(), stage)
			if errors.Is(err, drivers.ErrNotReady) || errors.Is(err, drivers.ErrNotManaged) { // the driver logs its own state
				j.d.Log.Debug("cluster status sync waits for its driver", "cluster_uuid", uuid, "error", err)
				return
			}
			j.d.Log.Warn("cluster status sync failed; retried next cycle", "cluster_uuid", uuid,
				"stage", stage, "error", err)
		}
	})
	return nil
}

// driverFor returns the driver and the template of c, loading each
// template once per cycle.
func driverFor(ctx context.Context, store ClusterStore, lookup DriverLookup, templates *onceMap[*objects.ClusterTemplate], c *objects.Cluster) (drivers.Driver, *objects.ClusterTemplate, error) {
	ctID := objects.Deref(c.ClusterTemplateID)
	ct, err := templates.get(ctID, func() (*objects.ClusterTemplate, error) {
		return store.GetClusterTemplateByUUID(ctx, ctID)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("loading cluster template %s: %w", ctID, err)
	}
	d, err := lookup.ForTemplate(ct)
	if err != nil {
		return nil, ct, fmt.Errorf("selecting the driver: %w", err)
	}
	return d, ct, nil
}

// observeRequest gives the driver copies of the rows.
func observeRequest(c *objects.Cluster, ct *objects.ClusterTemplate, ngs []*objects.NodeGroup, fresh bool) drivers.ObserveRequest {
	req := drivers.ObserveRequest{Fresh: fresh}
	req.Cluster = objects.Clone(c)
	if ct != nil {
		req.Template = objects.Clone(ct)
	}
	for _, ng := range ngs {
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	return req
}

// syncOne judges one cluster under ctx (the cycle's per-cluster bound); a
// resumption runs under cycle (the cycle's own context: it makes driver
// calls under the driver-call deadline, and stops with the conductor).
func (j *SyncClusterStatus) syncOne(ctx, cycle context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, templates *onceMap[*objects.ClusterTemplate]) (stage string, err error) {
	defer func() {
		if p := recover(); p != nil {
			stage, err = "panic", fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	uuid := objects.Deref(c.UUID)
	now := j.now()
	if statusmachine.Settled(c.Status) {
		return j.refresh(ctx, c, ngs, templates, now)
	}
	if d, observe := statusmachine.Triage(c, now, j.o.Timeouts); !observe {
		switch {
		case d.Deleted:
			if err := j.applier.FinishDelete(ctx, c); err != nil {
				return "db", err
			}
		case d.Resume != nil:
			return j.resume(cycle, c, ngs, d)
		case d.Cluster != nil:
			// An interrupted create whose resumptions are spent.
			return j.record(ctx, c, ngs, d)
		default:
			j.d.Log.Debug("cluster not judged", "cluster_uuid", uuid, "status", c.Status, "reason", d.Skip)
		}
		return "", nil
	}
	drv, ct, err := driverFor(ctx, j.d.Store, j.d.Drivers, templates, c)
	if err != nil {
		return "driver", err
	}
	obs, err := drv.Observe(ctx, observeRequest(c, ct, ngs, false))
	if err != nil {
		return "driver", fmt.Errorf("observe: %w", err)
	}
	in := statusmachine.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Now: now, Timeouts: j.o.Timeouts}
	d := statusmachine.Decide(in)
	if d.NeedFresh {
		// A deadline passed, or an operation looks interrupted: the back
		// end itself, not a cache, must confirm before anything fails or is
		// resumed on it.
		in.Observation, err = drv.Observe(ctx, observeRequest(c, ct, ngs, true))
		if err != nil {
			return "driver", fmt.Errorf("observe (fresh, a deadline passed): %w", err)
		}
		in.Fresh = true
		d = statusmachine.Decide(in)
	}
	if d.Resume != nil {
		return j.resume(cycle, c, ngs, d)
	}
	j.d.Log.Debug("cluster observed", "cluster_uuid", uuid, "status", c.Status, "phase", string(obs.Phase),
		"decided_status", d.Cluster.Status)
	if len(d.TimedOut) > 0 {
		j.d.Log.Warn("cluster operation timed out", "cluster_uuid", uuid, "status", c.Status, "timed_out", d.TimedOut)
	}
	return j.record(ctx, c, ngs, d)
}

// refresh stores what the driver of a settled cluster reports, when it is
// a SettledObserver (statusmachine.Refresh).
func (j *SyncClusterStatus) refresh(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, templates *onceMap[*objects.ClusterTemplate], now time.Time) (string, error) {
	drv, ct, err := driverFor(ctx, j.d.Store, j.d.Drivers, templates, c)
	if err != nil && ct != nil {
		// A settled cluster of a driver this conductor does not run (one
		// left by another driver in a shared database): nothing to
		// refresh, and nothing to warn about at every cycle.
		j.d.Log.Debug("settled cluster has no registered driver; not refreshed", "cluster_uuid", objects.Deref(c.UUID), "error", err)
		return "", nil
	}
	if err != nil {
		return "driver", err
	}
	if so, ok := drv.(drivers.SettledObserver); !ok || !so.ObservesSettled() {
		return "", nil
	}
	obs, err := drv.Observe(ctx, observeRequest(c, ct, ngs, false))
	if err != nil {
		return "driver", fmt.Errorf("observe: %w", err)
	}
	return j.record(ctx, c, ngs, statusmachine.Refresh(statusmachine.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Now: now}))
}

// resume hands an interrupted operation to the Resumer.
func (j *SyncClusterStatus) resume(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, d statusmachine.Decision) (string, error) {
	uuid := objects.Deref(c.UUID)
	j.d.Log.Warn("cluster operation interrupted before its driver call; resuming it", "cluster_uuid", uuid,
		"status", c.Status, "reason", d.Interrupted, "attempt", d.Resume.Attempt, "attempts", d.Resume.Of)
	if j.d.Resumer == nil {
		return "", nil
	}
	if err := j.d.Resumer.Resume(ctx, c, ngs, *d.Resume); err != nil {
		if errors.Is(err, clusterstate.ErrStale) {
			return "", nil
		}
		return "resume", err
	}
	return "", nil
}

// record saves a decision.
func (j *SyncClusterStatus) record(ctx context.Context, c *objects.Cluster, ngs []*objects.NodeGroup, d statusmachine.Decision) (string, error) {
	uuid := objects.Deref(c.UUID)
	if d.Interrupted != "" {
		j.d.Log.Warn("cluster operation interrupted before its driver call; its resumptions are spent, it fails",
			"cluster_uuid", uuid, "status", c.Status, "reason", objects.Deref(d.Cluster.StatusReason))
	}
	if _, err := j.applier.Apply(ctx, c, ngs, d); err != nil {
		if errors.Is(err, clusterstate.ErrStale) {
			j.d.Log.Info("cluster changed while it was observed; result dropped, judged again next cycle",
				"cluster_uuid", uuid, "decided_status", d.Cluster.Status)
			return "", nil
		}
		return "db", fmt.Errorf("recording the decision: %w", err)
	}
	return "", nil
}
