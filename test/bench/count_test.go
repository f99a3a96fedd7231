package main

import "testing"

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
