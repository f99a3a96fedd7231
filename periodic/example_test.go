package periodic_test

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/periodic"
)

// Example shows how main wires the periodic tasks from magnum.conf.
func Example() {
	run := func(ctx context.Context, store *db.Store, registry *drivers.Registry, certs interface {
		periodic.CertDeleter
		periodic.ClientCredentials
	}, notifier periodic.Notifier, log *slog.Logger, mux *http.ServeMux) error {
		reg := prometheus.NewRegistry()
		metrics, err := periodic.NewMetrics(reg)
		if err != nil {
			return err
		}
		mux.Handle("/metrics", metrics.Handler())
		host := "conductor-1" // [DEFAULT]host, unique per conductor
		shard, err := periodic.NewMembership(periodic.MembershipOptions{Host: host,
			ServiceDownTime: 180 * time.Second /* [DEFAULT]service_down_time */}, store, periodic.RealClock{}, log, metrics)
		if err != nil {
			return err
		}
		deps := periodic.Deps{Store: store, Drivers: registry, Notifier: notifier, Certs: certs, Sharder: shard,
			Log: log, Metrics: metrics}
		heartbeat, err := periodic.NewHeartbeat(periodic.HeartbeatOptions{Host: host,
			Interval: 60 * time.Second /* [DEFAULT]periodic_interval_max */}, store, log)
		if err != nil {
			return err
		}
		syncStatus, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, deps)
		if err != nil {
			return err
		}
		health, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{
			Interval: 60 * time.Second, // [kubernetes]health_polling_interval
		}, periodic.HealthDeps{Deps: deps, Monitors: periodic.NewKubernetesMonitors(certs, periodic.KubernetesMonitorOptions{})})
		if err != nil {
			return err
		}
		r := periodic.NewRunner(periodic.RunnerOptions{}, log, metrics)
		r.Add(heartbeat, true) // always, first
		// if [DEFAULT]periodic_enable:
		r.Add(syncStatus, true)
		r.Add(health, true)
		r.Run(ctx) // until ctx is cancelled
		return nil
	}
	_ = run
}
