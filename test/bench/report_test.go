package main

import (
	"encoding/json"
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
		Raw:          []load.Result{{Callers: 16, Rounds: []float64{4152.25, 3737.25, 2279.5}}},
		RawListWire:  []load.Result{{Callers: 1, Rounds: []float64{1500, 1620}}},
		RawListQuery: []load.Result{{Callers: 1, Rounds: []float64{900, 1012.5}}},
		Ours:         sideResult{Ping: []load.Result{{Callers: 16, Rounds: []float64{2563, 3053.5, 1989.25}}}, List: []load.Result{{Callers: 1, Rounds: []float64{269, 337.75, 199}}}},
		Python:       sideResult{List: []load.Result{{Callers: 1, Rounds: []float64{36, 40.5}}}},
	}
	got := r.pairedRounds()
	for _, want := range []string{
		"ping_conductor, 16 callers, ours/limit: 62%, 82%, 87% (median 82%)",
		"Cluster.list, 1 callers, ours/python: 7.5×, 8.3× (median 7.9×)",
		"Cluster.list, 1 callers, limit/python (the most any server could reach): 42×, 40× (median 41×)",
		"Cluster.list, 1 callers, limit after the query/python (the most a server reading MariaDB could reach): 25×, 25× (median 25×)",
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

// TestListRowsShowTheListCeiling: with the list-sized raw cells, the
// Cluster.list rows carry the limit and ours over it, and the raw section
// the limit over Python.
func TestListRowsShowTheListCeiling(t *testing.T) {
	r := &report{Clusters: 100, ListReplyBytes: 123456,
		Raw:          []load.Result{{Callers: 1, PerSec: 3000}},
		RawListWire:  []load.Result{{Callers: 1, PerSec: 2000}},
		RawListQuery: []load.Result{{Callers: 1, PerSec: 1000}},
		Python:       sideResult{Ping: []load.Result{{Callers: 1, PerSec: 1000}}, List: []load.Result{{Callers: 1, PerSec: 50}}},
		Ours:         sideResult{Ping: []load.Result{{Callers: 1, PerSec: 2500}}, List: []load.Result{{Callers: 1, PerSec: 500}}},
	}
	table := strings.Join(strings.Fields(r.table()), " ")
	for _, want := range []string{
		"Cluster.list (100 clusters), 1 callers 50/s (p50 0.00, p99 0.00 ms) 500/s (p50 0.00, p99 0.00 ms) 2000/s (p50 0.00, p99 0.00 ms) 10× 25%",
		"same with a Cluster.list reply (123456 bytes) - - 2000/s (p50 0.00, p99 0.00 ms) limit/python 40× 25%",
		"same after the list's query - - 1000/s (p50 0.00, p99 0.00 ms) limit/python 20× 50%",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table:\n%s\nwant %q", r.table(), want)
		}
	}
}

// TestListReplyIsOslosEnvelope: the raw server's list reply is the 2.0
// envelope around the reply message holding the result as it is.
func TestListReplyIsOslosEnvelope(t *testing.T) {
	result := `[{"magnum_object.name": "Cluster", "magnum_object.data": {"name": "a \"quoted\" \u00e9"}}]`
	var env struct {
		Version string `json:"oslo.version"`
		Message string `json:"oslo.message"`
	}
	if err := json.Unmarshal(listReply([]byte(result)), &env); err != nil || env.Version != "2.0" {
		t.Fatalf("envelope %+v: %v", env, err)
	}
	var inner struct {
		Result  json.RawMessage `json:"result"`
		Failure *string         `json:"failure"`
		Ending  bool            `json:"ending"`
		MsgID   string          `json:"_msg_id"`
	}
	if err := json.Unmarshal([]byte(env.Message), &inner); err != nil {
		t.Fatal(err)
	}
	if string(inner.Result) != result || inner.Failure != nil || !inner.Ending || inner.MsgID == "" {
		t.Fatalf("inner %+v", inner)
	}
}

// TestTableHasMagnum2026Rows: the 23.0.0 conductor gets its own rows, with
// ours over it, and its errors count in the run's.
func TestTableHasMagnum2026Rows(t *testing.T) {
	r := &report{Clusters: 100, Creates: 50, Python2026Schema: "rev23",
		Ours:         sideResult{Ping: []load.Result{{Callers: 1, PerSec: 1500}}, List: []load.Result{{Callers: 1, PerSec: 300}}},
		OursList2026: []load.Result{{Callers: 1, PerSec: 400}}}
	r.side(labelPython2026).Ping = []load.Result{{Callers: 1, PerSec: 500}}
	r.side(labelPython2026).List = []load.Result{{Callers: 1, PerSec: 40, Errors: 2}}
	table := r.table()
	for _, want := range []string{"python 23.0.0", "alembic rev23", "ping_conductor, 1 callers", "3.0×", "10×"} {
		if !strings.Contains(table[strings.Index(table, "Magnum 23.0.0"):], want) {
			t.Errorf("the 23.0.0 rows lack %q:\n%s", want, table)
		}
	}
	if r.errors() != 2 {
		t.Errorf("errors() = %d, want the 23.0.0 conductor's 2", r.errors())
	}
}
