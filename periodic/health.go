package periodic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// HealthStatuses are the statuses sync_cluster_health_status polls in
// Magnum 2026.1 and master.
var HealthStatuses = []string{
	objects.CreateInProgress, objects.CreateFailed, objects.CreateComplete,
	objects.UpdateInProgress, objects.UpdateFailed, objects.UpdateComplete,
	objects.DeleteInProgress, objects.DeleteFailed, objects.RollbackInProgress,
}

// HealthOptions configure sync_cluster_health_status.
type HealthOptions struct {
	// Interval is [kubernetes]health_polling_interval, honoured (Magnum
	// always uses 60 s, §K.2); ≤ 0 disables the task.
	Interval time.Duration
	// Workers bounds the clusters polled at once (default 128, as
	// [kubernetes]health_poll_workers).
	Workers int
	// PollTimeout bounds one cluster's poll, monitor included (default
	// 30 s; the Kubernetes monitor's own timeouts are shorter).
	PollTimeout time.Duration
	// KeepOnError keeps the previous health when a poll fails, as Magnum
	// does; by default a failed poll stores UNKNOWN with the error as
	// reason (§K.3).
	KeepOnError bool
	// Statuses overrides HealthStatuses.
	Statuses []string
}

// HealthDeps are what the health job needs beyond Deps: the monitor for
// drivers without their own.
type HealthDeps struct {
	Deps
	Monitors MonitorFactory
}

// SyncClusterHealth is the sync_cluster_health_status task.
type SyncClusterHealth struct {
	o        HealthOptions
	d        HealthDeps
	inflight inFlight
}

// NewSyncClusterHealth returns the sync_cluster_health_status job.
func NewSyncClusterHealth(o HealthOptions, d HealthDeps) (*SyncClusterHealth, error) {
	if o.Workers <= 0 {
		o.Workers = 128
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
	if len(o.Statuses) == 0 {
		o.Statuses = HealthStatuses
	}
	if d.Store == nil || d.Drivers == nil || d.Sharder == nil || d.Log == nil {
		return nil, errors.New("periodic: sync_cluster_health_status needs a store, drivers, a sharder and a logger")
	}
	return &SyncClusterHealth{o: o, d: d}, nil
}

// Name implements Job.
func (j *SyncClusterHealth) Name() string { return "sync_cluster_health_status" }

// Spacing implements Job.
func (j *SyncClusterHealth) Spacing() time.Duration { return j.o.Interval }

// Options returns the options in effect, defaults filled in.
func (j *SyncClusterHealth) Options() HealthOptions { return j.o }

// RunOnce polls the health of every cluster this conductor owns and saves
// health_status and health_status_reason where they changed.
func (j *SyncClusterHealth) RunOnce(ctx context.Context) error {
	ctx = request.With(ctx, request.Admin())
	shard, err := j.d.Sharder.Snapshot(ctx)
	if err != nil {
		return err
	}
	clusters, err := j.d.Store.ListClusters(ctx, db.ListOpts{}, db.ClusterFilters{Status: j.o.Statuses})
	if err != nil {
		return fmt.Errorf("listing clusters: %w", err)
	}
	counts := map[string]int{}
	var mine []*objects.Cluster
	keep := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		counts[c.Status]++
		if shard.Owns(objects.Deref(c.UUID)) {
			mine = append(mine, c)
			keep[objects.Deref(c.UUID)] = true
		}
	}
	if f, ok := j.d.Monitors.(*KubernetesMonitors); ok {
		f.Forget(keep)
	}
	j.d.Metrics.setClusters(j.Name(), counts, j.o.Statuses)
	j.d.Metrics.setHandled(j.Name(), len(mine))
	var templates onceMap[*objects.ClusterTemplate]
	health := make(chan string, len(mine))
	forEach(ctx, j.o.Workers, mine, func(c *objects.Cluster) {
		uuid := objects.Deref(c.UUID)
		if !j.inflight.acquire(uuid) {
			j.d.Metrics.skipped(j.Name())
			return
		}
		defer j.inflight.release(uuid)
		stage, err := j.pollOne(ctx, c, &templates)
		if err != nil {
			j.d.Metrics.failure(j.Name(), stage)
			if errors.Is(err, drivers.ErrNotReady) || errors.Is(err, drivers.ErrNotManaged) { // the driver logs its own state once
				j.d.Log.Debug("cluster health poll waits for its driver", "cluster_uuid", uuid, "stage", stage, "error", err)
			} else {
				j.d.Log.Warn("cluster health poll failed", "cluster_uuid", uuid, "stage", stage, "error", err)
			}
		}
		health <- c.HealthStatus
	})
	close(health)
	byHealth := map[string]int{}
	for h := range health {
		byHealth[h]++
	}
	j.d.Metrics.setHealth(byHealth)
	return nil
}

func (j *SyncClusterHealth) pollOne(ctx context.Context, c *objects.Cluster, templates *onceMap[*objects.ClusterTemplate]) (string, error) {
	if autoHealerRunning(c) {
		return "", nil
	}
	d, ct, err := driverFor(ctx, j.d.Store, j.d.Drivers, templates, c)
	if err != nil {
		return "driver", err
	}
	h, pollErr := j.poll(ctx, d, c, ct)
	stage := ""
	if pollErr != nil {
		stage = "poll"
		if j.o.KeepOnError {
			return stage, pollErr
		}
		h = drivers.Health{Status: objects.Unknown, Reason: map[string]string{"api": pollErr.Error()}}
	}
	if h.Status == "" {
		return stage, pollErr
	}
	if h.Status == c.HealthStatus && maps.Equal(h.Reason, c.HealthStatusReason) {
		return stage, pollErr
	}
	// Only the health fields go to the database.
	objects.ResetChanges(c)
	c.HealthStatus = h.Status
	c.HealthStatusReason = h.Reason
	if c.HealthStatusReason == nil {
		c.HealthStatusReason = map[string]string{}
	}
	if err := j.d.Store.SaveCluster(ctx, c); err != nil {
		if errors.Is(err, exception.ClusterNotFound("")) {
			return stage, pollErr
		}
		return "db", fmt.Errorf("saving health: %w", err)
	}
	return stage, pollErr
}

// poll runs the cluster's monitor with the poll timeout; a panic in the
// monitor is an error like any other.
func (j *SyncClusterHealth) poll(ctx context.Context, d drivers.Driver, c *objects.Cluster, ct *objects.ClusterTemplate) (h drivers.Health, err error) {
	defer func() {
		if p := recover(); p != nil {
			h, err = drivers.Health{}, fmt.Errorf("monitor panic: %v", p)
			j.d.Log.Error("health monitor panicked", "cluster_uuid", objects.Deref(c.UUID), "panic", fmt.Sprint(p),
				"stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, j.o.PollTimeout)
	defer cancel()
	var mon drivers.Monitor
	if mp, ok := d.(drivers.MonitorProvider); ok {
		mon, err = mp.Monitor(ctx, drivers.ClusterRequest{Cluster: objects.Clone(c), Template: objects.Clone(ct)})
	} else if j.d.Monitors != nil {
		mon, err = j.d.Monitors.Monitor(ctx, c)
	}
	if err != nil {
		return drivers.Health{}, fmt.Errorf("building the monitor: %w", err)
	}
	if mon == nil {
		return drivers.Health{}, nil
	}
	return mon.PollHealth(ctx)
}
