package oslo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/pyjson"
	"github.com/openstack/magnum-conductor/api/request"
)

// Target names where requests go: exchange (default: the control
// exchange), topic, and optionally one server. Fanout targets every server
// of the topic.
type Target struct {
	Exchange string
	Topic    string
	Server   string
	Fanout   bool
	// Version and Namespace are sent when set ("" = absent, as magnum).
	Version   string
	Namespace string
}

// NewServerID returns a random server name as magnum's
// short_id.generate_id(): 12 lowercase base32 characters.
func NewServerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:12]
}

// ServerOptions are the RPC server's own settings.
type ServerOptions struct {
	// GracePeriod bounds how long Stop waits for in-flight requests when
	// its ctx has no deadline. Default 60s.
	GracePeriod time.Duration
	// TranslateError, when set, turns a method's error into the one the
	// caller gets (and the log shows) before it becomes a failure: what a
	// Python service's libraries would have raised for it (oslo.db's
	// DBConnectionError for a lost database, say), rather than
	// MagnumException.
	TranslateError func(error) error
	// RetryCast, when set, picks the cast errors that say the work could
	// not be done for now (the database cannot be reached): such a cast is
	// not acknowledged but returned to its queue after RetryDelay (at once
	// when the server stops), for this or another conductor to do, instead
	// of being lost. Its handlers must tell a cast they see again (their
	// status checks do).
	RetryCast func(error) bool
	// RetryDelay is the wait before a cast is returned to its queue.
	// Default 1s.
	RetryDelay time.Duration
}

// Server is an oslo.messaging RPC server on the rabbit driver: it declares
// and consumes the topic, server and fanout queues of its target, hands
// each request to a bounded worker pool (acknowledging a call before it
// runs and a cast once it has run), and replies
// through a confirm-mode publisher.
type Server struct {
	opts   Options
	sopts  ServerOptions
	target Target
	disp   *Dispatcher
	log    *slog.Logger

	listenDialer *dialer
	pub          *publisher

	fanoutQueue string
	// streamNext is the offset of the next message of the stream fanout
	// queue (rabbit_stream_fanout), once one was received: a new consumer
	// after a lost connection resumes there.
	streamNext    int64
	streamStarted bool
	// ownServerQueue is set when the server name was generated here: its
	// <topic>.<server> queue then belongs to this process alone.
	ownServerQueue bool
	sem            chan struct{}
	unacked        sync.WaitGroup // deliveries handed to a worker, not acknowledged yet
	seenMu         sync.Mutex
	seen           []string // last 16 _unique_id

	obsoleteMu sync.Mutex
	obsolete   map[string]time.Time // reply queues abandoned, until

	runCtx     context.Context // listener; canceled by Stop
	runCancel  context.CancelFunc
	workCtx    context.Context // handlers; canceled when the grace period ends
	workCancel context.CancelFunc
	pubCtx     context.Context // replies; canceled at the very end
	pubCancel  context.CancelFunc

	stopping chan struct{}
	stopOnce sync.Once
	started  bool
	ready    chan struct{}
	readyErr error
	loopDone chan struct{}
	inflight sync.WaitGroup
	workers  *workerPool
}

