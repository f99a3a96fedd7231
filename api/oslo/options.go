package oslo

// oslo speaks oslo.messaging's rabbit driver (oslo.messaging 14, envelope
// 2.0) so that a Go conductor can serve, call and notify Python magnum peers
// on the same RabbitMQ broker.

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Options is the transport configuration the lead maps from magnum.conf.
// Zero values are replaced by oslo's defaults (see DefaultOptions) where a
// zero would be meaningless.
type Options struct {
	// [DEFAULT]
	TransportURL           string        // transport_url, default "rabbit://"
	ControlExchange        string        // control_exchange, default "magnum"
	RPCResponseTimeout     time.Duration // rpc_response_timeout, default 60s
	ExecutorThreadPoolSize int           // executor_thread_pool_size, default 64
	Host                   string        // [DEFAULT] host, for publisher_id

	Rabbit        RabbitOptions
	Notifications NotificationOptions
}

// RabbitOptions is [oslo_messaging_rabbit].
type RabbitOptions struct {
	SSL                            bool   // ssl
	SSLCAFile                      string // ssl_ca_file
	SSLCertFile                    string // ssl_cert_file
	SSLKeyFile                     string // ssl_key_file
	SSLVersion                     string // ssl_version: "", TLSv1, TLSv1_1, TLSv1_2, TLSv1_3, SSLv23
	SSLEnforceHostnameVerification bool   // ssl_enforce_hostname_verification

	// HeartbeatTimeoutThreshold is heartbeat_timeout_threshold (default
	// 60s), negotiated as the AMQP heartbeat; frames go out every half of it.
	// A negative value falls back to the client library's 10s (amqp091-go
	// cannot disable heartbeats).
	HeartbeatTimeoutThreshold time.Duration
	// HeartbeatRate is heartbeat_rate; amqp091-go's own heartbeater makes it
	// unnecessary, it is accepted for configuration compatibility.
	HeartbeatRate int

	// RetryInterval, RetryBackoff, IntervalMax and KombuReconnectDelay
	// make the wait between two dials as oslo makes it: after the n-th
	// failed dial (from 0), min(RetryInterval + n×RetryBackoff,
	// IntervalMax) + KombuReconnectDelay, then capped at
	// ReconnectIntervalMax. The first dial after a lost connection is
	// immediate.
	RetryInterval       time.Duration // rabbit_retry_interval, default 1s
	RetryBackoff        time.Duration // rabbit_retry_backoff, default 2s
	IntervalMax         time.Duration // rabbit_interval_max, default 30s
	KombuReconnectDelay time.Duration // kombu_reconnect_delay, default 1s
	// ReconnectIntervalMax is reconnect_interval_max (this conductor's, not
	// an oslo option): the longest wait between two dials, so that a broker
	// that is back is found within it, whatever oslo's back-off has grown
	// to. 0 leaves oslo's schedule uncapped. Default 1s.
	ReconnectIntervalMax time.Duration
	// MaxMessageSize is max_message_size (this conductor's, not an oslo
	// option): an RPC request whose body is larger is never read into
	// memory. The listener's connection sees the size in the message's
	// content header, lets the body stream past without keeping it (only
	// its _msg_id and _reply_q are picked out), and the server answers the
	// call with InvalidParameterValue. It also bounds what a compressed
	// request may expand to. Default 1 MiB; 0 or less means the default.
	MaxMessageSize int64
	// FailoverShuffle is kombu_failover_strategy = shuffle: each dial goes
	// to a broker drawn at random instead of the next one in turn.
	FailoverShuffle bool

	AMQPDurableQueues  bool          // amqp_durable_queues
	AMQPAutoDelete     bool          // amqp_auto_delete
	TransientQueuesTTL time.Duration // rabbit_transient_queues_ttl, default 1800s
	QoSPrefetchCount   int           // rabbit_qos_prefetch_count, default 0 (unlimited)
	HAQueues           bool          // rabbit_ha_queues

	QuorumQueue           bool  // rabbit_quorum_queue
	QuorumDeliveryLimit   int   // rabbit_quorum_delivery_limit
	QuorumMaxMemoryLength int   // rabbit_quroum_max_memory_length (sic)
	QuorumMaxMemoryBytes  int64 // rabbit_quroum_max_memory_bytes (sic)

	// TransientQuorumQueue is rabbit_transient_quorum_queue: reply and
	// fanout queues are durable quorum queues (with the quorum limits and
	// still x-expires).
	TransientQuorumQueue bool
	// StreamFanout is rabbit_stream_fanout: one durable stream queue
	// "<topic>_fanout", shared by every server of the topic, instead of a
	// queue per server; x-max-age is rabbit_transient_queues_ttl.
	StreamFanout bool
	// UseQueueManager is use_queue_manager: reply and fanout queues are
	// named "<hostname>:<processname>:<n>" rather than at random, n counted
	// per host and process name and restarted with the process, so that a
	// restart reuses its queues; they are left to x-expires at a stop.
	UseQueueManager bool
	// QueueManagerHost and QueueManagerProcess are hostname and
	// processname: the host name and the program's base name when empty.
	QueueManagerHost    string
	QueueManagerProcess string

	MissingConsumerRetryTimeout time.Duration // kombu_missing_consumer_retry_timeout, default 60s

	// KombuReconnectSplay is kombu_reconnect_splay: up to this much more,
	// drawn at random, is waited after KombuReconnectDelay before a lost
	// consumer connection is dialled again, so that the processes that lost
	// the same broker do not all come back at once.
	KombuReconnectSplay time.Duration
	// CancelOnFailover is enable_cancel_on_failover: every consumer asks for
	// x-cancel-on-ha-failover, so that the broker cancels it when a mirrored
	// queue's leader fails over, and it consumes again after a reconnection.
	CancelOnFailover bool
	// Compression is kombu_compression. "gzip" (or "zlib") compresses every
	// message body sent, as kombu does: zlib data with the header
	// compression = application/x-gzip. "bzip2" (kombu's name; oslo's help
	// says "bz2") is accepted but sent uncompressed, as Go has no bzip2
	// writer: every peer reads both. Compressed messages are read whatever
	// this is.
	Compression string
	// PoolSize, PoolMinSize and PoolTTL are rpc_conn_pool_size (default 30),
	// conn_pool_min_size (2) and conn_pool_ttl (1200 s), applied to each
	// publisher's pool of confirm channels: at most PoolSize idle channels
	// are kept, and idle ones older than PoolTTL are closed, down to
	// PoolMinSize. Unlike oslo's connection pool, a publish never waits for
	// a free one.
	PoolSize    int
	PoolMinSize int
	PoolTTL     time.Duration
	// LoginMethod is rabbit_login_method: AMQPLAIN (the default, "" too),
	// PLAIN, or EXTERNAL (the TLS client certificate names the user, for
	// RabbitMQ's rabbitmq_auth_mechanism_ssl). PLAIN and EXTERNAL are the
	// only mechanism offered, as py-amqp does; AMQPLAIN falls back to PLAIN
	// on a broker without it (py-amqp would fail). RABBIT-CR-DEMO, a
	// challenge-response demonstration the client library cannot speak,
	// is refused.
	LoginMethod string
	// NoDirectMandatory is direct_mandatory_flag = false (deprecated in
	// oslo): replies are published without the mandatory flag, so a reply
	// to a queue that is gone is dropped by the broker instead of retried
	// for kombu_missing_consumer_retry_timeout.
	NoDirectMandatory bool
}

