package oslo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/pyjson"
	"github.com/openstack/magnum-conductor/api/request"
)

// TimeoutError is oslo's MessagingTimeout: no reply came in time.
type TimeoutError struct {
	MsgID  string
	Method string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Timed out waiting for a reply to message ID %s (method %s, timeout %s)", e.MsgID, e.Method, e.After)
}

// Timeout marks the error as a timeout (net.Error style).
func (e *TimeoutError) Timeout() bool { return true }

// CallOptions tune one call.
type CallOptions struct {
	// Timeout overrides rpc_response_timeout.
	Timeout time.Duration
	// CallMonitorTimeout is sent as "_timeout": the server then sends
	// heartbeats every CallMonitorTimeout/2 and the call fails when none
	// arrives within CallMonitorTimeout. Zero sends null (magnum's way).
	CallMonitorTimeout time.Duration
}

// Client is an oslo.messaging RPC client: calls (with one reply queue per
// client, declared as oslo does), casts and fanout casts.
type Client struct {
	opts Options
	log  *slog.Logger
	pub  *publisher

	replyDialer *dialer
	replyQ      string

	mu          sync.Mutex
	waiters     map[string]chan replyMessage
	replyOnce   sync.Once
	replyReady  chan struct{}
	replyCtx    context.Context
	replyCancel context.CancelFunc
	replyDone   chan struct{}
	seen        []string
	// finishers collect the confirms of requests whose reply came first.
	finishers workerPool
}

// NewClient builds a client on the RPC transport of opts. Nothing is
// opened until the first message.
func NewClient(opts Options, log *slog.Logger) (*Client, error) {
	opts = opts.withDefaults()
	u, err := ParseTransportURL(opts.TransportURL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := opts.Rabbit.check(); err != nil {
		return nil, err
	}
	replyQ := "reply_" + uuidHex()
	if opts.Rabbit.UseQueueManager {
		replyQ = "reply_" + newQueueManager(opts.Rabbit.QueueManagerHost, opts.Rabbit.QueueManagerProcess).next()
	}
	c := &Client{
		opts: opts, log: log,
		pub:         newPublisher(newDialer(u, opts.Rabbit, "rpc-client", log), log),
		replyDialer: newDialer(u, opts.Rabbit, "rpc-reply", log),
		replyQ:      replyQ,
		waiters:     map[string]chan replyMessage{},
		replyReady:  make(chan struct{}),
		replyDone:   make(chan struct{}),
	}
	c.replyCtx, c.replyCancel = context.WithCancel(context.Background())
	return c, nil
}

// ReplyQueue returns the name of the client's reply queue.
func (c *Client) ReplyQueue() string { return c.replyQ }

// contextOrder is the order of magnum's RequestContext.to_dict keys.
func contextOrder() [29]string {
	return [...]string{"user", "project_id", "system_scope", "project", "domain", "user_domain",
		"project_domain", "is_admin", "read_only", "show_deleted", "auth_token", "request_id", "global_request_id",
		"resource_uuid", "roles", "user_identity", "is_admin_project", "auth_url", "domain_id", "domain_name",
		"user_domain_id", "user_domain_name", "user_name", "user_id", "project_name", "trust_id",
		"auth_token_info", "password", "all_tenants"}
}

// addContext appends the _context_* keys of m in magnum's order, then any
// other key sorted.
func addContext(ob *orderedObject, m map[string]any) {
	order := contextOrder()
	matched := 0
	for _, k := range order {
		if v, ok := m[k]; ok {
			matched++
			ob.addPrefixed("_context_", k, v)
		}
	}
	if matched == len(m) {
		return
	}
	var rest []string
	for k := range m {
		if !inContextOrder(k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		ob.addPrefixed("_context_", k, m[k])
	}
}

func inContextOrder(k string) bool {
	for _, o := range contextOrder() {
		if o == k {
			return true
		}
	}
	return false
}

// encodeRequest builds the enveloped request body.
func encodeRequest(ctx context.Context, t Target, method string, args any, msgID, replyQ string, cmTimeout time.Duration) ([]byte, error) {
	var ob orderedObject
	ob.add("method", method)
	if args == nil {
		args = map[string]any{}
	}
	raw, err := pyjson.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encoding args of %s: %w", method, err)
	}
	if pyTypeName(raw) != "dict" {
		return nil, fmt.Errorf("args of %s must encode as a JSON object, not %s", method, pyTypeName(raw))
	}
	ob.add("args", pyjson.Raw(raw)) // laid out already
	if t.Namespace != "" {
		ob.add("namespace", t.Namespace)
	}
	if t.Version != "" {
		ob.add("version", t.Version)
	}
	if msgID != "" {
		ob.add("_msg_id", msgID)
		ob.add("_reply_q", replyQ)
		var to any
		if cmTimeout > 0 {
			to = int(cmTimeout / time.Second)
		}
		ob.add("_timeout", to)
	}
	ob.add("_unique_id", uuidHex())
	addContext(&ob, request.From(ctx).ToWire())
	msg, err := ob.bytes()
	if err != nil {
		return nil, err
	}
	return wrapEnvelope(msg)
}

func (c *Client) topicPublishing(t Target, body []byte, expiration string) publishing {
	exchange := t.Exchange
	if exchange == "" {
		exchange = c.opts.ControlExchange
	}
	r := c.opts.Rabbit
	if t.Fanout {
		fx := t.Topic + "_fanout"
		return publishing{exchange: fx, body: body, declareKey: "exchange:" + fx,
			declare: func(ch *amqp.Channel) error {
				return ch.ExchangeDeclare(fx, "fanout", r.transientDurable(true), true, false, false, nil)
			}}
	}
	key := t.Topic
	if t.Server != "" {
		key = t.Topic + "." + t.Server
	}
	return publishing{exchange: exchange, key: key, body: body, expiration: expiration, declareKey: "exchange:" + exchange,
		declare: func(ch *amqp.Channel) error {
			return ch.ExchangeDeclare(exchange, "topic", r.durable(), r.AMQPAutoDelete, false, false, nil)
		}}
}

// Cast sends method(**args) without waiting for a result (fanout when
// t.Fanout). args must encode as a JSON object.
func (c *Client) Cast(ctx context.Context, t Target, method string, args any) error {
	if t.Topic == "" {
		return errors.New("oslo: cast needs a topic")
	}
	body, err := encodeRequest(ctx, t, method, args, "", "", 0)
	if err != nil {
		return err
	}
	ctx, cancel := c.withSendTimeout(ctx)
	defer cancel()
	return c.pub.publish(ctx, c.topicPublishing(t, body, ""))
}

func (c *Client) withSendTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.RPCResponseTimeout)
}