// NewServer builds a server for target (Topic required; Server defaults to
// NewServerID(); Exchange defaults to the control exchange) with the
// dispatch table disp.
func NewServer(opts Options, sopts ServerOptions, target Target, disp *Dispatcher, log *slog.Logger) (*Server, error) {
	opts = opts.withDefaults()
	if target.Topic == "" {
		return nil, errors.New("oslo: server target needs a topic")
	}
	if target.Exchange == "" {
		target.Exchange = opts.ControlExchange
	}
	ownServerQueue := target.Server == ""
	if ownServerQueue {
		target.Server = NewServerID()
	}
	if sopts.GracePeriod <= 0 {
		sopts.GracePeriod = 60 * time.Second
	}
	if sopts.RetryDelay <= 0 {
		sopts.RetryDelay = time.Second
	}
	if opts.Rabbit.QuorumQueue && opts.Rabbit.HAQueues {
		return nil, errors.New("oslo: rabbit_quorum_queue and rabbit_ha_queues are both enabled")
	}
	if err := opts.Rabbit.check(); err != nil {
		return nil, err
	}
	u, err := ParseTransportURL(opts.TransportURL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("topic", target.Topic, "server", target.Server)
	s := &Server{
		opts: opts, sopts: sopts, target: target, disp: disp, log: log,
		listenDialer:   newDialer(u, opts.Rabbit, "listener", log),
		pub:            newPublisher(newDialer(u, opts.Rabbit, "reply", log), log),
		fanoutQueue:    fanoutQueueName(target.Topic, opts.Rabbit),
		ownServerQueue: ownServerQueue,
		sem:            make(chan struct{}, opts.ExecutorThreadPoolSize),
		obsolete:       map[string]time.Time{},
		stopping:       make(chan struct{}),
		ready:          make(chan struct{}),
		loopDone:       make(chan struct{}),
	}
	s.listenDialer.limit = newBodyLimit(opts.Rabbit.MaxMessageSize)
	s.workers = &workerPool{}
	return s, nil
}

// Target returns the server's target (with its generated server name).
func (s *Server) Target() Target { return s.target }

// Start connects, declares the queues and starts consuming. It returns once
// the server consumes, or with ctx's error if the broker could not be
// reached before ctx ended (the server keeps trying in the background until
// Stop). Reconnection after a lost connection is automatic.
func (s *Server) Start(ctx context.Context) error {
	if s.started {
		return errors.New("oslo: server already started")
	}
	s.started = true
	s.runCtx, s.runCancel = context.WithCancel(context.Background())
	s.workCtx, s.workCancel = context.WithCancel(context.Background())
	s.pubCtx, s.pubCancel = context.WithCancel(context.Background())
	go s.workers.reapIdle(s.workCtx) //nolint:contextcheck // the server's work lives until Stop, not as long as Start's ctx
	go s.loop()                      //nolint:contextcheck // the server's work lives until Stop, not as long as Start's ctx
	select {
	case <-s.ready:
		return s.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop connects, declares and consumes until Stop. A connection that was
// consuming when it was lost is dialled again at once: until the queues
// are declared again, a cast to a queue that did not survive the broker
// (not durable) would be dropped. A connection that failed before it
// consumed (a declaration refused while a broker node starts) is tried
// again after the dial back-off, and a consumer the broker cancelled (its
// queue deleted) after kombu_reconnect_delay, as oslo waits.
func (s *Server) loop() {
	defer close(s.loopDone)
	readyOnce := sync.Once{}
	failed := 0
	for {
		conn, err := s.listenDialer.connect(s.runCtx)
		if err != nil {
			readyOnce.Do(func() { s.readyErr = err; close(s.ready) })
			return
		}
		consumed := false
		err = s.serveConn(conn, func() { consumed = true; readyOnce.Do(func() { close(s.ready) }) })
		if err == nil {
			return // stopped
		}
		select {
		case <-s.stopping:
			return
		default:
		}
		var wait time.Duration
		switch {
		case errors.Is(err, errConsumerCancelled):
			wait, failed = s.opts.Rabbit.reconnectDelay(), 0
		case consumed:
			failed = 0
		default:
			wait = s.listenDialer.retryWait(failed)
			failed++
		}
		s.log.Error("RPC listener lost its connection, reconnecting", "error", err.Error(), "retry_in", wait.String())
		_ = sleepCtx(s.runCtx, wait)
	}
}

// errConsumerCancelled is a consumer the broker cancelled while the
// connection stayed up.
var errConsumerCancelled = errors.New("the broker cancelled the consumer")

// declare declares the exchanges and the topic, server and fanout queues,
// as oslo does, with one difference: a server queue whose name was drawn
// here (no later process can consume it) expires after
// rabbit_transient_queues_ttl unused, like the fanout queue, so that a
// conductor killed without its Stop does not leave it behind for ever.
// Nobody else declares it (magnum-api publishes to the exchange only), so
// the argument cannot clash.
func (s *Server) declare(ch *amqp.Channel) error {
	r := s.opts.Rabbit
	t := s.target
	for i, q := range []string{t.Topic, t.Topic + "." + t.Server} {
		if err := ch.ExchangeDeclare(t.Exchange, "topic", r.durable(), r.AMQPAutoDelete, false, false, nil); err != nil {
			return fmt.Errorf("declaring exchange %s: %w", t.Exchange, err)
		}
		var ttl time.Duration
		if i == 1 && s.ownServerQueue {
			ttl = r.TransientQueuesTTL
		}
		if _, err := ch.QueueDeclare(q, r.durable(), r.AMQPAutoDelete, false, false, amqp.Table(r.queueArgs(ttl, true))); err != nil {
			return fmt.Errorf("declaring queue %s: %w", q, err)
		}
		if err := ch.QueueBind(q, q, t.Exchange, false, nil); err != nil {
			return fmt.Errorf("binding queue %s: %w", q, err)
		}
	}
	fx := t.Topic + "_fanout"
	// Durable with the transient queues, as oslo's fanout_send and
	// declare_fanout_consumer declare it.
	if err := ch.ExchangeDeclare(fx, "fanout", r.transientDurable(true), true, false, false, nil); err != nil {
		return fmt.Errorf("declaring exchange %s: %w", fx, err)
	}
	if _, err := ch.QueueDeclare(s.fanoutQueue, r.transientDurable(true), false, false, false,
		amqp.Table(r.transientQueueArgs(true))); err != nil {
		return fmt.Errorf("declaring queue %s: %w", s.fanoutQueue, err)
	}
	if err := ch.QueueBind(s.fanoutQueue, t.Topic, fx, false, nil); err != nil {
		return fmt.Errorf("binding queue %s: %w", s.fanoutQueue, err)
	}
	return nil
}

// prefetch is rabbit_qos_prefetch_count, or when that is 0 (oslo's default:
// no limit) the worker pool plus one batch, but no more messages than
// prefetchBudget holds at max_message_size each. Unlike oslo, which lets
// the broker push a whole backlog into a busy conductor's memory, the
// messages a conductor cannot start yet stay in the queue, where another
// conductor can take them and where they survive this one's restart.
//
// It is what the server's three consumers hold together (see
// consumerPrefetch): RabbitMQ applies a channel's non-global prefetch to
// each consumer, and oslo's one rabbit_qos_prefetch_count on the channel
// lets its three consumers hold three times as many.
func (s *Server) prefetch() int {
	if n := s.opts.Rabbit.QoSPrefetchCount; n > 0 {
		return n
	}
	n := cap(s.sem) + maxBatch
	if byBytes := int(max(1, prefetchBudget/s.opts.Rabbit.MaxMessageSize)); byBytes < n {
		n = byBytes
	}
	return n
}

// consumerPrefetch splits prefetch over the topic, server and fanout
// consumers, in that order. Global QoS would count them together, but
// quorum queues refuse a consumer on a channel with global QoS. Magnum's
// API casts and calls to the topic, so it gets nearly all of it (casts are
// acknowledged only once handled, so its prefetch is also how many casts
// run at once); the server and fanout queues, which only targeted and
// fanout messages reach, get 1/32 each, at least 1. Each consumer needs at
// least 1 (0 would mean no limit), so below 3 the sum is 3.
func (s *Server) consumerPrefetch() [3]int {
	n := s.prefetch()
	side := max(1, n/32)
	return [3]int{max(1, n-2*side), side, side}
}

// prefetchBudget bounds the bytes of the messages a listener holds before
// they start (with the default prefetch).
const prefetchBudget = 64 << 20

// BufferBound is the most bytes of request bodies the server holds at once,
// each at most max_message_size: the unacknowledged messages the broker may
// send, i.e. the sum of the consumers' prefetch (those waiting for a worker
// and the casts running), and the calls running (acknowledged when they
// start), one per worker.
func (s *Server) BufferBound() int64 {
	p := s.consumerPrefetch()
	return int64(p[0]+p[1]+p[2]+cap(s.sem)) * s.opts.Rabbit.MaxMessageSize
}

// maxBatch is how many buffered deliveries the listener takes at once.
const maxBatch = 64

// serveConn declares and consumes on conn until the connection fails
// (error) or the server stops (nil).
func (s *Server) serveConn(conn *brokerConn, onReady func()) error {
	defer closeConn(conn)
	// amqp091-go's channel calls wait for the broker's answer without a
	// bound, and end when the connection is closed. Until it consumes, a
	// listener whose broker does not answer is let go of by closing its
	// connection once Stop has given up waiting (runCtx).
	stopSetup := context.AfterFunc(s.runCtx, func() { closeConn(conn) })
	defer stopSetup()
	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := s.declare(ch); err != nil {
		return err
	}
	queues := []string{s.target.Topic, s.target.Topic + "." + s.target.Server, s.fanoutQueue}
	prefetch := s.consumerPrefetch()
	var deliveries [3]<-chan amqp.Delivery
	for i, q := range queues {
		// A non-global basic.qos applies to the consumers started after it
		// on the channel, so each gets its own share.
		if err := ch.Qos(prefetch[i], 0, false); err != nil {
			return err
		}
		args := s.opts.Rabbit.consumerArgs()
		if i == 2 && s.opts.Rabbit.StreamFanout {
			args = s.fanoutConsumerArgs()
		}
		if deliveries[i], err = ch.Consume(q, fmt.Sprint(i+1), false, false, false, false, args); err != nil {
			return fmt.Errorf("consuming %s: %w", q, err)
		}
	}
	s.log.Info("RPC server consuming", "exchange", s.target.Exchange, "fanout_queue", s.fanoutQueue,
		"prefetch", prefetch, "max_message_size", s.opts.Rabbit.MaxMessageSize,
		"buffer_bound", s.BufferBound())
	// From here on the stop below bounds its own calls: it must not lose
	// the connection while it waits, until Stop's deadline, for the casts
	// running to be acknowledged on it.
	stopSetup()
	onReady()
	for {
		var d amqp.Delivery
		var ok bool
		select {
		case d, ok = <-deliveries[0]:
		case d, ok = <-deliveries[1]:
		case d, ok = <-deliveries[2]:
		case e := <-connClosed:
			if e == nil {
				return errors.New("connection closed")
			}
			return e
		case <-s.stopping:
			// Each step that waits for the broker is bounded (brokerStep),
			// or a broker that stops answering (a half-open connection, a
			// stalled node still heartbeating) would hold this goroutine
			// and the connection after Stop has returned.
			s.brokerStep(conn, "cancelling the consumers", func() {
				for i := range queues {
					_ = ch.Cancel(fmt.Sprint(i+1), false)
				}
			})
			// Casts are acknowledged once handled: keep the channel until
			// those running are (or Stop gives up on them), so that a
			// clean stop does not hand them to another conductor again.
			drained := make(chan struct{})
			go func() { s.unacked.Wait(); close(drained) }()
			select {
			case <-drained:
			case <-s.runCtx.Done():
			case <-connClosed: //nolint:errcheck // stopping anyway: the deletes below log what a lost connection costs
			}
			// A queue not deleted (the broker did not answer, the
			// connection is lost) expires once unused for
			// rabbit_transient_queues_ttl (x-expires), the fanout queue
			// collecting the fanout casts until then.
			ttl := s.opts.Rabbit.TransientQueuesTTL.String()
			s.brokerStep(conn, "deleting the queues", func() {
				// Like oslo, a stream fanout queue (shared by every server)
				// and a queue manager's (reused after a restart) are left
				// to their expiry.
				if r := s.opts.Rabbit; !r.StreamFanout && !r.UseQueueManager {
					if _, err := ch.QueueDelete(s.fanoutQueue, false, false, false); err != nil {
						s.log.Warn("deleting fanout queue failed; it expires once unused", "queue", s.fanoutQueue,
							"expires_after", ttl, "error", err.Error())
					}
				}
				// Unlike oslo, also the <topic>.<server> queue when its name
				// was random: no later process can consume it, and Python's
				// conductor leaves one behind at every restart.
				if s.ownServerQueue {
					if _, err := ch.QueueDelete(queues[1], false, false, false); err != nil {
						s.log.Warn("deleting server queue failed; it expires once unused", "queue", queues[1],
							"expires_after", ttl, "error", err.Error())
					}
				}
				_ = ch.Close()
			})
			return nil
		}
		if !ok {
			return consumerGone(conn)
		}
		// Take whatever else is already buffered, for as many as get a
		// worker at once.
		batch := append(make([]amqp.Delivery, 0, 8), d)
	drain:
		for len(batch) < maxBatch {
			select {
			case d, ok = <-deliveries[0]:
			case d, ok = <-deliveries[1]:
			case d, ok = <-deliveries[2]:
			default:
				break drain
			}
			if !ok {
				break drain
			}
			batch = append(batch, d)
		}
		s.receive(batch)
		if !ok {
			return consumerGone(conn)
		}
	}
}

// stopStepTimeout bounds each step of a listener's stop that waits for
// the broker: cancelling the consumers, deleting the queues.
const stopStepTimeout = closeTimeout

// brokerStep runs f, a step of the listener's stop made of channel calls,
// and closes conn if f has not returned within stopStepTimeout: that ends
// the call waiting and makes the calls after it fail at once (logged by f),
// so the stop ends within stopStepTimeout and closeConn's bound whatever
// the broker does.
func (s *Server) brokerStep(conn *brokerConn, step string, f func()) {
	t := time.AfterFunc(stopStepTimeout, func() {
		s.log.Error("the broker has not answered the listener's stop; closing its connection", "step", step,
			"after", stopStepTimeout.String())
		closeConn(conn)
	})
	defer t.Stop() // a closeConn begun goes on: serveConn's waits for it
	f()
}

// consumerGone is why a consumer's deliveries ended: the connection, or a
// cancel from the broker while the connection stayed up.
func consumerGone(conn *brokerConn) error {
	if conn.IsClosed() {
		return errors.New("connection closed")
	}
	return errConsumerCancelled
}

// fanoutQueueName is the server's fanout queue: one stream per topic with
// rabbit_stream_fanout, else "<topic>_fanout_" and a queue manager name or
// a random one, as oslo's declare_fanout_consumer names it.
func fanoutQueueName(topic string, r RabbitOptions) string {
	switch {
	case r.StreamFanout:
		return topic + "_fanout"
	case r.UseQueueManager:
		return topic + "_fanout_" + newQueueManager(r.QueueManagerHost, r.QueueManagerProcess).next()
	}
	return topic + "_fanout_" + uuidHex()
}

// fanoutConsumerArgs is the x-stream-offset of a stream fanout consumer:
// where the last one stopped, or, for the first, the messages published
// from now on (oslo starts at "last", which replays the stream's last
// chunk to a new server).
func (s *Server) fanoutConsumerArgs() amqp.Table {
	if !s.opts.Rabbit.StreamFanout {
		return nil
	}
	if s.streamStarted {
		return amqp.Table{"x-stream-offset": s.streamNext}
	}
	return amqp.Table{"x-stream-offset": "next"}
}

// noteStreamOffset records the offset after a stream fanout delivery that
// got a worker: one that did not is read again after a reconnection.
func (s *Server) noteStreamOffset(d amqp.Delivery) {
	if !s.opts.Rabbit.StreamFanout || d.ConsumerTag != "3" {
		return
	}
	if off, ok := d.Headers["x-stream-offset"].(int64); ok {
		s.streamNext, s.streamStarted = off+1, true
	}
}

// forget removes id from the _unique_id seen.
func (s *Server) forget(id string) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	s.seen = slices.DeleteFunc(s.seen, func(seen string) bool { return seen == id })
}

func (s *Server) isDuplicate(id string) bool {
	if id == "" {
		return false
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	for _, seen := range s.seen {
		if seen == id {
			return true
		}
	}
	s.seen = append(s.seen, id)
	if len(s.seen) > 16 {
		s.seen = s.seen[1:]
	}
	return false
}

// receive runs on the listener goroutine: each message of the batch that
// gets a worker slot is handed to a worker (a message still waiting for a
// slot is not acknowledged, so that a stop or a lost connection returns it
// to the queue, for another conductor, instead of dropping it). Decoding
// happens on the worker so that the listener does no per-message CPU work.
//
// The worker acknowledges the message (see serve): a call before it runs,
// as oslo does (run twice, it would answer twice, or fail the second time
// with the caller waiting); a cast only once it has been handled, so that a
// conductor killed while it handles one does not lose it: the broker
// delivers it again, to another conductor, whose handler's status checks
// see what the first one did (a cast is served at least once).
func (s *Server) receive(batch []amqp.Delivery) {
	for len(batch) > 0 {
		if !s.takeSlot() {
			s.log.Info("stopping: RPC requests not started are left to the broker", "count", len(batch))
			return
		}
		n := 1
	free:
		for n < len(batch) {
			select {
			case s.sem <- struct{}{}:
				n++
			default:
				break free
			}
		}
		for _, d := range batch[:n] {
			s.noteStreamOffset(d)
			s.inflight.Add(1)
			s.unacked.Add(1)
			s.workers.run(func() { s.serve(d) })
		}
		batch = batch[n:]
	}
}

// ack acknowledges d once. An acknowledgement that cannot be sent (the
// channel went with its connection) leaves the message to the broker,
// which delivers it again.
func (s *Server) ack(d amqp.Delivery, done *bool) {
	if *done {
		return
	}
	*done = true
	defer s.unacked.Done()
	if err := d.Ack(false); err != nil {
		s.log.Warn("acknowledging an RPC request failed; the broker delivers it again", "error", err.Error(),
			"delivery_tag", d.DeliveryTag)
	}
}

// takeSlot waits for a worker slot; false when the server is stopping
// (checked first, so that no request starts once Stop has begun).
func (s *Server) takeSlot() bool {
	select {
	case <-s.stopping:
		return false
	default:
	}
	select {
	case s.sem <- struct{}{}:
		return true
	case <-s.stopping:
		return false
	}
}

// serve decodes and handles one request that holds a worker slot and an
// inflight count, acknowledges it (a call before it runs, anything else
// once served), and releases both.
func (s *Server) serve(d amqp.Delivery) {
	defer s.inflight.Done()
	defer func() { <-s.sem }()
	acked := false
	defer s.ack(d, &acked)
	body, compression := d.Body, compressionOf(d.Headers)
	// The method's own panics are turned into failure replies by dispatch;
	// this catches any other (decoding, encoding the reply) so that one
	// message can never take the process down.
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while serving an RPC message; message dropped", "panic", fmt.Sprint(r),
				"size", len(body), "stack", string(debug.Stack()))
		}
	}()
	if o, ok := s.listenDialer.limit.parse(body); ok {
		s.rejectOversized(o)
		return
	}
	if compression != "" {
		plain, err := decompress(body, compression, s.opts.Rabbit.MaxMessageSize)
		if err != nil {
			// Without the body there is no _reply_q to answer to.
			s.log.Error("dropping an RPC message that cannot be decompressed", "error", err.Error(),
				"size", len(body))
			return
		}
		body = plain
	}
	req, err := DecodeRequest(body)
	if err != nil {
		s.rejectUndecodable(err, len(body))
		return
	}
	if req.MsgID != "" {
		s.ack(d, &acked)
	}
	if s.isDuplicate(req.UniqueID) {
		s.log.Warn("ignoring duplicate message", "unique_id", request.Bound(req.UniqueID), "msg_id", request.Bound(req.MsgID))
		return
	}
	if err := s.handle(req); err != nil && req.MsgID == "" && s.sopts.RetryCast != nil && s.sopts.RetryCast(err) {
		s.retryLater(d, &acked, req, err)
	}
}