// NotificationOptions is [oslo_messaging_notifications].
type NotificationOptions struct {
	Driver       []string // driver: messagingv2, messaging, log, noop (empty: no notifications)
	Topics       []string // topics, default ["notifications"]
	TransportURL string   // transport_url; empty: use the RPC transport
	// Retry is retry, the number of times a notification the broker did not
	// take is sent again (each dial counts as one). Below 0 (oslo's
	// default -1, "indefinite") it is retried until rpc_response_timeout
	// or the caller's deadline; 0 sends it once.
	Retry int
}

// DefaultMaxMessageSize is max_message_size's default: far above what
// magnum-api sends (a cluster or template with its labels, a CSR, the
// request context with its token: tens of KiB), far below RabbitMQ's own
// limit (128 MiB), which a conductor's memory should not have to hold.
const DefaultMaxMessageSize = 1 << 20

// DefaultOptions returns oslo.messaging's defaults with magnum's control
// exchange.
func DefaultOptions() Options {
	return Options{
		TransportURL:           "rabbit://",
		ControlExchange:        "magnum",
		RPCResponseTimeout:     60 * time.Second,
		ExecutorThreadPoolSize: 64,
		Rabbit: RabbitOptions{
			HeartbeatTimeoutThreshold:   60 * time.Second,
			HeartbeatRate:               2,
			RetryInterval:               time.Second,
			RetryBackoff:                2 * time.Second,
			IntervalMax:                 30 * time.Second,
			KombuReconnectDelay:         time.Second,
			ReconnectIntervalMax:        time.Second,
			MaxMessageSize:              DefaultMaxMessageSize,
			TransientQueuesTTL:          1800 * time.Second,
			MissingConsumerRetryTimeout: 60 * time.Second,
			PoolSize:                    30,
			PoolMinSize:                 2,
			PoolTTL:                     1200 * time.Second,
		},
		Notifications: NotificationOptions{Topics: []string{"notifications"}, Retry: -1},
	}
}

