package oslo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// acks records acknowledgements like a channel: each tag once, or an
// error as RabbitMQ closes the channel for a tag acknowledged twice.
type acks struct {
	mu    sync.Mutex
	acked map[uint64]bool
	err   error
}

func (a *acks) Ack(tag uint64, multiple bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if multiple || a.acked[tag] {
		a.err = fmt.Errorf("PRECONDITION_FAILED - unknown delivery tag %d (multiple %v)", tag, multiple)
		return a.err
	}
	a.acked[tag] = true
	return nil
}

func (a *acks) has(tag uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked[tag]
}

func (a *acks) Nack(uint64, bool, bool) error { return errors.New("nack") }
func (a *acks) Reject(uint64, bool) error     { return errors.New("reject") }

// TestServeAcknowledgesCallsFirstAndCastsOnceHandled: a call is
// acknowledged before its method runs, as oslo does; a cast only once its
// method has returned, so that a conductor killed meanwhile leaves it to
// the broker for another one; undecodable and duplicate messages are
// acknowledged too. Each delivery exactly once, never with multiple=true.
func TestServeAcknowledgesCallsFirstAndCastsOnceHandled(t *testing.T) {
	entered := make(chan string, 10)
	release := make(chan struct{})
	d := NewDispatcher()
	if err := d.Handle("record", Method(func(_ context.Context, a echoArgs) (any, error) {
		entered <- a.Note
		<-release
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.TransportURL = "rabbit://guest:guest@127.0.0.1:1/" // replies go nowhere
	opts.Rabbit.MissingConsumerRetryTimeout = 100 * time.Millisecond
	s, err := NewServer(opts, ServerOptions{}, Target{Topic: "t"}, d, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.runCtx, s.runCancel = context.WithCancel(context.Background())
	s.workCtx, s.workCancel = context.WithCancel(context.Background())
	s.pubCtx, s.pubCancel = context.WithCancel(context.Background())
	defer s.runCancel()
	defer s.workCancel()
	defer s.pubCancel()

	a := &acks{acked: map[uint64]bool{}}
	msg := func(tag uint64, note, msgID string) amqp.Delivery {
		replyQ := ""
		if msgID != "" {
			replyQ = "reply_x"
		}
		body, err := encodeRequest(userCtx(), Target{Topic: "t"}, "record", map[string]any{"value": 1, "note": note}, msgID, replyQ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return amqp.Delivery{Acknowledger: a, DeliveryTag: tag, Body: body}
	}
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-entered:
			if got != want {
				t.Fatalf("entered %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s never ran", want)
		}
	}
	s.receive([]amqp.Delivery{msg(1, "cast", ""), msg(2, "call", "m2")})
	started := map[string]bool{}
	for range 2 {
		select {
		case n := <-entered:
			started[n] = true
		case <-time.After(5 * time.Second):
			t.Fatal("the two requests did not both start")
		}
	}
	if !started["cast"] || !started["call"] {
		t.Fatalf("started %v", started)
	}
	if a.has(1) {
		t.Fatal("the cast was acknowledged while its method runs")
	}
	if !a.has(2) {
		t.Fatal("the call was not acknowledged before its method ran")
	}
	close(release)
	s.inflight.Wait()
	if !a.has(1) {
		t.Fatal("the cast was not acknowledged once handled")
	}
	// Undecodable, and a duplicate _unique_id: acknowledged, not run.
	dup := msg(4, "dup", "")
	s.receive([]amqp.Delivery{{Acknowledger: a, DeliveryTag: 3, Body: []byte("{not json")}, dup})
	wait("dup")
	dup.DeliveryTag = 5
	s.receive([]amqp.Delivery{dup})
	s.inflight.Wait()
	select {
	case n := <-entered:
		t.Fatalf("%s ran twice", n)
	default:
	}
	for tag := uint64(1); tag <= 5; tag++ {
		if !a.has(tag) {
			t.Errorf("delivery %d not acknowledged", tag)
		}
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
}

// TestLiveInterleavedConsumersLoseNothing: casts to the topic queue, the
// server queue and the fanout queue at once reach the listener through its
// three consumers in any order; every one is served and the listener never
// loses its channel.
func TestLiveInterleavedConsumersLoseNothing(t *testing.T) {
	e := newEnv(t)
	const each = 400
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	d := NewDispatcher()
	if err := d.Handle("record", Method(func(_ context.Context, a echoArgs) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[a.Note] = true
		if len(seen) == 3*each {
			close(all)
		}
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	var logs testkit.SyncBuffer
	s := e.startServerLogged(Target{Topic: e.topic}, d, slog.New(slog.NewTextHandler(&logs, nil)))
	c := e.client()
	targets := []Target{{Topic: e.topic}, {Topic: e.topic, Server: s.Target().Server}, {Topic: e.topic, Fanout: true}}
	var wg sync.WaitGroup
	for i, tgt := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < each; n++ {
				if err := c.Cast(context.Background(), tgt, "record", map[string]any{"value": n, "note": fmt.Sprintf("%d-%d", i, n)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("%d of %d casts served; server log:\n%s", n, 3*each, logs.String())
	}
	if strings.Contains(logs.String(), "lost its connection") || strings.Contains(logs.String(), "failed acknowledge") {
		t.Fatalf("the listener lost its channel:\n%s", logs.String())
	}
}

// TestLiveCastRetriedWhenItCannotBeDoneForNow: a cast whose method fails
// with an error RetryCast picks (the database cannot be reached) is not
// lost: it goes back to its queue and is served again; a cast failing
// otherwise is not.
func TestLiveCastRetriedWhenItCannotBeDoneForNow(t *testing.T) {
	e := newEnv(t)
	errLater := errors.New("database away")
	var mu sync.Mutex
	tries := map[string]int{}
	rec := newRecorder()
	d := NewDispatcher()
	if err := d.Handle("flaky", Method(func(_ context.Context, a echoArgs) (any, error) {
		mu.Lock()
		tries[a.Note]++
		n := tries[a.Note]
		mu.Unlock()
		if n < 3 && a.Note == "later" || a.Note == "call" {
			return nil, fmt.Errorf("db: create cluster: %w", errLater)
		}
		if a.Note == "broken" {
			return nil, errors.New("driver refused")
		}
		rec.add(fmt.Sprintf("%s-%d", a.Note, n))
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(e.opts, ServerOptions{RetryDelay: 50 * time.Millisecond,
		RetryCast: func(err error) bool { return errors.Is(err, errLater) }}, Target{Topic: e.topic}, d, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	c := e.client()
	for _, note := range []string{"broken", "later", "now"} {
		if err := c.Cast(userCtx(), Target{Topic: e.topic}, "flaky", map[string]any{"value": 1, "note": note}); err != nil {
			t.Fatal(err)
		}
	}
	rec.wait(t, "now-1")
	rec.wait(t, "later-3")
	// A call gets the error at once: its caller decides.
	if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "flaky", map[string]any{"value": 1, "note": "call"}); err == nil ||
		!strings.Contains(err.Error(), "database away") {
		t.Fatalf("call: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries["broken"] != 1 || tries["call"] != 1 {
		t.Fatalf("a cast failing for good was tried %d times, the call %d times", tries["broken"], tries["call"])
	}
}
