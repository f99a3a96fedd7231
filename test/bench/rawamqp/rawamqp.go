// Package rawamqp is the benchmark's reference: a request/reply pair on
// plain amqp091-go with no oslo envelope, no JSON and no dispatch, so that
// its rate is what the broker itself allows on the machine.
//
// It keeps the broker-level behaviour of oslo.messaging's rabbit driver (and
// of our api/oslo), so that the difference to a conductor is the conductor's
// own work: requests go through a topic exchange to a queue, the server acks
// what it has received with one multiple ack before handling it, handles
// each request on its own goroutine, and replies through the default
// exchange to the caller's reply queue; the caller acks replies the same
// way. With Confirm, every publish is mandatory and waits for the broker's
// confirm, one publish in flight per channel from a pool of channels, as
// oslo's kombu transport (confirm_publish) and api/oslo do.
package rawamqp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Options configure a pair.
type Options struct {
	URL string
	// Confirm makes every publish mandatory and wait for the broker's ack.
	Confirm bool
}

// Pair is a running server and a client.
type Pair struct {
	o        Options
	exchange string
	queue    string
	replyQ   string

	srvConsume, srvPublish, cliPublish, cliConsume *amqp.Connection
	srvPool, cliPool                               *chanPool

	mu      sync.Mutex
	waiting map[string]chan []byte
	seq     atomic.Uint64
	wg      sync.WaitGroup
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Start declares the exchange and queues and starts the server and the
// client's reply consumer. Close deletes them.
func Start(ctx context.Context, o Options) (*Pair, error) {
	p := &Pair{o: o, exchange: randomName("bench_raw_x_"), queue: randomName("bench_raw_q_"),
		replyQ: randomName("bench_raw_reply_"), waiting: map[string]chan []byte{}}
	var err error
	for _, c := range []**amqp.Connection{&p.srvConsume, &p.srvPublish, &p.cliPublish, &p.cliConsume} {
		if *c, err = amqp.Dial(o.URL); err != nil {
			p.Close()
			return nil, fmt.Errorf("rawamqp: dial: %w", err)
		}
	}
	p.srvPool = &chanPool{conn: p.srvPublish, confirm: o.Confirm}
	p.cliPool = &chanPool{conn: p.cliPublish, confirm: o.Confirm}

	ch, err := p.srvConsume.Channel()
	if err != nil {
		p.Close()
		return nil, err
	}
	if err := ch.ExchangeDeclare(p.exchange, "topic", false, true, false, false, nil); err != nil {
		p.Close()
		return nil, err
	}
	if _, err := ch.QueueDeclare(p.queue, false, true, false, false, nil); err != nil {
		p.Close()
		return nil, err
	}
	if err := ch.QueueBind(p.queue, p.queue, p.exchange, false, nil); err != nil {
		p.Close()
		return nil, err
	}
	reqs, err := ch.Consume(p.queue, "", false, false, false, false, nil)
	if err != nil {
		p.Close()
		return nil, err
	}
	rch, err := p.cliConsume.Channel()
	if err != nil {
		p.Close()
		return nil, err
	}
	if _, err := rch.QueueDeclare(p.replyQ, false, true, false, false, nil); err != nil {
		p.Close()
		return nil, err
	}
	replies, err := rch.Consume(p.replyQ, "", false, false, false, false, nil)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.wg.Add(2)
	go p.serve(ch, reqs)
	go p.receive(rch, replies)
	return p, nil
}

// drain returns d and whatever else is already buffered (up to 64).
func drain(d amqp.Delivery, in <-chan amqp.Delivery) []amqp.Delivery {
	batch := append(make([]amqp.Delivery, 0, 8), d)
	for len(batch) < 64 {
		select {
		case d, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}

func (p *Pair) serve(ch *amqp.Channel, in <-chan amqp.Delivery) {
	defer p.wg.Done()
	for d := range in {
		batch := drain(d, in)
		_ = ch.Ack(batch[len(batch)-1].DeliveryTag, true)
		for _, d := range batch {
			go func(d amqp.Delivery) {
				// The reply: the request body back, to the caller's queue.
				_ = p.srvPool.publish(context.Background(), "", d.ReplyTo, amqp.Publishing{
					CorrelationId: d.CorrelationId, Body: d.Body})
			}(d)
		}
	}
}

func (p *Pair) receive(ch *amqp.Channel, in <-chan amqp.Delivery) {
	defer p.wg.Done()
	for d := range in {
		batch := drain(d, in)
		_ = ch.Ack(batch[len(batch)-1].DeliveryTag, true)
		for _, d := range batch {
			p.mu.Lock()
			w := p.waiting[d.CorrelationId]
			delete(p.waiting, d.CorrelationId)
			p.mu.Unlock()
			if w != nil {
				w <- d.Body
			}
		}
	}
}

// Call sends body and waits for the server's reply.
func (p *Pair) Call(ctx context.Context, body []byte) ([]byte, error) {
	id := strconv.FormatUint(p.seq.Add(1), 10)
	w := make(chan []byte, 1)
	p.mu.Lock()
	p.waiting[id] = w
	p.mu.Unlock()
	err := p.cliPool.publish(ctx, p.exchange, p.queue, amqp.Publishing{
		CorrelationId: id, ReplyTo: p.replyQ, Body: body})
	if err == nil {
		select {
		case b := <-w:
			return b, nil
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
	return nil, err
}

// Close stops both ends; the auto-delete queues and exchange go with them.
func (p *Pair) Close() {
	for _, c := range []*amqp.Connection{p.srvConsume, p.srvPublish, p.cliPublish, p.cliConsume} {
		if c != nil {
			_ = c.Close()
		}
	}
	p.wg.Wait()
}

// chanPool hands out channels, one publish in flight on each.
type chanPool struct {
	conn    *amqp.Connection
	confirm bool
	mu      sync.Mutex
	idle    []*amqp.Channel
}

func (cp *chanPool) publish(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	cp.mu.Lock()
	var ch *amqp.Channel
	if n := len(cp.idle); n > 0 {
		ch = cp.idle[n-1]
		cp.idle = cp.idle[:n-1]
	}
	cp.mu.Unlock()
	if ch == nil {
		var err error
		if ch, err = cp.conn.Channel(); err != nil {
			return err
		}
		if cp.confirm {
			if err := ch.Confirm(false); err != nil {
				_ = ch.Close()
				return err
			}
		}
	}
	var err error
	if cp.confirm {
		var dc *amqp.DeferredConfirmation
		dc, err = ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, msg)
		if err == nil {
			var ok bool
			ok, err = dc.WaitContext(ctx)
			if err == nil && !ok {
				err = errors.New("rawamqp: publish nacked")
			}
		}
	} else {
		err = ch.PublishWithContext(ctx, exchange, key, false, false, msg)
	}
	if err != nil {
		_ = ch.Close()
		return err
	}
	cp.mu.Lock()
	cp.idle = append(cp.idle, ch)
	cp.mu.Unlock()
	return nil
}
