package capi

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack/magnum-conductor/drivers"
)

// lostState is why and since when the management cluster has not answered
// after the driver had started.
type lostState struct {
	since time.Time
	why   string
}

// probe asks the management cluster for one Cluster, bounded by
// ProbeTimeout: the cheapest request that proves it serves
// cluster.x-k8s.io/v1beta2 to this conductor.
func (d *Driver) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.ProbeTimeout)
	defer cancel()
	_, err := d.deps.Dynamic.Resource(gvrCluster).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// kickProbe asks the watcher for a probe now (an informer's list or watch
// failed); it never blocks.
func (d *Driver) kickProbe(error) {
	select {
	case d.probeKick <- struct{}{}:
	default:
	}
}

// markLost records that the management cluster stopped answering (the
// first failure is kept) and says so once.
func (d *Driver) markLost(err error) {
	l := &lostState{since: d.now(), why: err.Error()}
	if d.lost.CompareAndSwap(nil, l) {
		d.log.Error("the Cluster API management cluster does not answer: cluster status sync leaves its clusters as they are and health reads UNKNOWN until it answers again",
			"error", err)
	}
}

// watchManagement runs from the first successful start until run ends. It
// probes the management cluster every ProbeInterval, and at once when an
// informer's list or watch fails. A failed probe marks the driver lost.
// The first probe that succeeds afterwards rebuilds the informer caches
// (a fresh list of everything, instead of whatever the informers' backoff
// would have caught up with by then) and only then clears the mark, so a
// status sync never judges a cluster, or its deadline, by a cache that
// stopped following the management cluster.
func (d *Driver) watchManagement(run context.Context) {
	tick := time.NewTicker(d.opts.ProbeInterval)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-run.Done():
			return
		case <-tick.C:
		case <-d.probeKick:
			// Informers retry with their own backoff; probe at most once
			// a second on their account.
			if wait := time.Second - time.Since(last); wait > 0 {
				select {
				case <-run.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		err := d.probe(run)
		if run.Err() != nil {
			return
		}
		if err != nil {
			d.markLost(err)
			continue
		}
		if d.lost.Load() != nil {
			d.recover(run)
		}
	}
}

// recover replaces the informer caches with new, synced ones and clears
// the lost mark; when the new caches do not sync within CacheSyncTimeout
// the driver stays lost and the next probe tries again.
func (d *Driver) recover(run context.Context) {
	fresh, err := newStateCache(d.deps.Dynamic, d.opts.ResyncPeriod, d.kickProbe, d.opts.AddOns.Enabled, d.infraConfig())
	if err != nil {
		d.log.Error("rebuilding the Cluster API informer caches", "error", err)
		return
	}
	ctx, stop := context.WithCancel(run)
	fresh.start(ctx, stop)
	sctx, cancel := context.WithTimeout(run, d.opts.CacheSyncTimeout)
	err = fresh.waitForSync(sctx)
	cancel()
	if err != nil {
		stop()
		d.log.Warn("the Cluster API management cluster answers again, but the informer caches did not fill; still treated as lost",
			"error", err)
		return
	}
	old := d.cache.Swap(fresh)
	old.stop()
	if l := d.lost.Swap(nil); l != nil {
		d.log.Info("the Cluster API management cluster answers again; informer caches refilled",
			"lost_for", d.now().Sub(l.since).Round(time.Second).String())
	}
}

// current is the guard of the operations that read the informer caches to
// judge a cluster (status sync, health): besides usable, the management
// cluster must not be lost.
func (d *Driver) current() error {
	if err := d.usable(); err != nil {
		return err
	}
	if l := d.lost.Load(); l != nil {
		return fmt.Errorf("capi: the Cluster API management cluster has not answered since %s (%s): %w",
			l.since.UTC().Format(time.RFC3339), l.why, drivers.ErrNotReady)
	}
	return nil
}

// confirmReachable is asked before a status sync fails a cluster on its
// deadline: a probe must answer first, since a cache that stopped following
// the management cluster only a moment ago looks the same as a stuck
// cluster.
func (d *Driver) confirmReachable(ctx context.Context) error {
	if err := d.probe(ctx); err != nil {
		if ctx.Err() == nil {
			d.markLost(err)
			d.kickProbe(err)
		}
		return fmt.Errorf("capi: a deadline passed, but the Cluster API management cluster does not answer (%v): %w",
			err, drivers.ErrNotReady) //nolint:errorlint // ErrNotReady is the cause callers test; the management cluster's error is there for the reader
	}
	return d.current()
}
