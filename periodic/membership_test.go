package periodic_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/periodic"
)

func svc(host, binary string, lastSeen, updated, created *time.Time, forced bool) *objects.MagnumService {
	return &objects.MagnumService{Host: objects.Str(host), Binary: objects.Str(binary), LastSeenUp: lastSeen,
		UpdatedAt: updated, CreatedAt: created, ForcedDown: forced}
}

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func TestLiveHostsFollowsTheAPIUpRule(t *testing.T) {
	down := 180 * time.Second
	rows := []*objects.MagnumService{
		svc("fresh", "magnum-conductor", at(-10*time.Second), nil, nil, false),
		svc("edge", "magnum-conductor", at(-180*time.Second), nil, nil, false),
		svc("stale", "magnum-conductor", at(-181*time.Second), nil, nil, false),
		svc("forced", "magnum-conductor", at(0), nil, nil, true),
		svc("updated-only", "magnum-conductor", nil, at(-5*time.Second), at(-500*time.Second), false),
		svc("created-only", "magnum-conductor", nil, nil, at(-5*time.Second), false),
		svc("never", "magnum-conductor", nil, nil, nil, false),
		svc("api", "magnum-api", at(0), nil, nil, false),
		svc("future", "magnum-conductor", at(100*time.Second), nil, nil, false),
	}
	got := periodic.LiveHosts(rows, "magnum-conductor", t0, down)
	want := []string{"created-only", "edge", "fresh", "future", "updated-only"}
	if !slices.Equal(got, want) {
		t.Fatalf("live = %v, want %v", got, want)
	}
}

func TestRendezvousOwnerIsStableAndBalanced(t *testing.T) {
	hosts := []string{"a", "b", "c"}
	counts := map[string]int{}
	moved := 0
	for i := range 3000 {
		key := fmt.Sprintf("c0000000-0000-4000-8000-%012d", i)
		o := periodic.Owner(hosts, key)
		counts[o]++
		if o2 := periodic.Owner([]string{"c", "a", "b"}, key); o2 != o {
			t.Fatalf("owner depends on host order: %s vs %s", o, o2)
		}
		// Removing c moves only c's clusters.
		after := periodic.Owner([]string{"a", "b"}, key)
		if o != "c" && after != o {
			t.Fatalf("cluster %s moved from %s to %s though %s is alive", key, o, after, o)
		}
		if o == "c" {
			moved++
		}
	}
	for _, h := range hosts {
		if counts[h] < 800 || counts[h] > 1200 {
			t.Fatalf("unbalanced: %v", counts)
		}
	}
	if periodic.Owner(nil, "x") != "" {
		t.Fatal("no hosts must own nothing")
	}
}

