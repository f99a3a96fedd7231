package oslo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ReturnedError is a mandatory message the broker could not route
// (Basic.Return, normally 312 NO_ROUTE: the reply queue is gone).
type ReturnedError struct {
	Code     uint16
	Text     string
	Exchange string
	Key      string
}

func (e *ReturnedError) Error() string {
	return fmt.Sprintf("message to %q with routing key %q returned: %d %s", e.Exchange, e.Key, e.Code, e.Text)
}

// publishing is one message to send.
type publishing struct {
	exchange   string
	key        string
	mandatory  bool
	body       []byte
	expiration string
	// tries, when above 0, bounds the failed tries (one dial or one
	// publish each) before publish gives up: oslo's retry + 1. At 0 it
	// retries until ctx ends.
	tries int
	// declare, when set, runs once per connection for declareKey before
	// the first publish (oslo's _declared_exchanges/_declared_queues).
	declareKey string
	declare    func(ch *amqp.Channel) error
}

// pubChannel is one confirm-mode channel. It serves one publish at a time,
// so that a Basic.Return (which the broker sends before the Basic.Ack of
// the same message) is attributed without ambiguity.
type pubChannel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	gen     int
	idle    time.Time // when it went back to the pool
}

// publisher sends messages on a confirm-mode publisher connection,
// reconnecting as needed (oslo's publisher connection pool).
type publisher struct {
	d   *dialer
	log *slog.Logger

	mu       sync.Mutex
	conn     *brokerConn
	gen      int
	idle     []*pubChannel
	declared map[string]bool
	closed   bool

	compression string // kombu's content type of the bodies sent, "" for none
}

func newPublisher(d *dialer, log *slog.Logger) *publisher {
	p := &publisher{d: d, log: log, declared: map[string]bool{}}
	// Options.check refused an unknown compression already.
	switch ct, _ := compressionType(d.opts.Compression); ct {
	case compressionZlib:
		p.compression = ct
	case compressionBzip2:
		log.Warn("kombu_compression bzip2 is read but not written here: messages are sent uncompressed, which every peer reads",
			"purpose", d.purpose)
	}
	return p
}

var errPublisherClosed = errors.New("oslo: publisher closed")

// getChannel returns a pooled channel or opens one, connecting first when
// needed with at most dials dials (0: until ctx ends).
func (p *publisher) getChannel(ctx context.Context, dials int) (*pubChannel, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPublisherClosed
	}
	if n := len(p.idle); n > 0 {
		pc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		expired := p.expireLocked(time.Now())
		p.mu.Unlock()
		closeChannels(expired)
		if !pc.ch.IsClosed() {
			return pc, nil
		}
		p.mu.Lock()
	}
	conn, gen := p.conn, p.gen
	p.mu.Unlock()

	if conn == nil || conn.IsClosed() {
		var err error
		if conn, gen, err = p.reconnect(ctx, gen, dials); err != nil {
			return nil, err
		}
	}
	ch, err := conn.Channel()
	if err != nil {
		p.dropConn(gen)
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	pc := &pubChannel{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return)), gen: gen}
	return pc, nil
}

// reconnect replaces the connection of generation gen (if nobody did yet).
func (p *publisher) reconnect(ctx context.Context, gen, dials int) (*brokerConn, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, errPublisherClosed
	}
	if p.conn != nil && !p.conn.IsClosed() && p.gen != gen {
		return p.conn, p.gen, nil
	}
	if p.conn != nil {
		closeConn(p.conn)
	}
	conn, err := p.d.connectTries(ctx, dials)
	if err != nil {
		return nil, 0, err
	}
	p.conn = conn
	p.gen++
	p.idle = nil
	p.declared = map[string]bool{}
	return conn, p.gen, nil
}