// Call sends method(**args) and waits for the reply. A failure reply
// becomes an *exception.Error with the remote module, class, message and
// kwargs; no reply within the timeout gives a *TimeoutError.
func (c *Client) Call(ctx context.Context, t Target, method string, args any, co ...CallOptions) (json.RawMessage, error) {
	if t.Topic == "" {
		return nil, errors.New("oslo: call needs a topic")
	}
	if t.Fanout {
		return nil, errors.New("oslo: a fanout target cannot be called")
	}
	var o CallOptions
	if len(co) > 0 {
		o = co[0]
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.opts.RPCResponseTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	// The reply queue is part of the call: waiting for it (the broker may
	// be down or refuse the login) counts against the call's timeout.
	msgID := uuidHex()
	start := time.Now()
	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	err := c.startReplies(readyCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	remaining := timeout - time.Since(start)
	if remaining <= 0 {
		return nil, &TimeoutError{MsgID: msgID, Method: method, After: timeout}
	}
	body, err := encodeRequest(ctx, t, method, args, msgID, c.replyQ, o.CallMonitorTimeout)
	if err != nil {
		return nil, err
	}
	replies := make(chan replyMessage, 8)
	c.mu.Lock()
	c.waiters[msgID] = replies
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiters, msgID)
		c.mu.Unlock()
	}()

	// sendCtx carries the call's deadline, for sending and for waiting (one
	// timer per call). The broker's confirm of the request is awaited beside
	// the reply, not before it: the reply often arrives first (the broker may
	// delay confirms of persistent messages).
	sendCtx, cancelSend := context.WithTimeout(context.WithoutCancel(ctx), remaining)
	ip, err := c.pub.start(sendCtx, c.topicPublishing(t, body, strconv.FormatInt(int64(remaining/time.Millisecond), 10)))
	if err != nil {
		cancelSend()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &TimeoutError{MsgID: msgID, Method: method, After: timeout}
		}
		return nil, err
	}
	var confirmed <-chan struct{}
	if ip != nil {
		confirmed = ip.confirmed()
	}
	defer func() {
		if confirmed != nil {
			// The reply came first: collect the confirm in the background.
			c.finishers.run(func() { _ = ip.finish(sendCtx); cancelSend() })
		} else {
			cancelSend()
		}
	}()
	var cm <-chan time.Time
	var cmTimer *time.Timer
	if o.CallMonitorTimeout > 0 {
		cmTimer = time.NewTimer(o.CallMonitorTimeout)
		defer cmTimer.Stop()
		cm = cmTimer.C
	}
	var result json.RawMessage
	for {
		select {
		case <-confirmed:
			confirmed = nil
			if err := ip.finish(sendCtx); err != nil {
				return nil, fmt.Errorf("sending %s: %w", method, err)
			}
		case r := <-replies:
			if r.Err != nil {
				return nil, fmt.Errorf("oslo: %s: %w", method, r.Err)
			}
			if r.Failure != nil {
				f, err := DecodeFailure(*r.Failure)
				if err != nil {
					return nil, err
				}
				return nil, f.Error()
			}
			if !isNull(r.Result) {
				result = r.Result
			} else if !r.Ending && cmTimer != nil {
				cmTimer.Reset(o.CallMonitorTimeout)
			}
			if r.Ending {
				if result == nil {
					result = json.RawMessage("null")
				}
				return result, nil
			}
		case <-sendCtx.Done():
			return nil, &TimeoutError{MsgID: msgID, Method: method, After: timeout}
		case <-cm:
			return nil, &TimeoutError{MsgID: msgID, Method: method, After: o.CallMonitorTimeout}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startReplies starts the reply consumer once and waits until it
// consumes.
func (c *Client) startReplies(ctx context.Context) error {
	c.replyOnce.Do(func() {
		go c.replyLoop()
		go c.finishers.reapIdle(c.replyCtx) // both end with Close
	})
	select {
	case <-c.replyReady:
		return c.replyCtx.Err()
	case <-ctx.Done():
		if err := c.replyDialer.lastError(); err != nil {
			// Say why: the reply queue needs the broker.
			return fmt.Errorf("no connection to %s for the reply queue: %w (last error: %v)", c.replyDialer.url, ctx.Err(), err) //nolint:errorlint // only the context's error is the cause callers test; the last error is there for the reader
		}
		return ctx.Err()
	}
}

func (c *Client) replyLoop() {
	defer close(c.replyDone)
	var once sync.Once
	ready := func() { once.Do(func() { close(c.replyReady) }) }
	defer ready()
	failed := 0
	for {
		conn, err := c.replyDialer.connect(c.replyCtx)
		if err != nil {
			return
		}
		consumed := false
		err = c.consumeReplies(conn, func() { consumed = true; ready() })
		if c.replyCtx.Err() != nil {
			return
		}
		// As the server's listener: at once after losing a connection that
		// consumed (replies to the queue are dropped until it is back).
		var wait time.Duration
		switch {
		case errors.Is(err, errConsumerCancelled):
			wait, failed = c.opts.Rabbit.reconnectDelay(), 0
		case consumed:
			failed = 0
		default:
			wait = c.replyDialer.retryWait(failed)
			failed++
		}
		c.log.Error("reply consumer lost its connection, reconnecting", "error", fmt.Sprint(err), "reply_q", c.replyQ,
			"retry_in", wait.String())
		_ = sleepCtx(c.replyCtx, wait)
	}
}

func (c *Client) consumeReplies(conn *brokerConn, ready func()) error {
	// Close ends this at once, whatever it waits for, by closing the
	// connection: amqp091-go's channel calls (Channel, QueueDeclare,
	// Consume, a channel's close) wait for the broker without a bound, and
	// end when the connection is closed.
	stop := context.AfterFunc(c.replyCtx, func() { closeConn(conn) })
	defer stop()
	defer closeConn(conn) // waits for the close above if it has begun
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	r := c.opts.Rabbit
	if r.QoSPrefetchCount > 0 {
		if err := ch.Qos(r.QoSPrefetchCount, 0, false); err != nil {
			return err
		}
	}
	if _, err := ch.QueueDeclare(c.replyQ, r.transientDurable(false), false, false, false,
		amqp.Table(r.transientQueueArgs(false))); err != nil {
		return err
	}
	// Replies are consumed without acknowledgements (as RabbitMQ's direct
	// reply-to requires): a reply is only useful to this process, so there
	// is nothing to redeliver if it dies, and the acks would cost a frame
	// and a write per batch. The queue is declared exactly as oslo declares
	// it; only this consumer's flag differs, which no peer can see.
	deliveries, err := ch.Consume(c.replyQ, "1", true, false, false, false, c.opts.Rabbit.consumerArgs())
	if err != nil {
		return err
	}
	ready()
	for {
		select {
		case <-c.replyCtx.Done():
			return nil // the connection is closing, and its channel with it
		case e := <-closed:
			return e
		case d, ok := <-deliveries:
			if !ok {
				return consumerGone(conn)
			}
			body, err := decompress(d.Body, compressionOf(d.Headers), maxDecompressed)
			if err != nil {
				c.log.Warn("dropping a reply that cannot be decompressed", "error", err.Error())
				continue
			}
			c.deliverReply(body)
		}
	}
}

func (c *Client) deliverReply(body []byte) {
	r, err := decodeReplyBody(body)
	if err != nil {
		if r.MsgID == "" {
			c.log.Warn("dropping undecodable reply", "error", err.Error())
			return
		}
		// The call it answers fails now rather than at its timeout.
		r = replyMessage{MsgID: r.MsgID, Err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.UniqueID != "" {
		for _, s := range c.seen {
			if s == r.UniqueID {
				return
			}
		}
		c.seen = append(c.seen, r.UniqueID)
		if len(c.seen) > 16 {
			c.seen = c.seen[1:]
		}
	}
	w, ok := c.waiters[r.MsgID]
	if !ok {
		c.log.Info("no calling thread waiting for reply", "msg_id", request.Bound(r.MsgID))
		return
	}
	select {
	case w <- r:
	default:
	}
}

// Close stops the reply consumer and closes the connections, within
// closeWait whatever the broker does (a close it does not answer, a dial
// it lets hang): what has not ended by then (the publisher's reconnection
// that holds its lock while it dials) ends on its own, within its bound.
func (c *Client) Close() error {
	c.replyCancel()
	c.replyOnce.Do(func() { close(c.replyDone); close(c.replyReady) })
	late := time.Now().Add(closeWait)
	pubClosed := make(chan struct{})
	go func() { c.pub.close(); close(pubClosed) }()
	if !waitUntil(c.replyDone, late) {
		c.log.Error("the reply consumer did not let go of its connection in time; leaving it to end on its own", "reply_q", c.replyQ)
	}
	if !waitUntil(pubClosed, late) {
		c.log.Error("the publisher connection did not close in time; leaving it to end on its own")
	}
	return nil
}

// decodeReplyBody decodes an enveloped (or bare) reply body. A reply in the
// exact layout oslo.messaging writes is read member by member, without a map
// or encoding/json (the fuzz test holds it to the generic path).
func decodeReplyBody(body []byte) (replyMessage, error) {
	if inner, ok := fastEnvelopeMessage(body); ok {
		// The last of duplicate members wins, as in the map of the generic
		// path: keep each member's value, then read it.
		var result, failure, ending, msgID, uniqueID json.RawMessage
		if forEachMember(inner, func(k []byte, v json.RawMessage) {
			switch string(k) {
			case "result":
				result = v
			case "failure":
				failure = v
			case "ending":
				ending = v
			case "_msg_id":
				msgID = v
			case "_unique_id":
				uniqueID = v
			}
		}) {
			r := replyMessage{Result: result}
			if err := replyMembers(&r, ending, msgID, uniqueID); err != nil {
				return r, err
			}
			if failure != nil && !isNull(failure) {
				f, ok := validJSONValue(failure)
				s, isString := f.(string)
				if !ok || !isString {
					return r, fmt.Errorf("failure is not a string: %.64s", failure)
				}
				r.Failure = &s
			}
			return r, nil
		}
	}
	msg, err := unwrapEnvelope(body)
	if err != nil {
		return replyMessage{}, err
	}
	return decodeReply(msg)
}

// replyMembers reads a reply's ending, _msg_id and _unique_id (each nil
// when absent) into r. Absent or null they are false or "", as oslo's
// message.get reads them; any other value of the wrong type makes the
// reply malformed. _msg_id is read first, so that a malformed reply can
// still fail the call it answers.
func replyMembers(r *replyMessage, ending, msgID, uniqueID json.RawMessage) error {
	var bad []string
	str := func(name string, raw json.RawMessage, dst *string) {
		if raw == nil || isNull(raw) {
			return
		}
		if v, ok := validJSONValue(raw); ok {
			if s, ok := v.(string); ok {
				*dst = s
				return
			}
		}
		bad = append(bad, fmt.Sprintf("%s is not a string: %.64s", name, raw))
	}
	str("_msg_id", msgID, &r.MsgID)
	str("_unique_id", uniqueID, &r.UniqueID)
	if ending != nil && !isNull(ending) {
		v, _ := validJSONValue(ending)
		if b, ok := v.(bool); ok {
			r.Ending = b
		} else {
			bad = append(bad, fmt.Sprintf("ending is not a boolean: %.64s", ending))
		}
	}
	if bad != nil {
		return fmt.Errorf("malformed reply: %s", strings.Join(bad, "; "))
	}
	return nil
}

// decodeReply reads the fields of a reply from its decoded inner message.
func decodeReply(msg map[string]json.RawMessage) (replyMessage, error) {
	var r replyMessage
	r.Result = msg["result"]
	if err := replyMembers(&r, msg["ending"], msg["_msg_id"], msg["_unique_id"]); err != nil {
		return r, err
	}
	if raw, ok := msg["failure"]; ok && !isNull(raw) {
		var f string
		if err := json.Unmarshal(raw, &f); err != nil {
			return r, fmt.Errorf("failure is not a string: %w", err)
		}
		r.Failure = &f
	}
	return r, nil
}
