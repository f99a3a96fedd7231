package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/conductor"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/periodic"
)

// buildDrivers builds the drivers of the binary's factories (Main's
// arguments; magnum-conductor's are the simulated driver, when
// [simulated_driver]/enabled, and the Cluster API driver, when
// configured). [drivers]/disabled_drivers removes any of them.
func buildDrivers(ctx context.Context, st startup, cfg *config.Config, certs *certmanager.Manager, store *db.Store, log *slog.Logger) (*drivers.Registry, error) {
	env := DriverEnv{
		Config: cfg,
		Options: func(group string, into any) error {
			return config.LoadGroup(st.files, st.dirs, group, into)
		},
		Log: log, Certs: certs, Keystone: keystoneOf(cfg), Lookup: store,
	}
	var ds []drivers.Driver
	for _, f := range st.drivers {
		d, err := f(ctx, env)
		if err != nil {
			return nil, err
		}
		if d != nil {
			ds = append(ds, d)
		}
	}
	return drivers.NewRegistry(cfg.Drivers.DisabledDrivers, ds...)
}

// driverStartWait is how long the conductor waits for its drivers to be
// ready before it serves (a back end that answers at once is ready for the
// first request; one that does not delays the start by this much only).
const driverStartWait = 10 * time.Second

// startDrivers starts the background work of every enabled driver that has
// some (drivers.Runner); it lives as long as ctx.
func startDrivers(ctx context.Context, registry *drivers.Registry, log *slog.Logger) (waitStopped func()) {
	return drivers.StartRunners(ctx, registry.Drivers(), driverStartWait, log.With("component", "drivers"))
}

// statusTimeouts are the status machine's deadlines: a create without
// create_timeout times out after [cluster_heat]/create_timeout, as Magnum's
// Heat poller does; an update after [conductor]/update_timeout, by default
// (-1) as a Heat stack update does, after the stack's timeout (the
// cluster's create_timeout, else [cluster_heat]/create_timeout); deletions
// have none of the conductor's own (a driver may enforce its own, as the
// Cluster API driver does its delete_timeout). An operation interrupted
// before its driver call is resumed after
// [conductor]/interrupted_operation_timeout (by default the driver-call
// deadline plus one sync interval: a handler still running has given up its
// driver call by then), interrupted_operation_attempts times.
func statusTimeouts(cfg *config.Config) statusmachine.Timeouts {
	resume := cfg.Conductor.InterruptedOperationTimeout
	if resume <= 0 {
		resume = driverTimeout(cfg) + syncInterval
	}
	t := statusmachine.Timeouts{Create: cfg.ClusterHeat.CreateTimeout, Resume: resume,
		ResumeAttempts: cfg.Conductor.InterruptedOperationAttempts}
	if u := cfg.Conductor.UpdateTimeout; u < 0 {
		t.UpdateAsCreate = true
	} else {
		t.Update = u
	}
	return t
}

// observesSettled reports whether one of ds asks the status sync to
// observe its settled clusters (drivers.SettledObserver).
func observesSettled(ds []drivers.Driver) bool {
	for _, d := range ds {
		if so, ok := d.(drivers.SettledObserver); ok && so.ObservesSettled() {
			return true
		}
	}
	return false
}

// syncInterval is sync_cluster_status' spacing (Magnum's fixed 10 s).
const syncInterval = 10 * time.Second

// driverTimeout bounds every driver call of an RPC handler or a
// resumption: [conductor]/driver_call_timeout.
func driverTimeout(cfg *config.Config) time.Duration {
	if t := cfg.Conductor.DriverCallTimeout; t > 0 {
		return t
	}
	return driverCallTimeout
}

// heartbeatInterval is the spacing of update_magnum_service. Magnum's task
// has no spacing of its own, so oslo.service runs it every 60 s
// (DEFAULT_INTERVAL), whatever periodic_interval_max says. Ours beats every
// periodic_interval_max below that (the seed's reading, and what lets a
// test beat fast), and never less often than every 60 s: a larger
// periodic_interval_max (above service_down_time, 180 s) would otherwise
// show a live conductor as down in GET /v1/mservices, and hand its
// clusters to the others.
func heartbeatInterval(cfg *config.Config) time.Duration {
	return min(cfg.Default.PeriodicIntervalMax, 60*time.Second)
}

// buildPeriodic wires Magnum's three periodic tasks into one runner.
func buildPeriodic(cfg *config.Config, store *db.Store, registry *drivers.Registry, events *conductor.Notifications,
	certs *certmanager.Manager, handlers *conductor.Handlers, metrics *periodic.Metrics, log *slog.Logger) (*periodic.Runner, error) {
	plog := log.With("component", "periodic")
	runner := periodic.NewRunner(periodic.RunnerOptions{Jitter: 0.05}, plog, metrics)

	heartbeat, err := periodic.NewHeartbeat(periodic.HeartbeatOptions{
		Host: cfg.Default.Host, Binary: periodic.ConductorBinary, Interval: heartbeatInterval(cfg),
	}, store, plog)
	if err != nil {
		return nil, err
	}
	// The heartbeat runs always, as in Magnum; the cluster jobs only with
	// [DEFAULT]/periodic_enable.
	runner.Add(heartbeat, true)
	if !cfg.Default.PeriodicEnable {
		return runner, nil
	}

	mode := periodic.ShardNone
	if cfg.Periodic.Coordination == "hash" {
		mode = periodic.ShardRendezvous
	}
	membership, err := periodic.NewMembership(periodic.MembershipOptions{
		Mode: mode, Host: cfg.Default.Host, Binary: periodic.ConductorBinary,
		ServiceDownTime: cfg.Default.ServiceDownTime,
	}, store, periodic.RealClock{}, plog, metrics)
	if err != nil {
		return nil, err
	}
	deps := periodic.Deps{
		Store: store, Drivers: registry, Notifier: events, Certs: certs,
		Sharder: membership, Log: plog, Metrics: metrics,
	}
	if handlers != nil {
		deps.Resumer = handlers
	}
	sync, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{Timeouts: statusTimeouts(cfg), Spacing: syncInterval,
		Settled: registry != nil && observesSettled(registry.Drivers())}, deps)
	if err != nil {
		return nil, err
	}
	runner.Add(sync, true)

	if cfg.Kubernetes.HealthPollingInterval > 0 {
		monitors := periodic.NewKubernetesMonitors(certs, periodic.KubernetesMonitorOptions{
			ConnectTimeout: cfg.Kubernetes.HealthConnectTimeout,
			RequestTimeout: cfg.Kubernetes.HealthRequestTimeout,
		})
		health, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{
			Interval:    cfg.Kubernetes.HealthPollingInterval,
			Workers:     cfg.Kubernetes.HealthPollWorkers,
			PollTimeout: cfg.Kubernetes.HealthRequestTimeout * 2,
			KeepOnError: cfg.Kubernetes.HealthKeepStatusOnError,
		}, periodic.HealthDeps{Deps: deps, Monitors: monitors})
		if err != nil {
			return nil, err
		}
		runner.Add(health, true)
	}
	return runner, nil
}
