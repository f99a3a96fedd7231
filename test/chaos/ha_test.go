//go:build chaos

package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// TestHighAvailability: three RabbitMQ nodes clustered with quorum queues,
// three conductors, a three-node MariaDB Galera cluster behind a failover
// proxy. Under a steady load of calls and casts: kill -9 one broker node,
// then one conductor, restart both; then kill -9 the database node in use
// and restart it. Nothing is lost (every cast the broker confirmed produces
// its cluster row), calls fail only when in flight at a fault, and clusters
// keep completing.
func TestHighAvailability(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	rabbit := StartRabbit(t, 3)
	t.Logf("3 RabbitMQ nodes clustered in %s", time.Since(start).Round(time.Second))
	start = time.Now()
	galera := StartGalera(t, 3)
	t.Logf("3 Galera nodes synced in %s", time.Since(start).Round(time.Second))
	if out, err := galera.Nodes[0].SQL("CREATE DATABASE chaos CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	site := Site{Broker: rabbit.URL(), Database: galera.URL("chaos"), Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), Rabbit: "rabbit_quorum_queue = true\n", SimDelay: 3,
		Extra: "[DEFAULT]\nservice_down_time = 20\n"}
	Migrate(t, bins, site.Database, dir)
	var cs []*Conductor
	for i := range 3 {
		c := NewConductor(t, bins, site, fmt.Sprintf("chaos-ha-%d", i+1), dir)
		c.Start()
		cs = append(cs, c)
	}
	rabbitOpts := oslo.DefaultOptions().Rabbit
	rabbitOpts.QuorumQueue = true
	client := NewClient(t, site, rabbitOpts)
	ct := client.CreateTemplate(t)
	load := StartLoad(t, client, ct, 500*time.Millisecond, 2, 30*time.Second)
	db := OpenDB(t, site.Database)

	var faults []Fault
	fault := func(what string, do func()) {
		t.Helper()
		faults = append(faults, Fault{What: what, At: time.Now()})
		do()
		t.Logf("%s: %s", time.Now().Format("15:04:05.000"), what)
	}
	steady := func(d time.Duration) { time.Sleep(d) } // the load runs meanwhile
	steady(10 * time.Second)
	fault("kill -9 RabbitMQ node 1", rabbit.Nodes[0].Kill)
	steady(10 * time.Second)
	fault("kill -9 conductor 1", cs[0].Kill)
	steady(10 * time.Second)
	rabbit.Nodes[0].Start()
	cs[0].Start()
	t.Logf("%s: RabbitMQ node 1 and conductor 1 started again", time.Now().Format("15:04:05.000"))
	steady(10 * time.Second)
	fault("kill -9 the Galera node in use (node 1)", galera.Nodes[0].Kill)
	steady(10 * time.Second)
	galera.Nodes[0].Start()
	t.Logf("%s: Galera node 1 started again", time.Now().Format("15:04:05.000"))
	steady(10 * time.Second)
	lastFault := time.Now()
	steady(10 * time.Second)
	load.Stop()

	casts := load.Casts()
	var confirmed, castErrs int
	for _, c := range casts {
		if c.Err != nil {
			castErrs++
			t.Errorf("cast %s at %s failed after %s: %v", c.UUID, c.At.Format("15:04:05.000"), c.Took, c.Err)
			continue
		}
		confirmed++
	}
	// Every confirmed cast produces its row; those cast after the faults
	// complete (the simulated driver takes 3 s, the sync runs every 10 s).
	var rows map[string]Row
	deadline := time.Now().Add(4 * time.Minute)
	for {
		rows = Clusters(t, db)
		missing, pending := 0, 0
		for _, c := range casts {
			r, ok := rows[c.UUID]
			switch {
			case c.Err != nil:
			case !ok:
				missing++
			case c.At.After(lastFault) && r.Status != objects.CreateComplete:
				pending++
			}
		}
		if missing == 0 && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, c := range casts {
				if _, ok := rows[c.UUID]; !ok && c.Err == nil {
					t.Errorf("cast %s (at %s, confirmed after %s) has no row", c.UUID, c.At.Format("15:04:05.000"), c.Took)
				}
			}
			t.Fatalf("%d confirmed casts without a row, %d clusters cast after the faults not complete (%s)",
				missing, pending, StatusCounts(rows))
		}
		time.Sleep(time.Second) // polling the database for the conductors' work
	}
	calls := load.Calls()
	rep := Report(calls, faults, 5*time.Second)
	for _, c := range rep.Others {
		t.Errorf("call %s [%s, %s] failed, not in flight at a fault: %v", c.Method, c.Start.Format("15:04:05.000"),
			c.End.Format("15:04:05.000"), c.Err)
	}
	t.Logf("FIGURES ha: casts=%d confirmed=%d cast_errors=%d rows=%d (%s); calls=%d failed=%d in_flight_at_fault=%d others=%d; galera proxy connections %v",
		len(casts), confirmed, castErrs, len(rows), StatusCounts(rows), rep.Total, rep.Failed, rep.InFlightAtFault,
		len(rep.Others), galera.Proxy.Used())
	if f := FailedReasons(rows); len(f) > 0 {
		t.Logf("failed clusters, by reason: %v", f)
	}
}
