package main

import (
	"context"
	"encoding/json"
	"github.com/openstack/magnum-conductor/api/pyjson"
	"log/slog"
	"testing"

	"github.com/openstack/magnum-conductor/conductor/indirection"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/migrations"
)

// BenchmarkClusterList profiles our Cluster.list path in process (store,
// indirection, primitive encoding, the reply's JSON) on MariaDB with the benchmark's
// seed, without the broker:
//
//	go test ./test/bench -run '^$' -bench ClusterList -cpuprofile /tmp/list.prof
func BenchmarkClusterList(b *testing.B) {
	_, url := dbtest.MySQL(b)
	ctx := context.Background()
	raw, err := db.Open(ctx, db.Options{Connection: url, SkipSchemaCheck: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := migrations.New(raw.SQLDB(), raw.Dialect(), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Upgrade(ctx, ""); err != nil {
		b.Fatal(err)
	}
	_ = raw.Close()
	s, err := db.Open(ctx, db.Options{Connection: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seed := newSeed(100)
	if err := s.CreateClusterTemplate(ctx, seed.template); err != nil {
		b.Fatal(err)
	}
	for _, c := range seed.clusters {
		if err := s.CreateCluster(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	for _, ng := range seed.ngs {
		if err := s.CreateNodeGroup(ctx, ng); err != nil {
			b.Fatal(err)
		}
	}
	h := indirection.New(s, slog.New(slog.DiscardHandler))
	args := []json.RawMessage{json.RawMessage("1000"), json.RawMessage("null")}
	kwargs := map[string]json.RawMessage{"sort_key": json.RawMessage(`"id"`), "sort_dir": json.RawMessage(`"asc"`),
		"filters": json.RawMessage("{}")}
	b.ResetTimer()
	for b.Loop() {
		res, err := h.ObjectClassAction(adminCtx(ctx), "Cluster", "list", "1.23", args, kwargs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pyjson.Append(nil, res); err != nil { // as the RPC server writes the reply
			b.Fatal(err)
		}
	}
}