// retryLater returns a cast to its queue (negatively acknowledged, to be
// delivered again) after RetryDelay, or at once when the server stops.
func (s *Server) retryLater(d amqp.Delivery, acked *bool, req *Request, err error) {
	method, _ := req.MethodName()
	s.log.Warn("cast not done for now; returned to its queue to be tried again", "method", request.Bound(method),
		"error", logText(err.Error()), "retry_in", s.sopts.RetryDelay.String(), "redelivered", d.Redelivered)
	t := time.NewTimer(s.sopts.RetryDelay)
	select {
	case <-t.C:
	case <-s.stopping:
		t.Stop()
	}
	s.forget(req.UniqueID) // its next delivery is no duplicate
	*acked = true
	defer s.unacked.Done()
	if nerr := d.Nack(false, true); nerr != nil {
		s.log.Warn("returning a cast to its queue failed; the broker delivers it again", "error", nerr.Error(),
			"delivery_tag", d.DeliveryTag)
	}
}

// rejectOversized answers a request whose body the listener did not read
// (larger than max_message_size) with InvalidParameterValue, when it is a
// call whose reply queue could be read, and logs it.
func (s *Server) rejectOversized(o *oversized) {
	limit := s.opts.Rabbit.MaxMessageSize
	log := s.log.With("size", o.Size, "max_message_size", limit, "msg_id", o.MsgID, "reply_q", o.ReplyQ)
	if o.MsgID == "" || o.ReplyQ == "" {
		log.Error("dropping an RPC message larger than max_message_size, unread; no reply possible")
		return
	}
	log.Error("refusing an RPC call larger than max_message_size, unread")
	err := exception.InvalidParameterValue(fmt.Sprintf(
		"The RPC message is %d bytes, more than the conductor accepts ([oslo_messaging_rabbit] max_message_size = %d bytes).",
		o.Size, limit))
	s.reply(&Request{MsgID: o.MsgID, ReplyQ: o.ReplyQ, UniqueID: o.UniqueID}, nil, err, log)
}

