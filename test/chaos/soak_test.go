//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// soakDuration is CHAOS_SOAK (a Go duration), 5 minutes when unset: how
// long TestSoak loads the conductor.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("CHAOS_SOAK")
	if v == "" {
		return 5 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		t.Fatalf("CHAOS_SOAK=%q: want a duration of at least 1m", v)
	}
	return d
}

// TestSoak: a steady mix of casts (cluster_create, one a second) and calls
// (ping_conductor and ClusterTemplate.get_by_uuid, two callers at about 10
// calls a second each) for CHAOS_SOAK (5 minutes by default), with no fault
// injected. Every call succeeds, every cast is confirmed and has its row,
// no cluster fails, and the conductor's resident set, sampled every 5 s,
// stays flat: once warmed up (the first fifth of the run), the mean of the
// last fifth's samples is at most 25 % (and 8 MiB) above the mean of the
// second fifth's.
func TestSoak(t *testing.T) {
	duration := soakDuration(t)
	rabbit := StartRabbit(t, 1)
	_, dbURL := dbtest.MySQL(t)
	dir := t.TempDir()
	Migrate(t, bins, dbURL, dir)
	site := Site{Broker: rabbit.URL(), Database: dbURL, Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic"), SimDelay: 2}
	c := NewConductor(t, bins, site, dbtest.RandomName("chaos-soak-"), dir)
	c.Start()
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	ct := client.CreateTemplate(t)
	pid := c.Pid()

	load := StartLoad(t, client, ct, time.Second, 2, 30*time.Second)
	var rss []int64 // KiB, every 5 s
	for start := time.Now(); time.Since(start) < duration; {
		rss = append(rss, procKiB(t, pid, "VmRSS"))
		time.Sleep(5 * time.Second) // the sampling period
	}
	load.Stop()
	rss = append(rss, procKiB(t, pid, "VmRSS"))

	calls, casts := load.Calls(), load.Casts()
	failedCalls := 0
	for _, r := range calls {
		if r.Err != nil {
			failedCalls++
			if failedCalls <= 5 {
				t.Errorf("call %s at %s failed: %v", r.Method, r.Start.Format(time.TimeOnly), r.Err)
			}
		}
	}
	var confirmed []string
	for _, r := range casts {
		if r.Err != nil {
			t.Errorf("cast %s at %s failed: %v", r.UUID, r.At.Format(time.TimeOnly), r.Err)
			continue
		}
		confirmed = append(confirmed, r.UUID)
	}
	missing := waitRows(t, site, confirmed, 60*time.Second)
	rows := Clusters(t, OpenDB(t, site.Database))
	failed := FailedReasons(rows)

	fifth := max(1, len(rss)/5)
	mean := func(s []int64) int64 {
		var sum int64
		for _, v := range s {
			sum += v
		}
		return sum / int64(len(s))
	}
	warm, end := mean(rss[fifth:min(len(rss), 2*fifth)]), mean(rss[len(rss)-fifth:])
	peak := procKiB(t, pid, "VmHWM")
	t.Logf("FIGURES soak %s: %d calls (%d failed), %d casts (%d with no row), clusters %s; RSS %d MiB at the start, "+
		"%d MiB warmed up, %d MiB at the end, peak %d MiB",
		duration, len(calls), failedCalls, len(casts), len(missing), StatusCounts(rows), rss[0]>>10, warm>>10, end>>10, peak>>10)
	if failedCalls > 0 {
		t.Errorf("%d of %d calls failed with no fault injected", failedCalls, len(calls))
	}
	if len(missing) > 0 {
		t.Errorf("%d confirmed casts have no row", len(missing))
	}
	if len(failed) > 0 {
		t.Errorf("clusters failed with no fault injected: %v", failed)
	}
	if end > warm+max(warm/4, 8<<10) {
		t.Errorf("memory grows: %d MiB warmed up, %d MiB at the end (samples, KiB: %v)", warm>>10, end>>10, rss)
	}
	if strings.Contains(c.Log(), "panic") {
		t.Errorf("the conductor logged a panic:\n%s", tail(c.Log(), 3000))
	}
}

// TestMalformedMessages: the malformed kinds of api/oslo's
// TestLiveBadInputNeverStalls, published raw to the built conductor's
// topic: bytes that are not JSON, JSON that is not an envelope, an envelope
// whose message is broken, an envelope of version 3.0, args that are a
// list, an unknown context key, a 10 MB argument (above max_message_size,
// 1 MiB), no method; and, the conductor's own, a method it does not have
// and a cluster_create cast whose cluster is not an object. The process
// stays up, each call that names a reply queue gets the failure oslo
// would send (or its result), nothing is logged as a panic, and it answers
// a ping afterwards.
func TestMalformedMessages(t *testing.T) {
	rabbit := StartRabbit(t, 1)
	dir := t.TempDir()
	site := Site{Broker: rabbit.URL(), Database: dbtest.SQLite(t), Exchange: dbtest.RandomName("chaos_x"),
		Topic: dbtest.RandomName("chaos_topic")}
	c := NewConductor(t, bins, site, dbtest.RandomName("chaos-bad-"), dir)
	c.Start()
	pid := c.Pid()
	client := NewClient(t, site, oslo.DefaultOptions().Rabbit)
	if _, err := client.API.PingConductor(mustCtx(t)); err != nil {
		t.Fatal(err)
	}

	conn, err := amqp.Dial(fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", rabbit.Nodes[0].Port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	replyQ := dbtest.RandomName("reply_")
	if _, err := ch.QueueDeclare(replyQ, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	replies, err := ch.Consume(replyQ, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(body []byte) {
		t.Helper()
		if err := ch.PublishWithContext(context.Background(), site.Exchange, site.Topic, false, false,
			amqp.Publishing{ContentType: "application/json", ContentEncoding: "utf-8", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	envelope := func(inner string) []byte {
		b, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
		return b
	}
	publish([]byte("\xff\xfe not json at all"))
	publish([]byte(`[1, 2, 3]`))
	publish([]byte(`{"oslo.version": "2.0", "oslo.message": "{broken"}`))
	publish([]byte(`{"oslo.version": "3.0", "oslo.message": "{\"method\": \"ping_conductor\", \"_msg_id\": \"env3\", ` +
		`\"_reply_q\": \"` + replyQ + `\"}"}`))
	publish(rawCall("ping_conductor", "[1]", "argslist", replyQ, ""))
	publish(rawCall("ping_conductor", "{}", "unknownctx", replyQ, `, "_context_something_new": {"x": 1}`))
	big, _ := json.Marshal(strings.Repeat("x", 10<<20))
	publish(rawCall("ping_conductor", `{"payload": `+string(big)+`}`, "big", replyQ, ""))
	publish(envelope(`{"args": {}, "_msg_id": "nomethod", "_reply_q": "` + replyQ + `", "_unique_id": "` +
		dbtest.RandomName("u") + `"}`))
	publish(rawCall("no_such_method", "{}", "unknownmethod", replyQ, ""))
	// A cast (no _msg_id): nothing to answer, and nothing to create.
	publish(envelope(`{"method": "cluster_create", "args": {"cluster": "not an object", "master_count": 1, ` +
		`"node_count": 1, "create_timeout": 60}, "_unique_id": "` + dbtest.RandomName("u") + `", "_context_request_id": "req-chaos"}`))

	want := map[string]string{
		"env3":       "oslo_messaging._drivers.common.UnsupportedRpcEnvelopeVersion",
		"argslist":   "builtins.AttributeError",
		"unknownctx": "(result)",
		"big":        "magnum.common.exception.InvalidParameterValue",
		"nomethod":   "builtins.TypeError",
		// Any failure: which class is api/oslo's to test.
		"unknownmethod": "(failure)",
	}
	got := map[string]string{}
	timeout := time.After(2 * time.Minute)
	for len(got) < len(want) {
		select {
		case m := <-replies:
			id, class, failure := replyClass(t, m.Body)
			if _, seen := got[id]; !seen || failure {
				got[id] = class
			}
		case <-timeout:
			t.Fatalf("replies after 2 minutes: %v, want %v", got, want)
		}
	}
	for id, class := range want {
		switch {
		case class == "(failure)" && (got[id] == "(result)" || got[id] == ""):
			t.Errorf("%s: %q, want a failure", id, got[id])
		case class != "(failure)" && got[id] != class:
			t.Errorf("%s: %q, want %q", id, got[id], class)
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the conductor (pid %d) is gone: %v", pid, err)
	}
	if _, err := client.API.PingConductor(mustCtx(t)); err != nil {
		t.Fatalf("the conductor stopped answering: %v", err)
	}
	if strings.Contains(c.Log(), "panic") {
		t.Errorf("the conductor logged a panic:\n%s", tail(c.Log(), 3000))
	}
	t.Logf("FIGURES malformed messages: 10 kinds published to the conductor's topic, the process stayed up and answered; replies %v", got)
}