// dropConn closes the connection of generation gen, if it is still the
// publisher's. Closing a connection or a channel waits for the broker's
// answer: here and below it is done after p.mu is released, so that a
// broker slow to answer holds up the goroutine that closes, not every
// publish.
func (p *publisher) dropConn(gen int) {
	p.mu.Lock()
	conn := p.conn
	if p.gen != gen || conn == nil {
		p.mu.Unlock()
		return
	}
	p.conn = nil
	p.mu.Unlock()
	closeConn(conn)
}

// putChannel gives pc back to the pool, which keeps at most
// rpc_conn_pool_size idle channels.
func (p *publisher) putChannel(pc *pubChannel) {
	p.mu.Lock()
	if p.closed || pc.gen != p.gen || len(p.idle) >= p.d.opts.PoolSize {
		p.mu.Unlock()
		_ = pc.ch.Close()
		return
	}
	pc.idle = time.Now()
	p.idle = append(p.idle, pc)
	p.mu.Unlock()
}

// expireLocked takes out of the pool the channels idle for longer than
// conn_pool_ttl, oldest first, keeping conn_pool_min_size (oslo's pool
// expires its connections the same way when one is taken), for the caller
// to close once it has released p.mu.
func (p *publisher) expireLocked(now time.Time) []*pubChannel {
	n := 0
	for len(p.idle)-n > p.d.opts.PoolMinSize && now.Sub(p.idle[n].idle) > p.d.opts.PoolTTL {
		n++
	}
	if n == 0 {
		return nil
	}
	expired := append([]*pubChannel(nil), p.idle[:n]...)
	p.idle = append(p.idle[:0], p.idle[n:]...)
	p.log.Debug("idle publisher channels expired", "closed", n, "pool_size", len(p.idle))
	return expired
}

func closeChannels(pcs []*pubChannel) {
	for _, pc := range pcs {
		_ = pc.ch.Close()
	}
}

func (p *publisher) isDeclared(gen int, key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return gen == p.gen && p.declared[key]
}

func (p *publisher) markDeclared(gen int, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen == p.gen {
		p.declared[key] = true
	}
}

// publish sends m and waits for the broker's confirm. Connection failures
// are retried until ctx ends (oslo's retry=None), or m.tries have failed;
// a returned mandatory message is reported as *ReturnedError without
// retry.
func (p *publisher) publish(ctx context.Context, m publishing) error {
	dials := 0
	if m.tries > 0 {
		// Each dial is one try, with publish's backoff between them.
		dials = 1
	}
	giveUp := func(attempt int, err error) error {
		p.log.Error("giving up on a message the broker did not take", "exchange", m.exchange,
			"routing_key", m.key, "tries", attempt+1, "error", err.Error())
		return fmt.Errorf("oslo: message to %q with routing key %q not sent after %d tries: %w",
			m.exchange, m.key, attempt+1, err)
	}
	for attempt := 0; ; attempt++ {
		pc, err := p.getChannel(ctx, dials)
		if err != nil {
			if errors.Is(err, errPublisherClosed) || ctx.Err() != nil {
				return err
			}
			if m.tries > 0 && attempt+1 >= m.tries {
				return giveUp(attempt, err)
			}
			p.log.Warn("publisher channel unavailable, retrying", "error", err.Error(), "attempt", attempt+1)
			if err := sleepCtx(ctx, p.d.retryWait(attempt)); err != nil {
				return err
			}
			continue
		}
		err = p.try(ctx, pc, m)
		var re *ReturnedError
		switch {
		case err == nil || errors.As(err, &re):
			p.putChannel(pc)
			return err
		case ctx.Err() != nil:
			_ = pc.ch.Close()
			return err
		}
		_ = pc.ch.Close()
		if m.tries > 0 && attempt+1 >= m.tries {
			return giveUp(attempt, err)
		}
		p.log.Warn("publish failed, retrying", "exchange", m.exchange, "routing_key", m.key,
			"error", err.Error(), "attempt", attempt+1)
		if err := sleepCtx(ctx, p.d.retryWait(attempt)/4); err != nil {
			return err
		}
	}
}

