package oslo

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

func TestKombuCompressionNames(t *testing.T) {
	for name, want := range map[string]string{"": "", "gzip": compressionZlib, "zlib": compressionZlib,
		"application/x-gzip": compressionZlib, "bzip2": compressionBzip2, "bzip": compressionBzip2,
		"bz2": compressionBzip2, "application/x-bz2": compressionBzip2} {
		if got, err := compressionType(name); err != nil || got != want {
			t.Errorf("compressionType(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, bad := range []string{"lzma", "xz", "brotli", "zstd", "GZIP"} {
		r := DefaultOptions().Rabbit
		r.Compression = bad
		if err := r.check(); err == nil || !strings.Contains(err.Error(), "kombu_compression") {
			t.Errorf("kombu_compression = %s: %v", bad, err)
		}
	}
}

func TestPoolSizeBelowItsMinimumIsRefused(t *testing.T) {
	r := DefaultOptions().Rabbit
	r.PoolSize, r.PoolMinSize = 1, 2
	err := r.check()
	if err == nil || err.Error() != "oslo: rpc_conn_pool_size: 1 must be greater than or equal to conn_pool_min_size: 2" {
		t.Fatalf("check: %v", err)
	}
	opts := DefaultOptions()
	opts.Rabbit = r
	if _, err := NewClient(opts, testLogger(t)); err == nil {
		t.Fatal("NewClient accepted a pool smaller than its minimum")
	}
	r.PoolSize = 2
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
}

func TestReconnectDelayAddsSplay(t *testing.T) {
	r := DefaultOptions().Rabbit
	r.KombuReconnectDelay = 2 * time.Second
	if d := r.reconnectDelay(); d != 2*time.Second {
		t.Fatalf("without splay: %s", d)
	}
	r.KombuReconnectSplay = time.Second
	seen := map[time.Duration]bool{}
	for range 200 {
		d := r.reconnectDelay()
		if d < 2*time.Second || d >= 3*time.Second {
			t.Fatalf("delay %s outside [2s, 3s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Fatalf("only %d different delays in 200: the splay is not random", len(seen))
	}
}

func TestConsumerArguments(t *testing.T) {
	r := DefaultOptions().Rabbit
	if a := r.consumerArgs(); a != nil {
		t.Fatalf("default consumer arguments %v", a)
	}
	r.CancelOnFailover = true
	if a := r.consumerArgs(); len(a) != 1 || a["x-cancel-on-ha-failover"] != true {
		t.Fatalf("enable_cancel_on_failover: %v", a)
	}
}

// TestLiveCompressedMessagesOnTheWire: with kombu_compression = gzip the
// client's requests and the server's replies leave compressed as kombu
// sends them (zlib body, compression header, JSON content type kept), and a
// call between the two still works.
func TestLiveCompressedMessagesOnTheWire(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.Compression = "gzip"

	// A cast seen raw on its topic queue.
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(e.opts.ControlExchange, "topic", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(e.topic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(e.topic, e.topic, e.opts.ControlExchange, false, nil); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	if err := c.Cast(userCtx(), Target{Topic: e.topic}, "record", map[string]any{"value": 1, "note": "n"}); err != nil {
		t.Fatal(err)
	}
	d := getOne(t, ch, e.topic)
	envelope := inflate(t, d, "cast")
	if !strings.Contains(envelope, `"oslo.version": "2.0"`) || !strings.Contains(envelope, `\"method\": \"record\"`) {
		t.Fatalf("decompressed cast: %s", envelope)
	}

	// A reply seen raw, from a server that compresses.
	rec := newRecorder()
	e.startServer(liveDispatcher(t, rec, nil))
	name := "reply_" + uuidHex()
	replies := e.rawReplyQueue(name)
	e.publishRaw(rawCall("echo", `{"value": "v"}`, "m1", name, ""))
	select {
	case r := <-replies:
		if body := inflate(t, r, "reply"); !strings.Contains(body, `\"value\": \"v\"}`) || !strings.Contains(body, `\"_msg_id\": \"m1\"`) {
			t.Fatalf("decompressed reply: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}

	// A call, both ways compressed.
	res, err := c.Call(userCtx(), Target{Topic: e.topic}, "echo", map[string]any{"value": strings.Repeat("é", 3000)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(res, &m)
	if m["value"] != strings.Repeat("é", 3000) {
		t.Fatalf("echo through compressed messages: %v", m["value"])
	}
}

// getOne waits for one message on q.
func getOne(t *testing.T, ch *amqp.Channel, q string) amqp.Delivery {
	t.Helper()
	var d amqp.Delivery
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, ok, err := ch.Get(q, true)
		if err != nil {
			t.Fatal(err)
		}
		d = got
		return ok
	}, "nothing on %s", q)
	return d
}

// inflate checks that d is compressed as kombu compresses with gzip, and
// returns its body decompressed.
func inflate(t *testing.T, d amqp.Delivery, what string) string {
	t.Helper()
	if d.Headers["compression"] != "application/x-gzip" || d.ContentType != "application/json" || d.ContentEncoding != "utf-8" {
		t.Fatalf("%s: headers %v, content type %q, encoding %q", what, d.Headers, d.ContentType, d.ContentEncoding)
	}
	zr, err := zlib.NewReader(bytes.NewReader(d.Body))
	if err != nil {
		t.Fatalf("%s: body is not zlib data: %v", what, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return string(b)
}

// TestLiveCancelOnFailoverReachesTheBroker: with enable_cancel_on_failover
// every consumer (the server's three, the client's reply consumer) carries
// x-cancel-on-ha-failover, as the broker reports it; without it none does.
func TestLiveCancelOnFailoverReachesTheBroker(t *testing.T) {
	consumerArgs := func(t *testing.T, queue string) string {
		t.Helper()
		out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_consumers", "queue_name", "arguments")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(queue) + `\t(.*)$`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no consumer on %s:\n%s", queue, out)
		}
		return string(m[1])
	}
	for _, enabled := range []bool{true, false} {
		e := newEnv(t)
		e.opts.Rabbit.CancelOnFailover = enabled
		s := e.startServer(liveDispatcher(t, newRecorder(), nil))
		c := e.client()
		if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "echo", map[string]any{"value": 1}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{e.topic, e.topic + "." + s.Target().Server, s.fanoutQueue, c.replyQ} {
			args := consumerArgs(t, q)
			if has := strings.Contains(args, "x-cancel-on-ha-failover"); has != enabled {
				t.Errorf("enable_cancel_on_failover = %v: consumer of %s has arguments %s", enabled, q, args)
			}
		}
	}
}

// TestLivePublisherPoolSizeAndTTL: rpc_conn_pool_size bounds the idle
// channels kept, and those idle past conn_pool_ttl are closed when a
// channel is taken, oldest first, down to conn_pool_min_size.
func TestLivePublisherPoolSizeAndTTL(t *testing.T) {
	testkit.NeedsService(t, "RabbitMQ")
	r := DefaultOptions().Rabbit
	r.PoolSize, r.PoolMinSize, r.PoolTTL = 3, 1, 300*time.Millisecond
	u, err := ParseTransportURL(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	p := newPublisher(newDialer(u, r, "test", testLogger(t)), testLogger(t))
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var taken []*pubChannel
	for range 5 {
		pc, err := p.getChannel(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, pc)
	}
	for _, pc := range taken {
		p.putChannel(pc)
	}
	if len(p.idle) != 3 {
		t.Fatalf("%d idle channels kept, want rpc_conn_pool_size = 3", len(p.idle))
	}
	if !taken[3].ch.IsClosed() || !taken[4].ch.IsClosed() {
		t.Fatal("the channels past the pool size were not closed")
	}
	time.Sleep(400 * time.Millisecond)
	pc, err := p.getChannel(ctx, 0) // the newest; the two older ones have expired
	if err != nil {
		t.Fatal(err)
	}
	if pc != taken[2] {
		t.Fatal("the pool did not hand out its newest channel")
	}
	if len(p.idle) != 1 || p.idle[0] != taken[1] {
		t.Fatalf("%d idle channels after expiry, want conn_pool_min_size = 1 (the younger one)", len(p.idle))
	}
	if !taken[0].ch.IsClosed() || taken[1].ch.IsClosed() || pc.ch.IsClosed() {
		t.Fatal("expiry closed the wrong channels")
	}
	p.putChannel(pc)
	pc2, err := p.getChannel(ctx, 0) // nothing has expired: both stay
	if err != nil {
		t.Fatal(err)
	}
	if pc2 != pc || len(p.idle) != 1 {
		t.Fatalf("fresh channels expired: %d idle", len(p.idle))
	}
}

func TestLoginMethods(t *testing.T) {
	mechs := func(m string) []string {
		r := DefaultOptions().Rabbit
		r.LoginMethod = m
		var out []string
		for _, a := range r.sasl("u", "p") {
			out = append(out, a.Mechanism())
		}
		return out
	}
	for m, want := range map[string]string{"": "AMQPLAIN PLAIN", "AMQPLAIN": "AMQPLAIN PLAIN", "PLAIN": "PLAIN",
		"EXTERNAL": "EXTERNAL"} {
		if got := strings.Join(mechs(m), " "); got != want {
			t.Errorf("rabbit_login_method %q offers %s, want %s", m, got, want)
		}
	}
	r := DefaultOptions().Rabbit
	r.LoginMethod = "RABBIT-CR-DEMO"
	if err := r.check(); err == nil || !strings.Contains(err.Error(), "rabbit_login_method") {
		t.Fatalf("RABBIT-CR-DEMO: %v", err)
	}
}

// TestLiveLoginMethodReachesTheBroker: PLAIN logs in with PLAIN, as the
// broker reports it; EXTERNAL, which this broker does not offer (no TLS
// client certificates), does not log in at all.
func TestLiveLoginMethodReachesTheBroker(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.LoginMethod = "PLAIN"
	e.startServer(liveDispatcher(t, newRecorder(), nil))
	out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_connections", "auth_mechanism", "client_properties")
	if err != nil {
		t.Fatal(err)
	}
	// Only this process's listener: a conductor left running by another
	// test may log in differently.
	ours := fmt.Sprintf(":%d:listener:", os.Getpid())
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ours) {
			found = true
			if !strings.HasPrefix(line, "PLAIN\t") {
				t.Errorf("a connection of the server logged in with another mechanism: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no connection of the server in:\n%s", out)
	}

	e2 := newEnv(t)
	e2.opts.Rabbit.LoginMethod = "EXTERNAL"
	c, err := NewClient(e2.opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(userCtx(), Target{Topic: e2.topic}, "ping_conductor", nil, CallOptions{Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "SASL") {
		t.Fatalf("EXTERNAL on a broker that does not offer it: %v", err)
	}
}

// TestLiveNoDirectMandatoryDropsRepliesToMissingQueues: with
// direct_mandatory_flag = false a reply to a queue that does not exist is
// published without the mandatory flag, so the broker drops it and it is
// not retried: a queue declared afterwards gets nothing (with the flag it
// gets the retried reply: TestLiveMissingReplyQueueRetriedWithoutBlocking).
func TestLiveNoDirectMandatoryDropsRepliesToMissingQueues(t *testing.T) {
	e := newEnv(t)
	e.opts.ExecutorThreadPoolSize = 1
	e.opts.Rabbit.NoDirectMandatory = true
	e.startServer(liveDispatcher(t, newRecorder(), nil))
	replyQ := "reply_" + uuidHex()
	e.publishRaw(rawCall("ping_conductor", "{}", "late", replyQ, ""))
	// One worker: this call is answered after the raw one was.
	c := e.client()
	if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "ping_conductor", nil, CallOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	replies := e.rawReplyQueue(replyQ)
	select {
	case r := <-replies:
		t.Fatalf("a reply reached the queue declared after it was sent: %s", r.Body)
	case <-time.After(1500 * time.Millisecond): // the mandatory retries run every 250 ms
	}
}
