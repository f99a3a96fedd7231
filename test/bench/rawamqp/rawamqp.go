// Package rawamqp is the benchmark's reference: a request/reply pair on
// plain amqp091-go with no oslo envelope, no JSON and no dispatch, so that
// its rate is what the broker itself allows on the machine. The benchmark
// runs the Server in a process of its own, as a conductor runs, and the
// Client in the load generator.
//
// It keeps the broker-level behaviour of oslo.messaging's rabbit driver (and
// of our api/oslo), so that the difference to a conductor is the
// conductor's own work: requests go through a topic exchange to a queue,
// the server acks what it has received with one multiple ack before
// handling it, handles each request on its own goroutine, and replies
// through the default exchange to the caller's reply queue; the caller acks
// replies the same way. With Confirm, every publish is mandatory and in
// confirm mode, one publish in flight per channel from a pool of channels,
// as oslo's kombu transport (confirm_publish) and api/oslo do; like
// api/oslo, a caller returns on the reply and collects the confirm of its
// request in the background.
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

// Options configure either end.
type Options struct {
	URL string
	// Exchange and Queue name the request route (the server declares
	// them, auto-deleted).
	Exchange, Queue string
	// Confirm makes every publish mandatory and confirmed by the broker.
	Confirm bool
	// OsloWire gives every message what the broker handles for a
	// conductor's traffic, still without any Go-side JSON: persistent
	// delivery, the JSON content properties and an empty headers table,
	// an expiration on requests; the server answers with ReplyBody (callers
	// send a recorded oslo request as the body).
	OsloWire bool
	// Parts, when OsloWire is false, sets only some of oslo's properties
	// (to measure what each costs the broker).
	Parts *WireParts
	// ReplyBody, when set, is the server's answer (else it echoes the
	// request's body).
	ReplyBody []byte
	// Work, when set, runs on the server before each reply (the list
	// ceiling's database query); when it fails, the reply is empty.
	Work func(context.Context) error
}

// WireParts are the properties oslo.messaging's rabbit driver gives its
// messages, each on its own.
type WireParts struct {
	Persistent bool // delivery mode 2
	Properties bool // JSON content type, utf-8 encoding, an empty headers table
	Expiration bool // requests expire after the call timeout (60 s)
}

// parts is what o's messages carry.
func (o Options) parts() WireParts {
	switch {
	case o.OsloWire:
		return WireParts{Persistent: true, Properties: true, Expiration: true}
	case o.Parts != nil:
		return *o.Parts
	}
	return WireParts{}
}

// RandomName returns prefix and 12 random hex digits.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Server answers every request with its own body.
type Server struct {
	consume, publish *amqp.Connection
	pool             *chanPool
	done             chan struct{}
}

// StartServer declares the exchange and queue and starts consuming.
func StartServer(o Options) (*Server, error) {
	s := &Server{done: make(chan struct{})}
	var err error
	if s.consume, err = amqp.Dial(o.URL); err != nil {
		return nil, fmt.Errorf("rawamqp: dial: %w", err)
	}
	if s.publish, err = amqp.Dial(o.URL); err != nil {
		s.Close()
		return nil, fmt.Errorf("rawamqp: dial: %w", err)
	}
	s.pool = &chanPool{conn: s.publish, confirm: o.Confirm}
	ch, err := s.consume.Channel()
	if err == nil {
		err = ch.ExchangeDeclare(o.Exchange, "topic", false, true, false, false, nil)
	}
	if err == nil {
		_, err = ch.QueueDeclare(o.Queue, false, true, false, false, nil)
	}
	if err == nil {
		err = ch.QueueBind(o.Queue, o.Queue, o.Exchange, false, nil)
	}
	var in <-chan amqp.Delivery
	if err == nil {
		in, err = ch.Consume(o.Queue, "", false, false, false, false, nil)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("rawamqp: server: %w", err)
	}
	go func() {
		defer close(s.done)
		for d := range in {
			batch := drain(d, in)
			_ = ch.Ack(batch[len(batch)-1].DeliveryTag, true)
			for _, d := range batch {
				go func(d amqp.Delivery) {
					ctx := context.Background()
					msg := withParts(amqp.Publishing{CorrelationId: d.CorrelationId, Body: d.Body}, o.parts(), false)
					if o.ReplyBody != nil {
						msg.Body = o.ReplyBody
					}
					if o.Work != nil {
						if err := o.Work(ctx); err != nil {
							msg.Body = nil
						}
					}
					dc, pc, err := s.pool.start(ctx, "", d.ReplyTo, msg)
					if err == nil {
						_ = s.pool.finish(ctx, dc, pc)
					}
				}(d)
			}
		}
	}()
	return s, nil
}

// Done is closed when the server's consumer ends (connection closed).
func (s *Server) Done() <-chan struct{} { return s.done }