func (s *Server) rejectUndecodable(err error, size int) {
	var de *DecodeError
	if !errors.As(err, &de) || de.Request == nil || de.Request.MsgID == "" || de.Request.ReplyQ == "" || de.Failure == nil {
		s.log.Error("dropping undecodable RPC message", "error", err.Error(), "size", size)
		return
	}
	s.log.Error("rejecting undecodable RPC message", "error", err.Error(), "size", size, "msg_id", request.Bound(de.Request.MsgID))
	s.reply(de.Request, nil, de.Failure, s.log)
}

// handle runs a decoded request and replies to a call. It returns the
// method's error, as the caller got it.
func (s *Server) handle(req *Request) error {
	rc := request.FromWire(req.Context)
	ctx := request.With(s.workCtx, rc)
	method, _ := req.MethodName()
	log := lazyWith(s.log, append([]any{"method", request.Bound(method), "msg_id", request.Bound(req.MsgID)}, rc.LogAttrs()...))
	for k := range req.Context {
		if !knownContextKey(k) {
			log.Debug("request carries an unknown context key", "key", request.Bound(k))
		}
	}
	if req.BadMsgID {
		// Run as a cast, it would act with nobody told; a reply keyed by
		// a _msg_id no oslo caller sends would reach nobody either.
		log.Error("rejecting RPC call whose _msg_id is not a string; not run, no reply possible",
			"reply_q", request.Bound(req.ReplyQ))
		return nil
	}

	var stopHB func()
	if req.MsgID != "" && req.Timeout != 0 {
		stopHB = s.startCallMonitor(req, log)
	}
	start := time.Now()
	result, err := s.dispatch(ctx, req, log)
	// handle owns the result (a *pyjson.Buffer is pooled): the reply is
	// built from it before handle returns, and nothing keeps it after.
	defer pyjson.Release(result)
	if stopHB != nil {
		stopHB()
	}
	if err != nil && s.sopts.TranslateError != nil {
		err = s.sopts.TranslateError(err)
	}
	if err != nil {
		var e *exception.Error
		raised := errors.As(err, &e)
		switch {
		case raised && (e.Module == exception.ModuleMagnum && e.Code >= 500 || e.Module == exception.ModuleOsloDB):
			// A server-side failure (the database, a driver, a wrapped
			// unexpected error), not an answer such as ClusterNotFound.
			log.Error("RPC method failed", "class", e.Module+"."+e.Class, "error", logText(e.Message), "duration", time.Since(start).String())
		case raised:
			log.Info("RPC method raised", "class", e.Module+"."+e.Class, "error", logText(e.Message), "duration", time.Since(start).String())
		default:
			log.Error("RPC method failed", "error", logText(err.Error()), "duration", time.Since(start).String())
		}
	} else {
		log.Debug("RPC method done", "duration", time.Since(start).String())
	}
	if req.MsgID == "" {
		return err
	}
	s.reply(req, result, err, log)
	return err
}