// withDefaults fills the zero values that have no meaning with oslo's
// defaults.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.TransportURL == "" {
		o.TransportURL = d.TransportURL
	}
	if o.ControlExchange == "" {
		o.ControlExchange = d.ControlExchange
	}
	if o.RPCResponseTimeout <= 0 {
		o.RPCResponseTimeout = d.RPCResponseTimeout
	}
	if o.ExecutorThreadPoolSize <= 0 {
		o.ExecutorThreadPoolSize = d.ExecutorThreadPoolSize
	}
	r := &o.Rabbit
	if r.HeartbeatTimeoutThreshold == 0 {
		r.HeartbeatTimeoutThreshold = d.Rabbit.HeartbeatTimeoutThreshold
	}
	if r.HeartbeatRate <= 0 {
		r.HeartbeatRate = d.Rabbit.HeartbeatRate
	}
	if r.RetryInterval <= 0 {
		r.RetryInterval = d.Rabbit.RetryInterval
	}
	if r.RetryBackoff < 0 {
		r.RetryBackoff = 0
	}
	if r.IntervalMax <= 0 {
		r.IntervalMax = d.Rabbit.IntervalMax
	}
	if r.MaxMessageSize <= 0 {
		r.MaxMessageSize = d.Rabbit.MaxMessageSize
	}
	if r.ReconnectIntervalMax < 0 {
		r.ReconnectIntervalMax = 0
	}
	if r.TransientQueuesTTL <= 0 {
		r.TransientQueuesTTL = d.Rabbit.TransientQueuesTTL
	}
	if r.MissingConsumerRetryTimeout <= 0 {
		r.MissingConsumerRetryTimeout = d.Rabbit.MissingConsumerRetryTimeout
	}
	if r.PoolSize <= 0 { // not set at all: rpc_conn_pool_size has min 1
		r.PoolSize, r.PoolMinSize, r.PoolTTL = d.Rabbit.PoolSize, d.Rabbit.PoolMinSize, d.Rabbit.PoolTTL
	}
	if len(o.Notifications.Topics) == 0 {
		o.Notifications.Topics = d.Notifications.Topics
	}
	return o
}

// durable is oslo's Connection.durable: quorum queues are always durable.
func (r RabbitOptions) durable() bool { return r.AMQPDurableQueues || r.QuorumQueue }

// check refuses what oslo refuses: quorum reply and fanout queues with HA
// queues, a pool smaller than its minimum, and a compression kombu does
// not know.
func (r RabbitOptions) check() error {
	if r.TransientQuorumQueue && r.HAQueues {
		return errors.New("oslo: rabbit_transient_quorum_queue and rabbit_ha_queues are both enabled")
	}
	if r.PoolSize < r.PoolMinSize {
		return fmt.Errorf("oslo: rpc_conn_pool_size: %d must be greater than or equal to conn_pool_min_size: %d",
			r.PoolSize, r.PoolMinSize)
	}
	switch r.LoginMethod {
	case "", "AMQPLAIN", "PLAIN", "EXTERNAL":
	default:
		return fmt.Errorf("oslo: rabbit_login_method %q is not supported (AMQPLAIN, PLAIN, EXTERNAL)", r.LoginMethod)
	}
	_, err := compressionType(r.Compression)
	return err
}