func (p *publisher) try(ctx context.Context, pc *pubChannel, m publishing) error {
	dc, err := p.send(ctx, pc, m)
	if err != nil {
		return err
	}
	return p.await(ctx, pc, dc, m)
}

// send declares what m needs (once per connection) and publishes it
// without waiting for the confirm.
func (p *publisher) send(ctx context.Context, pc *pubChannel, m publishing) (*amqp.DeferredConfirmation, error) {
	if m.declare != nil && !p.isDeclared(pc.gen, m.declareKey) {
		if err := m.declare(pc.ch); err != nil {
			return nil, fmt.Errorf("declaring %s: %w", m.declareKey, err)
		}
		p.markDeclared(pc.gen, m.declareKey)
	}
	headers, body := amqp.Table{}, m.body
	if p.compression != "" {
		// As kombu's Producer.publish: the body compressed, its content
		// type and encoding unchanged, the compression in a header.
		var err error
		if body, err = compress(body); err != nil {
			return nil, err
		}
		headers["compression"] = p.compression
	}
	return pc.ch.PublishWithDeferredConfirmWithContext(ctx, m.exchange, m.key, m.mandatory, false, amqp.Publishing{
		Headers:         headers,
		ContentType:     "application/json",
		ContentEncoding: "utf-8",
		DeliveryMode:    amqp.Persistent,
		Priority:        0,
		Expiration:      m.expiration,
		Body:            body,
	})
}

// await waits for the broker's confirm of the message sent on pc,
// reporting a Basic.Return (which precedes the ack) as *ReturnedError.
func (p *publisher) await(ctx context.Context, pc *pubChannel, dc *amqp.DeferredConfirmation, m publishing) error {
	var returned *ReturnedError
	for {
		select {
		case r, ok := <-pc.returns:
			if !ok {
				return errors.New("publisher channel closed")
			}
			returned = &ReturnedError{Code: r.ReplyCode, Text: r.ReplyText, Exchange: r.Exchange, Key: r.RoutingKey}
		case <-dc.Done():
			if returned != nil {
				return returned
			}
			if !dc.Acked() {
				return fmt.Errorf("broker nacked message to %q/%q", m.exchange, m.key)
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// inflightPublish is a message sent but not yet confirmed.
type inflightPublish struct {
	p  *publisher
	pc *pubChannel
	dc *amqp.DeferredConfirmation
	m  publishing
}

// start publishes m on a pooled channel without waiting for the confirm;
// the caller must call finish. On any failure it falls back to publish
// (with its retries) and returns a nil *inflightPublish.
func (p *publisher) start(ctx context.Context, m publishing) (*inflightPublish, error) {
	pc, err := p.getChannel(ctx, 0)
	if err == nil {
		dc, serr := p.send(ctx, pc, m)
		if serr == nil {
			return &inflightPublish{p: p, pc: pc, dc: dc, m: m}, nil
		}
		_ = pc.ch.Close()
	}
	return nil, p.publish(ctx, m)
}

// confirmed is closed when the broker answered.
func (ip *inflightPublish) confirmed() <-chan struct{} { return ip.dc.Done() }

// finish waits for the confirm and gives the channel back.
func (ip *inflightPublish) finish(ctx context.Context) error {
	err := ip.p.await(ctx, ip.pc, ip.dc, ip.m)
	var re *ReturnedError
	if err == nil || errors.As(err, &re) {
		ip.p.putChannel(ip.pc)
	} else {
		_ = ip.pc.ch.Close()
	}
	return err
}

// close closes the connection, within closeConn's bound once it has p.mu
// (which a reconnection holds while it dials, within its context). The
// pooled channels go with it: closing each first would be one more wait
// for the broker.
func (p *publisher) close() {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	if conn != nil {
		closeConn(conn)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
