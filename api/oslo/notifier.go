package oslo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/request"
)

// Notifier sends oslo.messaging notifications ([oslo_messaging_notifications]
// driver messagingv2, messaging, log or noop) with publisher_id
// "container-infra.<host>".
type Notifier struct {
	opts        Options
	log         *slog.Logger
	publisherID string
	drivers     []string
	topics      []string
	pub         *publisher
	now         func() time.Time
}

// NewNotifier builds the notifier. The notification transport_url is used
// when set, the RPC one otherwise. host is [DEFAULT] host (the FQDN when
// empty).
func NewNotifier(opts Options, log *slog.Logger) (*Notifier, error) {
	opts = opts.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host := opts.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	n := &Notifier{opts: opts, log: log, publisherID: "container-infra." + host, topics: opts.Notifications.Topics, now: time.Now}
	needsBroker := false
	for _, d := range opts.Notifications.Driver {
		d = strings.TrimSpace(d)
		switch d {
		case "":
		case "messagingv2", "messaging":
			needsBroker = true
			n.drivers = append(n.drivers, d)
		case "log", "noop", "test":
			n.drivers = append(n.drivers, d)
		default:
			return nil, fmt.Errorf("oslo: unknown notification driver %q", d)
		}
	}
	if needsBroker {
		raw := opts.Notifications.TransportURL
		if raw == "" {
			raw = opts.TransportURL
		}
		u, err := ParseTransportURL(raw)
		if err != nil {
			return nil, err
		}
		n.pub = newPublisher(newDialer(u, opts.Rabbit, "notifier", log), log)
	}
	return n, nil
}

// PublisherID returns "container-infra.<host>".
func (n *Notifier) PublisherID() string { return n.publisherID }

// Enabled reports whether any driver sends something.
func (n *Notifier) Enabled() bool {
	for _, d := range n.drivers {
		if d != "noop" {
			return true
		}
	}
	return false
}

// sanitizedContext is the request context as the notifier sends it:
// secrets are null.
func sanitizedContext(rc *request.Context) map[string]any {
	m := rc.ToWire()
	for _, k := range []string{"auth_token", "auth_token_info", "password", "trust_id", "auth_url"} {
		if _, ok := m[k]; ok {
			m[k] = nil
		}
	}
	return withoutSecrets(m).(map[string]any)
}

// secretKey reports whether a context key names a secret: a token, a
// password, a secret, or a signing key (osprofiler's trace_info carries
// its hmac_key).
func secretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "password") ||
		strings.Contains(k, "hmac") || strings.HasSuffix(k, "_key")
}

// withoutSecrets is v with the values of secret keys nulled at any depth
// (the request context keeps the keys it does not model as their JSON
// values: maps and lists). v itself is not changed.
func withoutSecrets(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secretKey(k) {
				out[k] = nil
			} else {
				out[k] = withoutSecrets(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutSecrets(e)
		}
		return out
	}
	return v
}

// encodeNotification builds the inner notification message.
func (n *Notifier) encodeNotification(ctx context.Context, priority, eventType string, payload any) ([]byte, error) {
	var ob orderedObject
	ob.add("message_id", uuidDashed())
	ob.add("publisher_id", n.publisherID)
	ob.add("event_type", eventType)
	ob.add("priority", priority)
	ob.add("payload", payload)
	ob.add("timestamp", n.now().UTC().Format("2006-01-02 15:04:05.000000"))
	ob.add("_unique_id", uuidHex())
	addContext(&ob, sanitizedContext(request.From(ctx)))
	return ob.bytes()
}

// Notify sends one notification: priority "INFO", "ERROR", ... (sent in
// upper case, routed as "<topic>.<priority lower>" on the control exchange),
// event type such as "magnum.cluster.create", and a JSON-marshalable
// payload. The request context of ctx goes in _context_* keys without
// secrets.
func (n *Notifier) Notify(ctx context.Context, priority, eventType string, payload any) error {
	if !n.Enabled() {
		return nil
	}
	priority = strings.ToUpper(priority)
	inner, err := n.encodeNotification(ctx, priority, eventType, payload)
	if err != nil {
		return fmt.Errorf("encoding notification %s: %w", eventType, err)
	}
	var errs []error
	for _, d := range n.drivers {
		switch d {
		case "log":
			n.log.Info("notification", append([]any{"event_type", eventType, "priority", priority,
				"notification", json.RawMessage(inner)}, request.From(ctx).LogAttrs()...)...)
		case "messagingv2", "messaging":
			body := inner
			if d == "messagingv2" {
				if body, err = wrapEnvelope(inner); err != nil {
					return err
				}
			}
			for _, topic := range n.topics {
				if err := n.send(ctx, topic+"."+strings.ToLower(priority), body); err != nil {
					n.log.Error("could not send notification", append([]any{"event_type", eventType,
						"topic", topic, "error", err.Error()}, request.From(ctx).LogAttrs()...)...)
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (n *Notifier) send(ctx context.Context, key string, body []byte) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.opts.RPCResponseTimeout)
		defer cancel()
	}
	exchange := n.opts.ControlExchange
	r := n.opts.Rabbit
	tries := 0
	if n.opts.Notifications.Retry >= 0 {
		tries = n.opts.Notifications.Retry + 1
	}
	return n.pub.publish(ctx, publishing{exchange: exchange, key: key, body: body, tries: tries,
		declareKey: "notify:" + exchange + ":" + key,
		declare: func(ch *amqp.Channel) error {
			// oslo's _publish_and_creates_default_queue: the exchange and a
			// queue named after the routing key, so that nothing is lost
			// before a consumer appears.
			if err := ch.ExchangeDeclare(exchange, "topic", r.durable(), r.AMQPAutoDelete, false, false, nil); err != nil {
				return err
			}
			if _, err := ch.QueueDeclare(key, r.durable(), r.AMQPAutoDelete, false, false, amqp.Table(r.queueArgs(0, true))); err != nil {
				return err
			}
			return ch.QueueBind(key, key, exchange, false, nil)
		}})
}

// Close closes the notifier's connection, within closeWait whatever the
// broker does; a close still under way then (behind a reconnection that
// holds the publisher's lock while it dials) ends on its own, within its
// bound.
func (n *Notifier) Close() error {
	if n.pub == nil {
		return nil
	}
	closed := make(chan struct{})
	go func() { n.pub.close(); close(closed) }()
	if !waitUntil(closed, time.Now().Add(closeWait)) {
		n.log.Error("the notifier's connection did not close in time; leaving it to end on its own")
	}
	return nil
}
