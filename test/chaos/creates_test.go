//go:build chaos

package chaos

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/test/harness"
)

// The scenarios of #28 item 1: a create is done when its driver says so,
// never before, whatever interrupts it. They need the recovery of
// interrupted operations (the contract lane's part of #28) to pass.

// recoveryBound is how long the scenarios give an interrupted create to be
// resumed or failed: the driver call timeout and a sync interval, with
// room for a busy machine.
const recoveryBound = 7 * time.Minute

// castConcurrently sends n cluster_create casts at once and returns their
// uuids.
func castConcurrently(t *testing.T, c *Client, ct ctTemplate, n int, prefix string) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, prim := ClusterPrimitive(t, ct, fmt.Sprintf("%s-%03d", prefix, i))
			ctx, cancel := contextWithTimeout(60 * time.Second)
			defer cancel()
			to := 60
			if err := c.API.ClusterCreateAsync(ctx, prim, 1, 1, &to); err != nil {
				t.Errorf("cast %d: %v", i, err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	return ids
}

// checkCreatesEnded waits until none of ids is CREATE_IN_PROGRESS (or no
// row), then checks that each completed one went through its driver
// (stack_id) with its certificates (ca_cert_ref), and that none completed
// sooner than the driver's delay after it was created.
func checkCreatesEnded(t *testing.T, db *sql.DB, ids []string, delay time.Duration) map[string]Row {
	t.Helper()
	var rows map[string]Row
	for deadline := time.Now().Add(recoveryBound); ; {
		rows = Clusters(t, db)
		open := 0
		for _, id := range ids {
			if r, ok := rows[id]; !ok || r.Status == objects.CreateInProgress {
				open++
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d creates neither complete nor failed after %s: %s", open, len(ids), recoveryBound, StatusCounts(rows))
		}
		time.Sleep(time.Second) // polling the database for the conductors' work
	}
	created := createdAt(t, db)
	for _, id := range ids {
		r := rows[id]
		if r.Status != objects.CreateComplete {
			continue
		}
		if !r.StackID.Valid || r.StackID.String == "" || !r.CACertRef.Valid || r.CACertRef.String == "" {
			t.Errorf("cluster %s is CREATE_COMPLETE without its driver (stack_id %v) or certificates (ca_cert_ref %v)",
				id, r.StackID, r.CACertRef)
		}
		if c, ok := created[id]; ok && r.Updated.Valid && r.Updated.Time.Sub(c) < delay-time.Second {
			t.Errorf("cluster %s CREATE_COMPLETE %s after its creation, sooner than the driver's %s",
				id, r.Updated.Time.Sub(c), delay)
		}
	}
	return rows
}

func createdAt(t *testing.T, db *sql.DB) map[string]time.Time {
	t.Helper()
	rs, err := db.Query("SELECT uuid, created_at FROM cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]time.Time{}
	for rs.Next() {
		var id string
		var c time.Time
		if err := rs.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		out[id] = c
	}
	return out
}

// TestKillDuringCreates: kill -9 of the conductor while it handles 20
// concurrent creates, then a restart: every create ends, and none is
// CREATE_COMPLETE without its driver call and certificates.
func TestKillDuringCreates(t *testing.T) {
	_, dbURL := dbtest.MySQL(t)
	dir := t.TempDir()
	Migrate(t, bins, dbURL, dir)
	site := Site{Broker: harness.Broker, Database: dbURL, Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), SimDelay: 5}
	c := NewConductor(t, bins, site, dbtest.RandomName("chaos-killcreate-"), dir)
	c.Start()
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	ct := client.CreateTemplate(t)
	ids := castConcurrently(t, client, ct, 20, "killed")
	if !c.WaitLog(30*time.Second, func(s string) bool { return countOf(s, `msg="creating cluster"`) >= 5 }) {
		t.Fatal("the creates did not start")
	}
	c.Kill()
	c.Start()
	rows := checkCreatesEnded(t, OpenDB(t, dbURL), ids, 5*time.Second)
	t.Logf("FIGURES kill during creates: 20 creates, kill -9 after the 5th started: %s", StatusCounts(rows))
}

// TestCreatesOnThreeBusyConductors: 30 creates on 3 conductors, no fault:
// none completes before the simulated driver's 5 s.
func TestCreatesOnThreeBusyConductors(t *testing.T) {
	_, dbURL := dbtest.MySQL(t)
	dir := t.TempDir()
	Migrate(t, bins, dbURL, dir)
	site := Site{Broker: harness.Broker, Database: dbURL, Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), SimDelay: 5}
	for i := range 3 {
		NewConductor(t, bins, site, dbtest.RandomName(fmt.Sprintf("chaos-busy%d-", i)), dir).Start()
	}
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	ct := client.CreateTemplate(t)
	ids := castConcurrently(t, client, ct, 30, "busy")
	rows := checkCreatesEnded(t, OpenDB(t, dbURL), ids, 5*time.Second)
	t.Logf("FIGURES 30 creates on 3 conductors: %s", StatusCounts(rows))
}

// TestDatabaseDownDuringCreates: the database goes away 0.3 s after 10
// creates are cast and comes back 15 s later: every create ends, none
// CREATE_COMPLETE without its driver and certificates.
func TestDatabaseDownDuringCreates(t *testing.T) {
	_, dbURL := dbtest.MySQL(t)
	proxy := StartProxy(t, []string{dbtest.MySQLAddr()})
	dir := t.TempDir()
	Migrate(t, bins, dbURL, dir)
	site := Site{Broker: harness.Broker, Database: replaceAddr(dbURL, proxy.Addr), Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), SimDelay: 5}
	c := NewConductor(t, bins, site, dbtest.RandomName("chaos-dbcreate-"), dir)
	c.Start()
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	ct := client.CreateTemplate(t)
	ids := castConcurrently(t, client, ct, 10, "dbdown")
	time.Sleep(300 * time.Millisecond) // the creates are under way
	proxy.Outage()
	time.Sleep(15 * time.Second) // the database is away
	proxy.Restore()
	rows := checkCreatesEnded(t, OpenDB(t, dbURL), ids, 5*time.Second)
	t.Logf("FIGURES database down during creates: 10 creates, 15 s outage: %s", StatusCounts(rows))
}
