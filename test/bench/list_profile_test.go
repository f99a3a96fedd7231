package main

import (
	"context"
	"encoding/json"
	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/test/bench/rawamqp"
	"github.com/openstack/magnum-conductor/test/harness"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
	"github.com/openstack/magnum-conductor/conductor/indirection"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// BenchmarkClusterList profiles our Cluster.list path in process (store,
// indirection, primitive encoding, the reply's JSON) on MariaDB with the benchmark's
// seed, without the broker:
//
//	go test ./test/bench -run '^$' -bench ClusterList -cpuprofile /tmp/list.prof
func BenchmarkClusterList(b *testing.B) {
	ctx := context.Background()
	s := seededStore(b, 100)
	h := indirection.New(s, slog.New(slog.DiscardHandler))
	args := []json.RawMessage{json.RawMessage("1000"), json.RawMessage("null")}
	kwargs := map[string]json.RawMessage{"sort_key": json.RawMessage(`"id"`), "sort_dir": json.RawMessage(`"asc"`),
		"filters": json.RawMessage("{}")}
	defer reportCPU(b)()
	var reply []byte
	for b.Loop() {
		res, err := h.ObjectClassAction(adminCtx(ctx), "Cluster", "list", "1.23", args, kwargs)
		if err != nil {
			b.Fatal(err)
		}
		buf, ok := res.(*pyjson.Buffer)
		if !ok || !buf.Escaped {
			b.Fatalf("result %T is not an escaped buffer", res)
		}
		reply = append(reply[:0], buf.B...) // as the RPC server copies it into the reply
		buf.Release()                       // as the RPC server does once the reply is written
	}
}

// BenchmarkClusterListRPC is BenchmarkClusterList through the real broker:
// our RPC server with the indirection API in this process, and the load
// generator's client (which counts the clusters without decoding them), so
// one profile shows both ends:
//
//	go test ./test/bench -run '^$' -bench ClusterListRPC -cpuprofile /tmp/listrpc.prof
func BenchmarkClusterListRPC(b *testing.B) {
	ctx := context.Background()
	st := seededStore(b, 100)
	opts := oslo.DefaultOptions()
	opts.TransportURL = harness.Broker
	opts.ControlExchange = rawamqp.RandomName("bench_list_x_")
	topic := rawamqp.RandomName("bench_list_t_")
	log := slog.New(slog.DiscardHandler)
	d := oslo.NewDispatcher()
	if err := indirection.New(st, log).Register(d); err != nil {
		b.Fatal(err)
	}
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{}, oslo.Target{Topic: topic}, d, log)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Stop(ctx) }()
	c, err := oslo.NewClient(opts, log)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s := &server{label: "ours", api: conductorapi.New(c, topic)}
	if n, err := listClustersFast(ctx, s); err != nil || n != 100 {
		b.Fatalf("list: %d, %v", n, err)
	}
	defer reportCPU(b)()
	for b.Loop() {
		if n, err := listClustersFast(ctx, s); err != nil || n != 100 {
			b.Fatalf("list: %d, %v", n, err)
		}
	}
}

// reportCPU reports the CPU time of this process per operation (the
// function it returns must run after the loop). On two cores shared with the
// broker and the database, wall time per operation moves by 20 % from run to
// run; the process's own CPU moves less.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-us/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seededStore is a migrated MariaDB database with the benchmark's seed of n
// clusters.
func seededStore(b *testing.B, n int) *db.Store {
	ctx := context.Background()
	s := dbtest.MySQLStore(b, db.Options{}, nil)
	seed := newSeed(n)
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
	return s
}