func TestMembershipSharesAndTakesOver(t *testing.T) {
	ctx := context.Background()
	clock := periodic.NewManualClock(t0)
	store := newMemStore()
	store.now = clock.Now
	var ms []*periodic.Membership
	for _, h := range []string{"a", "b", "c"} {
		if _, err := store.ReportServiceUp(ctx, h, "magnum-conductor"); err != nil {
			t.Fatal(err)
		}
		m, err := periodic.NewMembership(periodic.MembershipOptions{Host: h}, store, clock, testLog(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	owners := func(live int) map[string]int {
		t.Helper()
		var shards []periodic.Shard
		for _, m := range ms {
			s, err := m.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			shards = append(shards, s)
		}
		per := map[string]int{}
		for i := range 300 {
			key := fmt.Sprintf("k%d", i)
			n := 0
			for j, s := range shards {
				if s.Owns(key) {
					n++
					per[[]string{"a", "b", "c"}[j]]++
				}
			}
			if n != 1 {
				t.Fatalf("%s owned by %d conductors", key, n)
			}
		}
		if len(shards[0].Hosts()) != live {
			t.Fatalf("live hosts %v, want %d", shards[0].Hosts(), live)
		}
		return per
	}
	owners(3)
	// c stops heartbeating; a and b go on. After service_down_time c's
	// clusters move to them, and c (were it still running) owns nothing.
	clock.Advance(181 * time.Second)
	for _, h := range []string{"a", "b"} {
		if _, err := store.ReportServiceUp(ctx, h, "magnum-conductor"); err != nil {
			t.Fatal(err)
		}
	}
	// c's view counts c as dead too, so the 300 keys still have one owner
	// each (a or b).
	per := owners(2)
	if per["c"] != 0 || per["a"]+per["b"] != 300 {
		t.Fatalf("after take-over: %v", per)
	}
}

// TestMembershipWithNoLiveConductorHandlesEverything: after a database
// outage longer than service_down_time every heartbeat is stale, this
// conductor's included. Nobody else handles the clusters then, so it must
// handle them all rather than skip the cycle (#28 item 2); as soon as
// another conductor is live again, this one, still stale, leaves them.
func TestMembershipWithNoLiveConductorHandlesEverything(t *testing.T) {
	ctx := context.Background()
	clock := periodic.NewManualClock(t0)
	store := newMemStore()
	store.now = clock.Now
	for _, h := range []string{"a", "b"} {
		if _, err := store.ReportServiceUp(ctx, h, "magnum-conductor"); err != nil {
			t.Fatal(err)
		}
	}
	m, err := periodic.NewMembership(periodic.MembershipOptions{Host: "a"}, store, clock, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(181 * time.Second) // both heartbeats stale
	s, err := m.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if key := fmt.Sprintf("k%d", i); !s.Owns(key) {
			t.Fatalf("no conductor is live and %s is not handled by a", key)
		}
	}
	// b's heartbeat comes back first: a, still stale, leaves everything to b.
	if _, err := store.ReportServiceUp(ctx, "b", "magnum-conductor"); err != nil {
		t.Fatal(err)
	}
	if s, err = m.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if key := fmt.Sprintf("k%d", i); s.Owns(key) {
			t.Fatalf("b is live, a is not, and a still handles %s", key)
		}
	}
}

func TestMembershipOptionsAreChecked(t *testing.T) {
	store := newMemStore()
	for _, o := range []periodic.MembershipOptions{{Mode: periodic.ShardRendezvous}, {Mode: "zookeeper", Host: "a"}} {
		if _, err := periodic.NewMembership(o, store, nil, testLog(t), nil); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
	m, err := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, nil, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Snapshot(context.Background())
	if !s.Owns("anything") {
		t.Fatal("mode none must own every cluster")
	}
}

func TestMetricsAreServedFromTheGivenRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := periodic.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	deps := e.deps
	deps.Metrics = m
	job, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: e.clock}, testLog(t), m)
	e.addCluster(1, objects.CreateInProgress, "create", nil, "ct")
	e.addCluster(2, objects.DeleteInProgress, "delete", nil, "ct")
	e.addCluster(3, objects.UpdateInProgress, "update", nil, "missing-template")
	r.RunJob(context.Background(), job)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`magnum_conductor_periodic_cycle_duration_seconds_count{task="sync_cluster_status"} 1`,
		`magnum_conductor_periodic_clusters{status="CREATE_IN_PROGRESS",task="sync_cluster_status"} 1`,
		`magnum_conductor_periodic_clusters{status="DELETE_IN_PROGRESS",task="sync_cluster_status"} 1`,
		`magnum_conductor_periodic_clusters_handled{task="sync_cluster_status"} 3`,
		`magnum_conductor_periodic_cluster_failures_total{stage="driver",task="sync_cluster_status"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	if _, err := periodic.NewMetrics(reg); err == nil {
		t.Fatal("registering twice must fail")
	}
}

func TestHeartbeatDetectsASharedHost(t *testing.T) {
	store := newMemStore()
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, nil))
	a, _ := periodic.NewHeartbeat(periodic.HeartbeatOptions{Host: "same"}, store, log)
	b, _ := periodic.NewHeartbeat(periodic.HeartbeatOptions{Host: "same"}, store, log)
	ctx := context.Background()
	for _, h := range []*periodic.Heartbeat{a, a, b, a} {
		if err := h.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(buf.String(), "another process reports as this conductor's host") {
		t.Fatalf("no error logged:\n%s", buf.String())
	}
	if a.Spacing() != 60*time.Second || a.Name() != "update_magnum_service" {
		t.Fatalf("spacing %v name %s", a.Spacing(), a.Name())
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
