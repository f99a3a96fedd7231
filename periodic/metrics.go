package periodic

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the periodic tasks' Prometheus metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	gatherer        prometheus.Gatherer
	cycleDuration   *prometheus.HistogramVec
	cycleErrors     *prometheus.CounterVec
	clusters        *prometheus.GaugeVec
	handled         *prometheus.GaugeVec
	pollFailures    *prometheus.CounterVec
	skippedInFlight *prometheus.CounterVec
	health          *prometheus.GaugeVec
	liveConductors  prometheus.Gauge
}

// NewMetrics registers the metrics with reg (never the global default
// registry).
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	m := &Metrics{
		gatherer: reg,
		cycleDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "cycle_duration_seconds",
			Help:    "Duration of one run of a periodic task.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"task"}),
		cycleErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "cycle_errors_total",
			Help: "Runs of a periodic task that failed as a whole.",
		}, []string{"task"}),
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "clusters",
			Help: "Clusters per status seen by the last run of a task (all conductors see the same rows).",
		}, []string{"task", "status"}),
		handled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "clusters_handled",
			Help: "Clusters this conductor handled in the last run of a task.",
		}, []string{"task"}),
		pollFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "cluster_failures_total",
			Help: "Per-cluster failures (driver status poll, health poll, save).",
		}, []string{"task", "stage"}),
		skippedInFlight: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "clusters_skipped_in_flight_total",
			Help: "Clusters skipped because their previous run was still in progress.",
		}, []string{"task"}),
		health: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "cluster_health",
			Help: "Clusters per health status found by this conductor's last health run.",
		}, []string{"health_status"}),
		liveConductors: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "magnum_conductor", Subsystem: "periodic", Name: "live_conductors",
			Help: "Live conductors sharing the periodic work, as last seen.",
		}),
	}
	for _, c := range []prometheus.Collector{m.cycleDuration, m.cycleErrors, m.clusters, m.handled,
		m.pollFailures, m.skippedInFlight, m.health, m.liveConductors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Handler serves the registry's metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

func (m *Metrics) observeCycle(task string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.cycleDuration.WithLabelValues(task).Observe(d.Seconds())
	if err != nil {
		m.cycleErrors.WithLabelValues(task).Inc()
	}
}

func (m *Metrics) setClusters(task string, byStatus map[string]int, statuses []string) {
	if m == nil {
		return
	}
	for _, s := range statuses {
		m.clusters.WithLabelValues(task, s).Set(float64(byStatus[s]))
	}
}

func (m *Metrics) setHandled(task string, n int) {
	if m == nil {
		return
	}
	m.handled.WithLabelValues(task).Set(float64(n))
}

func (m *Metrics) failure(task, stage string) {
	if m == nil {
		return
	}
	m.pollFailures.WithLabelValues(task, stage).Inc()
}

func (m *Metrics) skipped(task string) {
	if m == nil {
		return
	}
	m.skippedInFlight.WithLabelValues(task).Inc()
}

func (m *Metrics) setHealth(counts map[string]int) {
	if m == nil {
		return
	}
	for _, s := range []string{"HEALTHY", "UNHEALTHY", "UNKNOWN"} {
		m.health.WithLabelValues(s).Set(float64(counts[s]))
	}
}

func (m *Metrics) setLive(n int) {
	if m == nil {
		return
	}
	m.liveConductors.Set(float64(n))
}
