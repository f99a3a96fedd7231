package main

import (
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/test/bench/load"
	"github.com/openstack/magnum-conductor/test/bench/procstat"
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

func TestMemoryRows(t *testing.T) {
	mem := func(rss, pss int64) procstat.Mem { return procstat.Mem{RSS: rss << 20, PSS: pss << 20, Procs: 1} }
	r := &report{IdleAfter: 30}
	r.Python.SeededMem, r.Python.IdleMem = mem(340, 184), mem(346, 186)
	r.Ours.SeededMem, r.Ours.IdleMem = mem(31, 30), mem(19, 18)
	table := r.table()
	for _, want := range []string{
		"memory 5 s after seeding (MiB)  RSS 340.0, PSS 184.0 (1 procs)",
		"idle memory, 30 s after start (MiB)  RSS 346.0, PSS 186.0 (1 procs)",
		"RSS 19.0, PSS 18.0",
		"10% of PSS",
	} {
		if !strings.Contains(strings.Join(strings.Fields(table), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("table:\n%s\nwant %q", table, want)
		}
	}
	// A report from before the settled measurement: one row, as it was.
	old := &report{}
	old.Ours.IdleMem = mem(31, 30)
	if table := old.table(); strings.Contains(table, "after seeding") || !strings.Contains(table, "idle memory (MiB)") {
		t.Errorf("an older report's table:\n%s", table)
	}
}
