package capi

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack/magnum-conductor/drivers"
)

// Start makes one start attempt bounded by ctx: it checks that the
// management cluster serves cluster.x-k8s.io/v1beta2, starts the informers
// (they then live as long as ctx) and waits for them to sync.
func (d *Driver) Start(ctx context.Context) error { return d.start(ctx, ctx) }

// Run implements drivers.Runner: the start attempts of startRetrying
// (bounded by Options.Start), each failure logged, then the informers
// until ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	run := d.opts.Start
	err := d.startRetrying(ctx, run.AttemptTimeout, run.RetryMin, run.RetryMax, func(attempt int, err error, retryIn time.Duration) {
		d.log.Error("Cluster API management cluster not usable; the driver is registered but refuses every "+
			"operation (its clusters' status stays unchanged) until it answers; retrying",
			"attempt", attempt, "retry_in", retryIn.String(), "attempt_timeout", run.AttemptTimeout.String(), "error", err)
	})
	if err != nil {
		return err
	}
	d.log.Info("Cluster API driver started")
	<-ctx.Done()
	return ctx.Err()
}

// startRetrying starts the driver and keeps trying until it has started or
// ctx ends: each attempt is bounded by attemptTimeout, and a failed one is
// retried after a pause that doubles from retryMin up to retryMax. The
// informers, once started, live as long as ctx and retry their own lists
// and watches. onFail, when not nil, hears about every failed attempt. It
// returns nil once the driver is ready, or ctx's error.
func (d *Driver) startRetrying(ctx context.Context, attemptTimeout, retryMin, retryMax time.Duration, onFail func(attempt int, err error, retryIn time.Duration)) error {
	pause := retryMin
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := d.start(ctx, actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if onFail != nil {
			onFail(attempt, err, pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// start is one attempt: run bounds the informers' life, attempt this try.
func (d *Driver) start(run, attempt context.Context) error {
	d.startMu.Lock()
	defer d.startMu.Unlock()
	if d.ready.Load() {
		return nil
	}
	fail := func(err error) error {
		msg := err.Error()
		d.notReady.Store(&msg)
		return err
	}
	if _, err := d.deps.Dynamic.Resource(gvrCluster).List(attempt, metav1.ListOptions{Limit: 1}); err != nil {
		return fail(fmt.Errorf("capi: the management cluster does not serve %s: %w", gvrCluster.GroupVersion(), err))
	}
	if !d.informersStarted {
		ctx, cancel := context.WithCancel(run)
		d.cache.Load().start(ctx, cancel)
		d.informersStarted = true
	}
	if err := d.cache.Load().waitForSync(attempt); err != nil {
		return fail(err)
	}
	d.ready.Store(true)
	d.notReady.Store(nil)
	go d.watchManagement(run)
	// Said once at start, not only at the first create: a class the
	// management cluster's providers do not serve (cluster_class_version
	// magnum-v1 to v4 on a released CAPO) refuses every create and upgrade.
	if err := d.classNotServed("create_cluster", d.opts.ClusterClassVersion); err != nil {
		d.log.Warn("the configured ClusterClass cannot be applied on this management cluster: creates and upgrades are refused until it can",
			"class", className(d.opts.ClusterClassVersion), "reason", err.Error())
	}
	return nil
}

// Ready implements drivers.Runner: nil once the driver has started, else
// why not (wrapping drivers.ErrNotReady).
func (d *Driver) Ready() error { return d.usable() }

// usable is the guard at the top of every operation that needs the
// management cluster: until the driver has started it returns an error
// wrapping drivers.ErrNotReady, with the last start failure.
func (d *Driver) usable() error {
	if d.ready.Load() {
		return nil
	}
	why := "starting"
	if w := d.notReady.Load(); w != nil {
		why = *w
	}
	return fmt.Errorf("capi: the Cluster API management cluster is not usable yet (%s): %w", why, drivers.ErrNotReady)
}