// sasl is the authentication offered for rabbit_login_method.
func (r RabbitOptions) sasl(user, pass string) []amqp.Authentication {
	switch r.LoginMethod {
	case "PLAIN":
		return []amqp.Authentication{&amqp.PlainAuth{Username: user, Password: pass}}
	case "EXTERNAL":
		return []amqp.Authentication{&amqp.ExternalAuth{}}
	}
	return []amqp.Authentication{&amqp.AMQPlainAuth{Username: user, Password: pass}, &amqp.PlainAuth{Username: user, Password: pass}}
}

// Content types of kombu's compressions.
const (
	compressionZlib  = "application/x-gzip"
	compressionBzip2 = "application/x-bz2"
)

// compressionType is the content type kombu gives kombu_compression name:
// "" for none.
func compressionType(name string) (string, error) {
	switch name {
	case "":
		return "", nil
	case "gzip", "zlib", compressionZlib:
		return compressionZlib, nil
	case "bzip2", "bzip", "bz2", compressionBzip2:
		return compressionBzip2, nil
	}
	return "", fmt.Errorf("oslo: kombu_compression %q is not supported (gzip, zlib; bzip2 is read but sent uncompressed)", name)
}

// reconnectDelay is how long a consumer waits before consuming again after
// the broker cancelled it (a deleted queue, a mirrored queue's failover),
// as oslo reads kombu_reconnect_delay: kombu_reconnect_delay plus a random
// share of kombu_reconnect_splay.
func (r RabbitOptions) reconnectDelay() time.Duration {
	d := r.KombuReconnectDelay
	if r.KombuReconnectSplay > 0 {
		d += mrand.N(r.KombuReconnectSplay) //nolint:gosec // reconnect splay, not a secret
	}
	return d
}

// consumerArgs is the arguments of every consumer: x-cancel-on-ha-failover
// with enable_cancel_on_failover (a stream fanout consumer's offset
// replaces them, as in oslo).
func (r RabbitOptions) consumerArgs() amqp.Table {
	if r.CancelOnFailover {
		return amqp.Table{"x-cancel-on-ha-failover": true}
	}
	return nil
}

// transientDurable is whether reply and fanout queues, and the fanout
// exchange, are durable (quorum or stream queues cannot be transient).
func (r RabbitOptions) transientDurable(fanout bool) bool {
	return r.TransientQuorumQueue || (fanout && r.StreamFanout)
}

// transientQueueArgs is oslo's _get_queue_arguments for a reply queue or,
// with fanout, a fanout queue.
func (r RabbitOptions) transientQueueArgs(fanout bool) map[string]any {
	ttl := r.TransientQueuesTTL
	if fanout && r.StreamFanout {
		args := map[string]any{"x-queue-type": "stream"}
		if ttl > 0 {
			args["x-max-age"] = fmt.Sprintf("%ds", int64(ttl/time.Second))
		}
		return args
	}
	q := r
	q.QuorumQueue = r.TransientQuorumQueue
	return q.queueArgs(ttl, true)
}

// queueArgs is oslo's _get_queue_arguments. ttl 0 means no x-expires;
// quorum applies to topic and notification queues only.
func (r RabbitOptions) queueArgs(ttl time.Duration, quorum bool) map[string]any {
	args := map[string]any{}
	if r.HAQueues && !(quorum && r.QuorumQueue) {
		args["x-ha-policy"] = "all"
	}
	if quorum && r.QuorumQueue {
		args["x-queue-type"] = "quorum"
		if r.QuorumDeliveryLimit > 0 {
			args["x-delivery-limit"] = int32(r.QuorumDeliveryLimit)
		}
		if r.QuorumMaxMemoryLength > 0 {
			args["x-max-in-memory-length"] = int32(r.QuorumMaxMemoryLength)
		}
		if r.QuorumMaxMemoryBytes > 0 {
			args["x-max-in-memory-bytes"] = r.QuorumMaxMemoryBytes
		}
	}
	if ttl > 0 {
		args["x-expires"] = int32(ttl / time.Millisecond)
	}
	return args
}
