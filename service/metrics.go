package service

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openstack/magnum-conductor/api/exception"
)

// rpcMetrics counts RPC requests per method and outcome and records their
// latency, fed by the dispatcher's observer.
type rpcMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newRPCMetrics(reg prometheus.Registerer) (*rpcMetrics, error) {
	m := &rpcMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "magnum_conductor", Subsystem: "rpc", Name: "requests_total",
			Help: "RPC requests handled, by method and outcome (ok, or the exception class returned).",
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "magnum_conductor", Subsystem: "rpc", Name: "duration_seconds",
			Help:    "Time spent in the RPC handler, by method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe is the dispatcher's observer. The outcome label is bounded: "ok",
// a class of the Magnum or oslo exception catalogue, or "error".
func (m *rpcMetrics) observe(method string, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
		var e *exception.Error
		if errors.As(err, &e) {
			outcome = e.Class
		}
	}
	m.requests.WithLabelValues(method, outcome).Inc()
	m.latency.WithLabelValues(method).Observe(took.Seconds())
}
