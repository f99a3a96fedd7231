package oslo

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerAcks acknowledges like RabbitMQ: a tag that is not outstanding
// (never delivered, or acknowledged already) is an error that closes the
// channel; multiple=true acknowledges every outstanding tag up to it.
// It also records a multiple ack that covers a delivery the listener has
// not received yet.
type brokerAcks struct {
	outstanding map[uint64]bool
	received    map[uint64]bool
	calls       []string
	unseen      []uint64
}

func (b *brokerAcks) Ack(tag uint64, multiple bool) error {
	b.calls = append(b.calls, fmt.Sprintf("%d/%v", tag, multiple))
	if !b.outstanding[tag] {
		return fmt.Errorf("PRECONDITION_FAILED - unknown delivery tag %d", tag)
	}
	for t := range b.outstanding {
		if multiple && t < tag && !b.received[t] {
			b.unseen = append(b.unseen, t)
		}
	}
	for t := range b.outstanding {
		if t == tag || (multiple && t < tag) {
			delete(b.outstanding, t)
		}
	}
	return nil
}

// TestReceiveAcksDeliveriesArrivingOutOfOrder: the listener's three
// consumers can hand deliveries over out of tag order; each delivery is
// acknowledged once, and a multiple ack never reaches past a delivery not
// received yet (acknowledging a tag twice closes the channel and drops what
// it holds; acknowledging an unseen one loses it if the channel closes).
func TestReceiveAcksDeliveriesArrivingOutOfOrder(t *testing.T) {
	var mu sync.Mutex
	var got []string
	done := make(chan struct{}, 10)
	d := NewDispatcher()
	if err := d.Handle("record", Method(func(_ context.Context, a echoArgs) (any, error) {
		mu.Lock()
		got = append(got, a.Note)
		mu.Unlock()
		done <- struct{}{}
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(DefaultOptions(), ServerOptions{}, Target{Topic: "t"}, d, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.runCtx, s.runCancel = context.WithCancel(context.Background())
	s.workCtx, s.workCancel = context.WithCancel(context.Background())
	defer s.runCancel()
	defer s.workCancel()

	b := &brokerAcks{outstanding: map[uint64]bool{1: true, 2: true, 3: true, 4: true, 5: true}, received: map[uint64]bool{}}
	cast := func(tag uint64) amqp.Delivery {
		body, err := encodeRequest(userCtx(), Target{Topic: "t"}, "record",
			map[string]any{"value": 1, "note": fmt.Sprint(tag)}, "", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		b.received[tag] = true
		return amqp.Delivery{DeliveryTag: tag, Body: body}
	}
	var acks ackState
	s.receive(b, &acks, []amqp.Delivery{cast(2)})          // 1 is still in another consumer's buffer
	s.receive(b, &acks, []amqp.Delivery{cast(1)})          // 1 and 2 acknowledged: the run goes on
	s.receive(b, &acks, []amqp.Delivery{cast(4), cast(3)}) // one multiple ack for both
	s.receive(b, &acks, []amqp.Delivery{cast(5)})
	for i := 0; i < 5; i++ {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 5 casts dispatched (acks %v)", i, b.calls)
		}
	}
	if fmt.Sprint(b.calls) != "[2/false 1/true 4/true 5/true]" {
		t.Errorf("acks %v, want [2/false 1/true 4/true 5/true]", b.calls)
	}
	if len(b.unseen) != 0 {
		t.Errorf("multiple acks covered deliveries not received yet: %v", b.unseen)
	}
	if len(b.outstanding) != 0 {
		t.Errorf("left unacknowledged: %v", b.outstanding)
	}
	mu.Lock()
	sort.Strings(got)
	mu.Unlock()
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Errorf("dispatched %v", got)
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
	var logs lockedBuffer
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
