package main

import (
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/test/bench/load"
)

func TestCountClusters(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want int
	}{
		{"empty list", `[]`, 0},
		{"json.dumps layout", `[{"magnum_object.name": "Cluster", "magnum_object.namespace": "magnum", ` +
			`"magnum_object.data": {"name": "Cluster"}}, {"magnum_object.name": "Cluster"}]`, 2},
		{"compact layout", `[{"magnum_object.name":"Cluster"},{"magnum_object.name":"Cluster"}]`, 2},
		{"nested template and other classes", `[{"magnum_object.name": "Cluster", "magnum_object.data": ` +
			`{"cluster_template": {"magnum_object.name": "ClusterTemplate"}}}, {"magnum_object.name": "NodeGroup"}]`, 1},
		{"a value naming the key", `[{"magnum_object.name": "Cluster", "magnum_object.data": ` +
			`{"labels": {"x": "y.name\": \"Cluster\""}}}]`, 1},
		{"another key ending in .name", `[{"magnum_object.name": "Cluster", "magnum_object.data": ` +
			`{"labels": {"x.name": "Cluster"}}}]`, 1},
	} {
		if got := countClusters([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: countClusters = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPairedRounds(t *testing.T) {
	r := &report{
		Raw:    []load.Result{{Callers: 16, Rounds: []float64{4152.25, 3737.25, 2279.5}}},
		Ours:   sideResult{Ping: []load.Result{{Callers: 16, Rounds: []float64{2563, 3053.5, 1989.25}}}, List: []load.Result{{Callers: 1, Rounds: []float64{269, 337.75, 199}}}},
		Python: sideResult{List: []load.Result{{Callers: 1, Rounds: []float64{36, 40.5}}}},
	}
	got := r.pairedRounds()
	for _, want := range []string{
		"ping_conductor, 16 callers, ours/limit: 62%, 82%, 87% (median 82%)",
		"Cluster.list, 1 callers, ours/python: 7.5×, 8.3× (median 7.9×)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("paired rounds:\n%s\nwant a line %q", got, want)
		}
	}
	if formatRatios(nil) != "-" {
		t.Error("no rounds")
	}
}
