package periodic_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
	"github.com/openstack/magnum-conductor/periodic"
)

// seedMany inserts n clusters (two nodegroups each) with 32 writers.
func seedMany(b *testing.B, s *db.Store, ct string, n int, status string, mk func(i int, c *objects.Cluster)) {
	b.Helper()
	ctx := context.Background()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				uuid := fmt.Sprintf("c0000000-0000-4000-8000-%012d", i)
				c := &objects.Cluster{UUID: objects.Str(uuid), Name: objects.Str(fmt.Sprintf("c%d", i)),
					ProjectID: objects.Str("p"), UserID: objects.Str("u"), ClusterTemplateID: objects.Str(ct),
					Status: status, Labels: map[string]string{}, FloatingIPEnabled: true,
					StackID: objects.Str(simulated.StackID("update", t0))}
				mk(i, c)
				err := s.CreateCluster(ctx, c)
				for _, ng := range []*objects.NodeGroup{
					{UUID: "a" + uuid[1:], Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, IsDefault: true},
					{UUID: "b" + uuid[1:], Name: "default-worker", Role: objects.RoleWorker, NodeCount: 3, IsDefault: true},
				} {
					if err != nil {
						break
					}
					ng.ClusterID, ng.ProjectID, ng.Status, ng.Labels, ng.StackID = uuid, "p", status, map[string]string{}, c.StackID
					err = s.CreateNodeGroup(ctx, ng)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// BenchmarkSyncCycle10kInProgress runs one sync_cluster_status cycle over
// 10,000 UPDATE_IN_PROGRESS clusters on MariaDB that the simulated driver
// all completes: 10,000 conditional cluster saves, 20,000 nodegroup saves
// and 10,000 notifications per cycle.
func BenchmarkSyncCycle10kInProgress(b *testing.B) {
	const n = 10000
	s, _ := openDB(b)
	ct := seedTemplate(b, s)
	seedMany(b, s, ct, n, objects.UpdateInProgress, func(int, *objects.Cluster) {})
	clock := periodic.NewManualClock(t0.Add(time.Hour))
	sim := simulated.New(simulated.Options{Delay: time.Minute, Now: clock.Now})
	reg, _ := drivers.NewRegistry(nil, sim)
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(b), nil)
	notifier := &recNotifier{}
	job, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, periodic.Deps{Store: s, Drivers: reg,
		Notifier: notifier, Sharder: shard, Log: testLog(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var cost cycleCost
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if _, err := s.SQLDB().ExecContext(ctx, "UPDATE cluster SET status = 'UPDATE_IN_PROGRESS'"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.SQLDB().ExecContext(ctx, "UPDATE nodegroup SET status = 'UPDATE_IN_PROGRESS'"); err != nil {
			b.Fatal(err)
		}
		notifier.mu.Lock()
		notifier.events = nil
		notifier.mu.Unlock()
		q0, cpu0 := serverQuestions(b, s), cpuTime()
		b.StartTimer()
		if err := job.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cost.add(cpuTime()-cpu0, serverQuestions(b, s)-q0)
		if got := len(notifier.all()); got != n {
			b.Fatalf("%d notifications, want %d", got, n)
		}
		if left, _ := s.CountClusters(ctx, db.ClusterFilters{Status: []string{objects.UpdateInProgress}}); left != 0 {
			b.Fatalf("%d clusters still in progress", left)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n), "clusters/op")
	cost.report(b)
}

// BenchmarkSyncCycle10kNothingDone is the steady state: 10,000 clusters in
// progress that the driver reports unchanged (no writes).
func BenchmarkSyncCycle10kNothingDone(b *testing.B) {
	const n = 10000
	s, _ := openDB(b)
	ct := seedTemplate(b, s)
	seedMany(b, s, ct, n, objects.UpdateInProgress, func(int, *objects.Cluster) {})
	clock := periodic.NewManualClock(t0)
	sim := simulated.New(simulated.Options{Delay: time.Hour, Now: clock.Now})
	reg, _ := drivers.NewRegistry(nil, sim)
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(b), nil)
	job, err := periodic.NewSyncClusterStatus(periodic.SyncOptions{}, periodic.Deps{Store: s, Drivers: reg,
		Notifier: &recNotifier{}, Sharder: shard, Log: testLog(b)})
	if err != nil {
		b.Fatal(err)
	}
	var cost cycleCost
	for b.Loop() {
		b.StopTimer()
		q0, cpu0 := serverQuestions(b, s), cpuTime()
		b.StartTimer()
		if err := job.RunOnce(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cost.add(cpuTime()-cpu0, serverQuestions(b, s)-q0)
		b.StartTimer()
	}
	b.ReportMetric(float64(n), "clusters/op")
	cost.report(b)
}

// cycleCost accumulates the conductor's CPU time and the SQL statements the
// database server received per cycle.
type cycleCost struct {
	cycles  int
	cpu     time.Duration
	queries int64
}

func (c *cycleCost) add(cpu time.Duration, queries int64) {
	c.cycles++
	c.cpu += cpu
	c.queries += queries
}

func (c *cycleCost) report(b *testing.B) {
	if c.cycles == 0 {
		return
	}
	b.ReportMetric(c.cpu.Seconds()/float64(c.cycles), "cpu-s/cycle")
	b.ReportMetric(float64(c.queries)/float64(c.cycles), "queries/cycle")
}

// serverQuestions reads MariaDB's global count of statements received
// (run the benchmark alone: other clients' statements count too). The
// SHOW itself is subtracted.
func serverQuestions(b *testing.B, s *db.Store) int64 {
	b.Helper()
	var name string
	var v int64
	if err := s.SQLDB().QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &v); err != nil {
		b.Fatal(err)
	}
	return v - 1
}

// BenchmarkHealthCycle10kWith5PercentBlackHoles runs one health cycle over
// 10,000 clusters polled with the Kubernetes monitor and default timeouts
// and workers: 95 % answer from local TLS API servers (mutual TLS), 5 %
// point at a listener that accepts and never answers.
func BenchmarkHealthCycle10kWith5PercentBlackHoles(b *testing.B) {
	const n = 10000
	pki := newTestPKI(b)
	var servers []string
	for range 4 {
		servers = append(servers, fakeAPIServer(b, pki,
			k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": "True", "n1": "True", "n2": "True"}))).URL)
	}
	hole := newBlackHole(b).URL()
	s, _ := openDB(b)
	ct := seedTemplate(b, s)
	seedMany(b, s, ct, n, objects.CreateComplete, func(i int, c *objects.Cluster) {
		api := servers[i%len(servers)]
		if i%20 == 0 {
			api = hole
		}
		c.APIAddress = objects.Str(api)
	})
	clock := periodic.NewManualClock(t0)
	reg, _ := drivers.NewRegistry(nil, k8sOnly{simulated.New(simulated.Options{Now: clock.Now})})
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(b), nil)
	mons := periodic.NewKubernetesMonitors(&credentials{pki: pki}, periodic.KubernetesMonitorOptions{})
	job, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute},
		periodic.HealthDeps{Deps: periodic.Deps{Store: s, Drivers: reg, Sharder: shard, Log: testLog(b)}, Monitors: mons})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		if _, err := s.SQLDB().ExecContext(ctx, "UPDATE cluster SET health_status = NULL, health_status_reason = NULL"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime()
		if err := job.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpu0
		b.StopTimer()
		if elapsed > time.Minute {
			// The target is 60 s; on a loaded machine the figure is reported,
			// with the CPU it took, rather than failing the run.
			b.Logf("health cycle took %v (target 60s); process CPU %v; load average %s", elapsed, cpu, loadAvg())
		}
		b.ReportMetric(cpu.Seconds(), "cpu-s/cycle")
		healthy, _ := s.CountClusters(ctx, db.ClusterFilters{})
		var h, u int
		row := s.SQLDB().QueryRowContext(ctx,
			"SELECT SUM(health_status = 'HEALTHY'), SUM(health_status = 'UNKNOWN') FROM cluster")
		if err := row.Scan(&h, &u); err != nil {
			b.Fatal(err)
		}
		if h != n-n/20 || u != n/20 || healthy != n {
			b.Fatalf("HEALTHY %d UNKNOWN %d, want %d and %d", h, u, n-n/20, n/20)
		}
		b.ReportMetric(elapsed.Seconds(), "s/cycle")
		b.StartTimer()
	}
}

// cpuTime is the CPU time (user+system) the test process used so far: the
// API servers of the benchmark run in it too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// BenchmarkHealthCycle10kNoDB is the health cycle of
// BenchmarkHealthCycle10kWith5PercentBlackHoles on an in-memory store: the
// polling alone, without MariaDB.
func BenchmarkHealthCycle10kNoDB(b *testing.B) {
	const n = 10000
	pki := newTestPKI(b)
	var servers []string
	for range 4 {
		servers = append(servers, fakeAPIServer(b, pki,
			k8sHandler(200, "ok", 200, nodesJSON(map[string]string{"n0": "True", "n1": "True", "n2": "True"}))).URL)
	}
	hole := newBlackHole(b).URL()
	store := newMemStore()
	store.templates["ct"] = &objects.ClusterTemplate{UUID: objects.Str("ct"), ServerType: objects.Str("vm"),
		ClusterDistro: objects.Str("simulated"), Coe: "kubernetes"}
	for i := range n {
		api := servers[i%len(servers)]
		if i%20 == 0 {
			api = hole
		}
		c := k8sCluster(api, nil)
		c.UUID = objects.Str(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		c.ID = int64(i)
		c.ClusterTemplateID = objects.Str("ct")
		c.Status = objects.CreateComplete
		store.addCluster(c)
	}
	clock := periodic.NewManualClock(t0)
	reg, _ := drivers.NewRegistry(nil, k8sOnly{simulated.New(simulated.Options{Now: clock.Now})})
	shard, _ := periodic.NewMembership(periodic.MembershipOptions{Mode: periodic.ShardNone}, nil, clock, testLog(b), nil)
	mons := periodic.NewKubernetesMonitors(&credentials{pki: pki}, periodic.KubernetesMonitorOptions{})
	job, err := periodic.NewSyncClusterHealth(periodic.HealthOptions{Interval: time.Minute},
		periodic.HealthDeps{Deps: periodic.Deps{Store: store, Drivers: reg, Sharder: shard, Log: testLog(b)}, Monitors: mons})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		start, cpu0 := time.Now(), cpuTime()
		if err := job.RunOnce(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/cycle")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/cycle")
	}
	var unknown int
	for i := 0; i < n; i += 20 {
		if c := store.cluster(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)); c.HealthStatus == objects.Unknown {
			unknown++
		}
	}
	if unknown != n/20 {
		b.Fatalf("%d black-holed clusters UNKNOWN, want %d", unknown, n/20)
	}
}
