package oslo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// declaredAs checks on the real broker that queue exists with exactly this
// durability and these arguments: RabbitMQ accepts a second declaration
// only when it is equivalent, and refuses (406, closing the channel) one
// that differs.
func (e *testEnv) declaredAs(name string, durable bool, args amqp.Table) error {
	ch, err := e.raw.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	_, err = ch.QueueDeclare(name, durable, false, false, false, args)
	return err
}

// exchangeDeclaredAs checks the fanout exchange's durability the same way.
func (e *testEnv) exchangeDeclaredAs(name string, durable bool) error {
	ch, err := e.raw.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return ch.ExchangeDeclare(name, "fanout", durable, true, false, false, nil)
}

// TestLiveTransientQuorumQueuesWithQueueManager:
// rabbit_transient_quorum_queue makes the reply and fanout queues durable
// quorum queues (x-expires kept); use_queue_manager names them
// "<hostname>:<processname>:<n>", and a stop leaves the fanout queue to
// its expiry.
func TestLiveTransientQuorumQueuesWithQueueManager(t *testing.T) {
	e := newEnv(t)
	process := "oslo-test-" + uuidHex()[:8]
	t.Cleanup(func() { _ = os.Remove(filepath.Join("/dev/shm", "qm-host_"+process+"_qmanager")) })
	e.opts.Rabbit.TransientQuorumQueue = true
	e.opts.Rabbit.UseQueueManager = true
	e.opts.Rabbit.QueueManagerHost = "qm-host"
	e.opts.Rabbit.QueueManagerProcess = process
	e.opts.Rabbit.TransientQueuesTTL = 120 * time.Second

	rec := newRecorder()
	srv := e.startServer(liveDispatcher(t, rec, nil))
	c := e.client()
	fanoutQ := e.topic + "_fanout_qm-host:" + process + ":1"
	replyQ := "reply_qm-host:" + process + ":2"
	e.cleanups = append(e.cleanups, fanoutQ, replyQ)
	if srv.fanoutQueue != fanoutQ || c.ReplyQueue() != replyQ {
		t.Fatalf("queues %s and %s, want %s and %s", srv.fanoutQueue, c.ReplyQueue(), fanoutQ, replyQ)
	}

	ctx := userCtx()
	if res, err := c.Call(ctx, Target{Topic: e.topic}, "ping_conductor", nil); err != nil || string(res) != "true" {
		t.Fatalf("ping: %s %v", res, err)
	}
	if err := c.Cast(ctx, Target{Topic: e.topic, Fanout: true}, "record", map[string]any{"value": 1, "note": "fanout"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "fanout")

	quorum := amqp.Table{"x-queue-type": "quorum", "x-expires": int32(120000)}
	for _, q := range []string{fanoutQ, replyQ} {
		if err := e.declaredAs(q, true, quorum); err != nil {
			t.Errorf("%s is not a durable quorum queue with x-expires: %v", q, err)
		}
		if err := e.declaredAs(q, false, amqp.Table{"x-expires": int32(120000)}); err == nil {
			t.Errorf("%s also accepts a classic transient declaration", q)
		}
	}

	// The fanout exchange is durable too, as oslo declares it with
	// rabbit_transient_quorum_queue.
	if err := e.exchangeDeclaredAs(e.topic+"_fanout", true); err != nil {
		t.Errorf("the fanout exchange is not durable: %v", err)
	}

	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := e.declaredAs(fanoutQ, true, quorum); err != nil {
		t.Errorf("the queue manager's fanout queue was removed at the stop: %v", err)
	}
}

// TestLiveStreamFanout: with rabbit_stream_fanout every server of a topic
// consumes the one stream "<topic>_fanout"; each gets every fanout cast,
// a stop does not delete the stream, and a server started later sees only
// what is published after it.
func TestLiveStreamFanout(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.TransientQuorumQueue = true
	e.opts.Rabbit.StreamFanout = true
	e.opts.Rabbit.TransientQueuesTTL = 600 * time.Second
	// One worker: a server handles its messages in stream order, so when it
	// has recorded "second" it has recorded anything before it.
	e.opts.ExecutorThreadPoolSize = 1
	stream := e.topic + "_fanout"
	e.cleanups = append(e.cleanups, stream)

	recA, recB := newRecorder(), newRecorder()
	a := e.startServer(liveDispatcher(t, recA, nil))
	e.startServer(liveDispatcher(t, recB, nil))
	if a.fanoutQueue != stream {
		t.Fatalf("fanout queue %s, want %s", a.fanoutQueue, stream)
	}
	if err := e.declaredAs(stream, true, amqp.Table{"x-queue-type": "stream", "x-max-age": "600s"}); err != nil {
		t.Fatalf("%s is not a stream with x-max-age: %v", stream, err)
	}

	c := e.client()
	ctx := userCtx()
	fanout := Target{Topic: e.topic, Fanout: true}
	if err := c.Cast(ctx, fanout, "record", map[string]any{"value": 1, "note": "first"}); err != nil {
		t.Fatal(err)
	}
	recA.wait(t, "first")
	recB.wait(t, "first")

	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	recC := newRecorder()
	e.startServer(liveDispatcher(t, recC, nil))
	if err := c.Cast(ctx, fanout, "record", map[string]any{"value": 2, "note": "second"}); err != nil {
		t.Fatal(err)
	}
	recB.wait(t, "second")
	recC.wait(t, "second")
	recC.mu.Lock()
	got := append([]string(nil), recC.calls...)
	recC.mu.Unlock()
	if len(got) != 1 {
		t.Errorf("the server started later recorded %v, want only what came after it", got)
	}
	if err := e.declaredAs(stream, true, amqp.Table{"x-queue-type": "stream", "x-max-age": "600s"}); err != nil {
		t.Errorf("the stream is gone after a server stopped: %v", err)
	}
}

func TestTransientQuorumWithHAQueuesIsRefused(t *testing.T) {
	opts := DefaultOptions()
	opts.Rabbit.TransientQuorumQueue, opts.Rabbit.HAQueues = true, true
	if _, err := NewClient(opts, nil); err == nil {
		t.Error("NewClient accepted rabbit_transient_quorum_queue with rabbit_ha_queues")
	}
	if _, err := NewServer(opts, ServerOptions{}, Target{Topic: "t"}, NewDispatcher(), nil); err == nil {
		t.Error("NewServer accepted rabbit_transient_quorum_queue with rabbit_ha_queues")
	}
}

// TestQueueManagerCountsPerHostAndProcess: names count up across queue
// managers of one host and process name in this process group, and start
// again for another process name.
func TestQueueManagerCountsPerHostAndProcess(t *testing.T) {
	p1, p2 := "qm-"+uuidHex()[:8], "qm-"+uuidHex()[:8]
	t.Cleanup(func() {
		for _, p := range []string{p1, p2} {
			_ = os.Remove(filepath.Join("/dev/shm", "h_"+p+"_qmanager"))
		}
	})
	var got []string
	for _, p := range []string{p1, p1, p2, p1} {
		got = append(got, newQueueManager("h", p).next())
	}
	want := []string{"h:" + p1 + ":1", "h:" + p1 + ":2", "h:" + p2 + ":1", "h:" + p1 + ":3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if _, err := os.Stat("/dev/shm"); errors.Is(err, os.ErrNotExist) {
		t.Skip("no /dev/shm: the counter is kept in the process")
	}
	b, err := os.ReadFile(filepath.Join("/dev/shm", "h_"+p1+"_qmanager"))
	if err != nil || len(b) == 0 {
		t.Fatalf("counter file: %q %v", b, err)
	}
}

// TestLiveStreamFanoutResumesAfterConnectionLoss: after a lost connection
// the stream consumer resumes after the last offset it received, so a
// fanout cast published while it reconnected is delivered, and nothing is
// delivered twice.
func TestLiveStreamFanoutResumesAfterConnectionLoss(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.TransientQuorumQueue = true
	e.opts.Rabbit.StreamFanout = true
	e.opts.Rabbit.KombuReconnectDelay = time.Second
	e.opts.ExecutorThreadPoolSize = 1
	e.cleanups = append(e.cleanups, e.topic+"_fanout")
	rec := newRecorder()
	e.startServer(liveDispatcher(t, rec, nil))
	c := e.client()
	fanout := Target{Topic: e.topic, Fanout: true}
	if err := c.Cast(userCtx(), fanout, "record", map[string]any{"value": 1, "note": "one"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "one")
	if n := closeOwnConnections(t); n < 2 {
		t.Fatalf("closed %d connections, want the listener's and the client's", n)
	}
	// Published while the listener waits kombu_reconnect_delay.
	if err := c.Cast(userCtx(), fanout, "record", map[string]any{"value": 2, "note": "two"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "two")
	if err := c.Cast(userCtx(), fanout, "record", map[string]any{"value": 3, "note": "three"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "three")
	rec.mu.Lock()
	got := fmt.Sprint(rec.calls)
	rec.mu.Unlock()
	if got != "[one two three]" {
		t.Fatalf("recorded %s, want each fanout cast once", got)
	}
}