// Close closes the connections.
func (s *Server) Close() {
	for _, c := range []*amqp.Connection{s.consume, s.publish} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// Client calls a Server.
type Client struct {
	o                Options
	publish, consume *amqp.Connection
	pool             *chanPool
	replyQ           string

	mu      sync.Mutex
	waiting map[string]chan []byte
	seq     atomic.Uint64
	done    chan struct{}
}

// NewClient opens the client's connections and reply queue.
func NewClient(o Options) (*Client, error) {
	c := &Client{o: o, replyQ: RandomName("bench_raw_reply_"), waiting: map[string]chan []byte{}, done: make(chan struct{})}
	var err error
	if c.publish, err = amqp.Dial(o.URL); err != nil {
		return nil, fmt.Errorf("rawamqp: dial: %w", err)
	}
	if c.consume, err = amqp.Dial(o.URL); err != nil {
		c.Close()
		return nil, fmt.Errorf("rawamqp: dial: %w", err)
	}
	c.pool = &chanPool{conn: c.publish, confirm: o.Confirm}
	ch, err := c.consume.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(c.replyQ, false, true, false, false, nil)
	}
	var in <-chan amqp.Delivery
	if err == nil {
		in, err = ch.Consume(c.replyQ, "", false, false, false, false, nil)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rawamqp: client: %w", err)
	}
	go func() {
		defer close(c.done)
		for d := range in {
			batch := drain(d, in)
			_ = ch.Ack(batch[len(batch)-1].DeliveryTag, true)
			for _, d := range batch {
				c.mu.Lock()
				w := c.waiting[d.CorrelationId]
				delete(c.waiting, d.CorrelationId)
				c.mu.Unlock()
				if w != nil {
					w <- d.Body
				}
			}
		}
	}()
	return c, nil
}

// Call sends body and waits for the reply.
func (c *Client) Call(ctx context.Context, body []byte) ([]byte, error) {
	id := strconv.FormatUint(c.seq.Add(1), 10)
	w := make(chan []byte, 1)
	c.mu.Lock()
	c.waiting[id] = w
	c.mu.Unlock()
	msg := withParts(amqp.Publishing{CorrelationId: id, ReplyTo: c.replyQ, Body: body}, c.o.parts(), true)
	dc, pc, err := c.pool.start(ctx, c.o.Exchange, c.o.Queue, msg)
	if err == nil {
		select {
		case b := <-w:
			// The reply came first: collect the confirm in the background.
			go func() { _ = c.pool.finish(context.WithoutCancel(ctx), dc, pc) }()
			return b, nil
		case <-ctx.Done():
			err = ctx.Err()
			go func() { _ = c.pool.finish(context.WithoutCancel(ctx), dc, pc) }()
		}
	}
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
	return nil, err
}

// Close closes the connections (the reply queue is auto-deleted).
func (c *Client) Close() {
	for _, x := range []*amqp.Connection{c.publish, c.consume} {
		if x != nil {
			_ = x.Close()
		}
	}
}

// withParts sets the properties p names, as oslo.messaging's rabbit driver
// sets them (the expiration on requests only: the call timeout).
func withParts(m amqp.Publishing, p WireParts, request bool) amqp.Publishing {
	if p.Persistent {
		m.DeliveryMode = amqp.Persistent
	}
	if p.Properties {
		m.ContentType, m.ContentEncoding, m.Headers = "application/json", "utf-8", amqp.Table{}
	}
	if p.Expiration && request {
		m.Expiration = "60000"
	}
	return m
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

// chanPool hands out channels, one publish in flight on each.
type chanPool struct {
	conn    *amqp.Connection
	confirm bool
	mu      sync.Mutex
	idle    []*amqp.Channel
}

// start publishes msg on a channel of the pool; finish waits for its
// confirm (if any) and gives the channel back.
func (cp *chanPool) start(ctx context.Context, exchange, key string, msg amqp.Publishing) (*amqp.DeferredConfirmation, *amqp.Channel, error) {
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
			return nil, nil, err
		}
		if cp.confirm {
			if err := ch.Confirm(false); err != nil {
				_ = ch.Close()
				return nil, nil, err
			}
		}
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, cp.confirm, false, msg)
	if err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	return dc, ch, nil
}

func (cp *chanPool) finish(ctx context.Context, dc *amqp.DeferredConfirmation, ch *amqp.Channel) error {
	if dc != nil {
		ok, err := dc.WaitContext(ctx)
		if err == nil && !ok {
			err = errors.New("rawamqp: publish nacked")
		}
		if err != nil {
			_ = ch.Close()
			return err
		}
	}
	cp.mu.Lock()
	cp.idle = append(cp.idle, ch)
	cp.mu.Unlock()
	return nil
}
