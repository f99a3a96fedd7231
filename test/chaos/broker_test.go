//go:build chaos

package chaos

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// waitRows waits up to timeout until every uuid has a row, and returns the
// ones that have none.
func waitRows(t *testing.T, site Site, uuids []string, timeout time.Duration) []string {
	t.Helper()
	db := OpenDB(t, site.Database)
	deadline := time.Now().Add(timeout)
	for {
		rows := Clusters(t, db)
		var missing []string
		for _, id := range uuids {
			if _, ok := rows[id]; !ok {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(500 * time.Millisecond) // polling the database for the conductor's work
	}
}

// castCreates sends n cluster_create casts and returns the uuids the broker
// confirmed.
func castCreates(t *testing.T, c *Client, ct ctTemplate, n int, prefix string) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, prim := ClusterPrimitive(t, ct, fmt.Sprintf("%s-%03d", prefix, i))
		ctx, cancel := contextWithTimeout(90 * time.Second)
		to := 60
		err := c.API.ClusterCreateAsync(ctx, prim, 1, 1, &to)
		cancel()
		if err != nil {
			t.Fatalf("cast %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestDurableCastsSurviveTheConductorsAbsence: with amqp_durable_queues or
// rabbit_quorum_queue, casts published while the conductor is stopped, and
// kept across a kill -9 of the broker, are all served once it is back.
// With oslo's default (transient queues) the broker's restart loses those
// published before it; those published after the conductor has declared
// its queue again are served.
func TestDurableCastsSurviveTheConductorsAbsence(t *testing.T) {
	rabbit := StartRabbit(t, 1)
	for _, tc := range []struct {
		name    string
		conf    string
		opts    func(*oslo.RabbitOptions)
		durable bool
	}{
		{"amqp_durable_queues", "amqp_durable_queues = true\n", func(r *oslo.RabbitOptions) { r.AMQPDurableQueues = true }, true},
		{"rabbit_quorum_queue", "rabbit_quorum_queue = true\n", func(r *oslo.RabbitOptions) { r.QuorumQueue = true }, true},
		{"transient (oslo's default)", "", func(*oslo.RabbitOptions) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dbURL := dbtest.MySQL(t)
			dir := t.TempDir()
			site := Site{Broker: rabbit.URL(), Database: dbURL, Exchange: dbtest.RandomName("chaos_x"),
				Topic: dbtest.RandomName("chaos_topic"), Rabbit: tc.conf, SimDelay: 1}
			Migrate(t, bins, dbURL, dir)
			c := NewConductor(t, bins, site, dbtest.RandomName("chaos-durable-"), dir)
			c.Start()
			ro := oslo.DefaultOptions().Rabbit
			tc.opts(&ro)
			client := NewClient(t, site, ro)
			ct := client.CreateTemplate(t)
			if took := c.Stop(30 * time.Second); took > 15*time.Second {
				t.Fatalf("stop took %s", took)
			}
			away := castCreates(t, client, ct, 20, "away")
			rabbit.Nodes[0].Kill()
			rabbit.Nodes[0].Start()
			c.Start()
			after := castCreates(t, client, ct, 10, "after")
			missingAfter := waitRows(t, site, after, 60*time.Second)
			if len(missingAfter) > 0 {
				t.Fatalf("%d of 10 casts sent after the conductor came back have no row", len(missingAfter))
			}
			missing := waitRows(t, site, away, 30*time.Second)
			t.Logf("FIGURES durable %s: %d casts while the conductor was away and the broker killed: %d served, %d lost",
				tc.name, len(away), len(away)-len(missing), len(missing))
			if tc.durable && len(missing) > 0 {
				t.Fatalf("%d of %d casts published while the conductor was away were lost", len(missing), len(away))
			}
			if !tc.durable && len(missing) != len(away) {
				t.Errorf("transient queues: %d of %d casts survived the broker's kill -9", len(away)-len(missing), len(away))
			}
		})
	}
}

var consumingAt = regexp.MustCompile(`time=(\S+) level=INFO msg="RPC server consuming"`)

// TestBrokerKillUnderLoad: kill -9 of the only broker node under a steady
// stream of casts and calls, restarted 5 s later. The conductor is consuming again
// (its queues declared) within reconnect_interval_max of the broker being
// back; the casts the broker confirmed after that are all served. (A cast
// the broker confirms before the conductor has declared a transient queue
// again goes nowhere, with oslo as with us: durable or quorum queues close
// that window, see TestDurableCastsSurviveTheConductorsAbsence.)
func TestBrokerKillUnderLoad(t *testing.T) {
	rabbit := StartRabbit(t, 1)
	_, dbURL := dbtest.MySQL(t)
	dir := t.TempDir()
	site := Site{Broker: rabbit.URL(), Database: dbURL, Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), SimDelay: 1}
	Migrate(t, bins, dbURL, dir)
	c := NewConductor(t, bins, site, dbtest.RandomName("chaos-brokerkill-"), dir)
	c.Start()
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	ct := client.CreateTemplate(t)
	// Two creates a second: what one conductor keeps up with on a busy
	// 2-CPU machine (each generates four RSA keys).
	load := StartLoad(t, client, ct, 500*time.Millisecond, 1, 10*time.Second)
	time.Sleep(3 * time.Second) // the load runs
	killed := time.Now()        // as the kill is sent: a call may fail before Kill has seen the process gone
	rabbit.Nodes[0].Kill()
	time.Sleep(5 * time.Second) // the broker is away
	rabbit.Nodes[0].Start()
	back := time.Now()
	if !c.WaitLog(30*time.Second, func(s string) bool { return len(consumingAt.FindAllString(s, -1)) >= 2 }) {
		t.Fatal("the conductor is not consuming again 30 s after the broker came back")
	}
	m := consumingAt.FindAllStringSubmatch(c.Log(), -1)
	consuming, err := time.Parse(time.RFC3339Nano, m[len(m)-1][1])
	if err != nil {
		t.Fatal(err)
	}
	redeclared := consuming.Sub(back)
	time.Sleep(5 * time.Second) // the load runs on
	load.Stop()
	var after, window []string
	castErrs := 0
	for _, cr := range load.Casts() {
		switch {
		case cr.Err != nil:
			castErrs++
		case cr.At.After(consuming):
			// Sent once the queue was there again (one sent before may
			// have been confirmed later, dropped meanwhile).
			after = append(after, cr.UUID)
		case cr.At.After(killed.Add(-time.Second)):
			window = append(window, cr.UUID)
		}
	}
	if missing := waitRows(t, site, after, 3*time.Minute); len(missing) > 0 {
		t.Errorf("%d of %d casts sent after the conductor consumed again (%s) have no row, %s the first",
			len(missing), len(after), consuming.Format(time.RFC3339Nano), missing[0])
	}
	lost := waitRows(t, site, window, 5*time.Second)
	rep := Report(load.Calls(), []Fault{{What: "kill -9 broker", At: killed}}, back.Sub(killed)+5*time.Second)
	t.Logf("FIGURES broker-kill: broker back -> conductor consuming %s (reconnect_interval_max 1 s); casts %d (errors %d), "+
		"confirmed around the outage %d of which lost %d; calls %d failed %d (all around the outage: %v)",
		redeclared.Round(time.Millisecond), len(load.Casts()), castErrs, len(window), len(lost), rep.Total, rep.Failed,
		len(rep.Others) == 0)
	if redeclared > 4*time.Second {
		t.Errorf("the conductor consumed again %s after the broker was back (reconnect_interval_max is 1 s)", redeclared)
	}
	if len(rep.Others) > 0 {
		t.Errorf("%d calls failed away from the outage: %+v", len(rep.Others), rep.Others[0])
	}
	if !strings.Contains(c.Log(), "RPC listener lost its connection") {
		t.Error("the conductor did not log the lost connection")
	}
}
