package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openstack/magnum-conductor/api/exception"
)

func TestRPCMetricsCountOutcomesPerMethod(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newRPCMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("ping_conductor", time.Millisecond, nil)
	m.observe("ping_conductor", 2*time.Millisecond, nil)
	m.observe("cluster_delete", time.Millisecond, exception.ClusterNotFound("x"))
	m.observe("cluster_delete", time.Millisecond, errors.New("plain"))
	want := `
# HELP magnum_conductor_rpc_requests_total RPC requests handled, by method and outcome (ok, or the exception class returned).
# TYPE magnum_conductor_rpc_requests_total counter
magnum_conductor_rpc_requests_total{method="cluster_delete",outcome="ClusterNotFound"} 1
magnum_conductor_rpc_requests_total{method="cluster_delete",outcome="error"} 1
magnum_conductor_rpc_requests_total{method="ping_conductor",outcome="ok"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "magnum_conductor_rpc_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.latency); n != 2 {
		t.Fatalf("latency series: %d, want one per method (2)", n)
	}
}