// dispatch runs the method with panic recovery.
func (s *Server) dispatch(ctx context.Context, req *Request, log *slog.Logger) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("RPC method panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("panic in RPC method: %v", r)
		}
	}()
	return s.disp.Dispatch(ctx, req)
}

// startCallMonitor sends ending=false replies every _timeout/2 seconds
// while the method runs (oslo's dispatcher watchdog).
func (s *Server) startCallMonitor(req *Request, log *slog.Logger) func() {
	interval := time.Duration(int(req.Timeout)) * time.Second / 2
	if interval < time.Second {
		log.Warn("client provided an invalid call-monitor timeout", "timeout", req.Timeout)
		return nil
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				body, err := encodeReply(req.MsgID, nil, nil, false)
				if err != nil {
					return
				}
				ctx, cancel := context.WithTimeout(s.pubCtx, interval)
				err = s.pub.publish(ctx, publishing{key: req.ReplyQ, mandatory: !s.opts.Rabbit.NoDirectMandatory, body: body})
				cancel()
				if err != nil {
					log.Debug("call-monitor heartbeat failed", "error", err.Error())
					return
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (s *Server) replyQueueObsolete(q string) bool {
	s.obsoleteMu.Lock()
	defer s.obsoleteMu.Unlock()
	until, ok := s.obsolete[q]
	if ok && time.Now().After(until) {
		delete(s.obsolete, q)
		return false
	}
	return ok
}

func (s *Server) markObsolete(q string) {
	s.obsoleteMu.Lock()
	defer s.obsoleteMu.Unlock()
	now := time.Now()
	for k, until := range s.obsolete {
		if now.After(until) {
			delete(s.obsolete, k)
		}
	}
	s.obsolete[q] = now.Add(s.opts.Rabbit.MissingConsumerRetryTimeout)
}

// buildReply encodes the final reply of a call into dst: the result, or
// the failure that err becomes.
func buildReply(dst []byte, msgID string, result any, err error) ([]byte, error) {
	if err == nil {
		body, merr := appendReply(dst, msgID, result, nil, true)
		if merr == nil {
			return body, nil
		}
		err = fmt.Errorf("RPC result is not JSON-serializable: %w", merr)
	}
	f, ferr := FailureFromError(err).Encode()
	if ferr != nil {
		return nil, ferr
	}
	return appendReply(dst, msgID, nil, &f, true)
}

// reply sends the single final reply; result stays its caller's. A reply
// returned by the broker (missing reply queue) is retried every 0.25 s for
// kombu_missing_consumer_retry_timeout in the background, without holding
// a worker, from a copy of the body.
func (s *Server) reply(req *Request, result any, err error, log *slog.Logger) {
	if req.ReplyQ == "" {
		log.Warn("call without a reply queue; no reply sent")
		return
	}
	if s.replyQueueObsolete(req.ReplyQ) {
		log.Info("reply queue is gone; not replying", "reply_q", request.Bound(req.ReplyQ))
		return
	}
	// The body's buffer has one owner, this function, and goes back to the
	// pool when it returns: publish returns once the broker has confirmed
	// the message (TestPublishedBodyIsTheBrokers), so nothing reads the
	// buffer afterwards; a retry gets its own copy.
	buf := pyjson.GetBuffer()
	defer buf.Release()
	body, berr := buildReply(buf.B, req.MsgID, result, err)
	if berr != nil {
		log.Error("cannot encode reply", "error", berr.Error())
		return
	}
	buf.B = body
	ctx, cancel := context.WithTimeout(s.pubCtx, s.opts.Rabbit.MissingConsumerRetryTimeout)
	perr := s.pub.publish(ctx, publishing{key: req.ReplyQ, mandatory: !s.opts.Rabbit.NoDirectMandatory, body: body})
	cancel()
	var re *ReturnedError
	switch {
	case perr == nil:
	case errors.As(perr, &re):
		retry := bytes.Clone(body)
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			s.retryReply(req, retry, log)
		}()
	default:
		log.Error("sending reply failed", "error", perr.Error(), "reply_q", request.Bound(req.ReplyQ))
	}
}

// retryReply publishes body, a reply the broker returned, until it is
// taken or kombu_missing_consumer_retry_timeout has passed.
func (s *Server) retryReply(req *Request, body []byte, log *slog.Logger) {
	deadline := time.Now().Add(s.opts.Rabbit.MissingConsumerRetryTimeout)
	for {
		log.Debug("reply could not be sent due to a missing queue, retrying", "reply_q", request.Bound(req.ReplyQ))
		if sleepCtx(s.pubCtx, 250*time.Millisecond) != nil {
			return
		}
		if time.Now().After(deadline) {
			s.markObsolete(req.ReplyQ)
			log.Error(fmt.Sprintf("The reply %s failed to send after %d seconds due to a missing queue (%s). Abandoning...",
				request.Bound(req.MsgID), int(s.opts.Rabbit.MissingConsumerRetryTimeout/time.Second), request.Bound(req.ReplyQ)))
			return
		}
		ctx, cancel := context.WithDeadline(s.pubCtx, deadline)
		perr := s.pub.publish(ctx, publishing{key: req.ReplyQ, mandatory: !s.opts.Rabbit.NoDirectMandatory, body: body})
		cancel()
		var re *ReturnedError
		if perr == nil {
			return
		}
		if !errors.As(perr, &re) && s.pubCtx.Err() != nil {
			return
		}
	}
}

// Stop stops consuming (deleting the server's fanout queue), waits for
// in-flight requests until ctx ends (or the grace period if ctx has no
// deadline), then cancels what is left (handlers, replies being retried),
// gives the cancelled handlers cancelWait to record how they ended, and
// closes the connections. Whatever is pending (a handler that ignores its
// cancellation, a broker that does not answer the listener's cancels or
// the close), Stop returns by ctx's deadline plus cancelWait; what has not
// finished by then is left to end on its own (the listener, within its
// bounds: stopStepTimeout per step, closeConn's) or with the process.
func (s *Server) Stop(ctx context.Context) error {
	if !s.started {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.sopts.GracePeriod)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	late := dl.Add(cancelWait) // the waits once ctx has ended
	s.stopOnce.Do(func() { close(s.stopping) })
	var err error
	if waitCtx(ctx, s.loopDone) != nil {
		// The listener is slow to let go (the broker does not answer its
		// cancels): it is waited for again below, after the handlers.
		err = ctx.Err()
	}
	s.runCancel()

	idle := make(chan struct{})
	go func() { s.inflight.Wait(); close(idle) }()
	if waitCtx(ctx, idle) != nil {
		s.log.Warn("grace period over; canceling in-flight RPC requests")
		err = ctx.Err()
		s.workCancel()
		s.pubCancel()
		if !waitUntil(idle, late) {
			s.log.Error("in-flight RPC requests did not end when canceled; leaving them to the process's exit")
		}
	}
	s.workCancel()
	s.pubCancel()
	if !waitUntil(s.loopDone, late) {
		s.log.Error("the RPC listener did not let go of its connection in time; leaving it to end on its own, within its bounds")
	}
	closed := make(chan struct{})
	go func() { s.pub.close(); close(closed) }()
	// The reply connection's close has its own bound (closeConn's), even
	// when the waits above have used up late.
	if !waitUntil(closed, later(late, time.Now().Add(closeWait))) {
		s.log.Error("the reply connection did not close; leaving it to the process's exit")
	}
	s.log.Info("RPC server stopped")
	return err
}

// cancelWait is how long past its deadline Stop waits for what it canceled
// or closed.
const cancelWait = 500 * time.Millisecond

// waitCtx waits for done until ctx ends.
func waitCtx(ctx context.Context, done <-chan struct{}) error {
	select { // done first: with both ready, a select would pick at random
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitUntil waits for done until t, and reports whether it came.
func waitUntil(done <-chan struct{}, t time.Time) bool {
	select {
	case <-done:
		return true
	default:
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// logText bounds an error message for the log: it may quote what the
// caller sent (a method name, an argument).
func logText(s string) string { return request.BoundTo(s, 1024) }

// knownContextKey reports whether k is one of the context keys magnum
// sends (15.0.1 to master), or osprofiler's trace_info.
func knownContextKey(k string) bool {
	_, ok := contextKeyNames[k]
	return ok
}

// contextKeyNames holds the context keys oslo.context and Magnum send, each
// mapped to itself: decoding a request interns them.
var contextKeyNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"user", "project_id", "system_scope", "project", "domain", "user_domain", "project_domain",
		"is_admin", "read_only", "show_deleted", "auth_token", "request_id", "global_request_id",
		"resource_uuid", "roles", "user_identity", "is_admin_project", "auth_url", "domain_id",
		"domain_name", "user_domain_id", "user_domain_name", "user_name", "user_id", "project_name",
		"trust_id", "auth_token_info", "password", "all_tenants", "trace_info", "service_catalog",
		"tenant", "service_roles", "service_user_id", "service_project_id"} {
		m[k] = k
	}
	return m
}()

// lazyWith is log.With(args...) for a logger that most requests never
// write to: the attributes are handed to the handler (which formats them
// at once) only when a record is enabled and written.
func lazyWith(log *slog.Logger, args []any) *slog.Logger {
	return slog.New(&lazyHandler{base: log.Handler(), args: args})
}

type lazyHandler struct {
	base slog.Handler
	args []any
	once sync.Once
	with slog.Handler
}

func (h *lazyHandler) handler() slog.Handler {
	h.once.Do(func() { h.with = slog.New(h.base).With(h.args...).Handler() })
	return h.with
}

func (h *lazyHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }
func (h *lazyHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.handler().Handle(ctx, r)
}
func (h *lazyHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.handler().WithAttrs(as) }
func (h *lazyHandler) WithGroup(name string) slog.Handler    { return h.handler().WithGroup(name) }
