package conductor

// Integration through the real broker: the typed conductor client
// (api/conductorapi) calls the handlers over RabbitMQ, and the CADF events
// go out through the real oslo notifier.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type brokerEnv struct {
	*env
	api        *conductorapi.API
	raw        *amqp.Connection
	notifTopic string
}

func newBrokerEnv(t *testing.T) *brokerEnv {
	e := newEnv(t)
	opts := oslo.DefaultOptions()
	opts.TransportURL = "rabbit://guest:guest@127.0.0.1:5672/"
	opts.ControlExchange = "test_" + randHex(6)
	opts.Host = "conductor-test"
	notifTopic := "notif_" + randHex(6)
	opts.Notifications = oslo.NotificationOptions{Driver: []string{"messagingv2"}, Topics: []string{notifTopic}}
	opts.RPCResponseTimeout = 20 * time.Second
	topic := "topic_" + randHex(6)

	raw, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	notifier, err := oslo.NewNotifier(opts, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	e.h.notify = NewNotifications(notifier, e.store, "openstack", discardLog())
	d := oslo.NewDispatcher()
	if err := e.h.Register(d); err != nil {
		t.Fatal(err)
	}
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{GracePeriod: 5 * time.Second}, oslo.Target{Topic: topic}, d, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := oslo.NewClient(opts, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		_ = notifier.Close()
		if ch, err := raw.Channel(); err == nil {
			for _, q := range []string{topic, topic + "." + srv.Target().Server, notifTopic + ".info", notifTopic + ".error"} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_ = ch.ExchangeDelete(opts.ControlExchange, false, false)
			_ = ch.ExchangeDelete(topic+"_fanout", false, false)
			_ = ch.Close()
		}
		_ = raw.Close()
	})
	return &brokerEnv{env: e, api: conductorapi.New(client, topic), raw: raw, notifTopic: notifTopic}
}

// nextNotification takes one message from notifications.<priority> of the
// test's topic; the notifier published it before the handler replied.
func (b *brokerEnv) nextNotification(priority string) map[string]any {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	d, ok, err := ch.Get(b.notifTopic+"."+priority, true)
	if err != nil || !ok {
		b.t.Fatalf("no %s notification: %v", priority, err)
	}
	var env struct {
		Message string `json:"oslo.message"`
	}
	if err := json.Unmarshal(d.Body, &env); err != nil {
		b.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(env.Message), &m); err != nil {
		b.t.Fatal(err)
	}
	return m
}

func (b *brokerEnv) raw1(o objects.Object) json.RawMessage {
	b.t.Helper()
	p, err := objects.EncodeJSON(o, "", nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

func TestBrokerCallsReachHandlersAndNotificationsGoOut(t *testing.T) {
	b := newBrokerEnv(t)
	c := b.seed(b.ct, objects.CreateComplete, 2)
	ng := b.nodegroup(c, "default-worker")

	// A guard refusal comes back as the Magnum class, with an ERROR event.
	stale := b.cluster(*c.UUID)
	stale.Status = objects.CreateInProgress
	_, err := b.api.ClusterUpgrade(b.ctx, b.raw1(stale), b.raw1(b.ct), 1, b.raw1(ng))
	var ee *exception.Error
	if !errors.As(err, &ee) || ee.Class != "NotSupported" || ee.Module != exception.ModuleMagnum ||
		ee.Message != `Upgrading a cluster when status is "CREATE_IN_PROGRESS" is not supported.` {
		t.Fatalf("error %#v", err)
	}
	m := b.nextNotification("error")
	if m["event_type"] != "magnum.cluster.update" || m["priority"] != "ERROR" ||
		m["publisher_id"] != "container-infra.conductor-test" {
		t.Errorf("failure notification %v", m)
	}

	// A successful upgrade call returns the cluster at the caller's version.
	res, err := b.api.ClusterUpgrade(b.ctx, b.raw1(c), b.raw1(b.ct), 1, b.raw1(ng))
	if err != nil {
		t.Fatal(err)
	}
	got, err := objects.DecodeCluster(res)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != objects.UpdateInProgress || got.ReceivedVersion() != c.ObjVersion() {
		t.Errorf("result status %s version %s", got.Status, got.ReceivedVersion())
	}
	b.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	b.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 2)
	m = b.nextNotification("info")
	payload, _ := m["payload"].(map[string]any)
	if m["event_type"] != "magnum.cluster.update" || payload["outcome"] != "pending" {
		t.Errorf("pending notification %v", m)
	}
	content := payload["target"].(map[string]any)["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
	if content["status"] != objects.CreateComplete || content["node_count"] != 2.0 || content["master_count"] != 1.0 {
		t.Errorf("pending content %v", content)
	}

	if ok, err := b.api.PingConductor(b.ctx); err != nil || !ok {
		t.Errorf("ping_conductor: %v %v", ok, err)
	}

	// Federation methods answer builtins.NotImplementedError.
	_, err = b.api.FederationCreate(b.ctx, b.raw1(&objects.Federation{Name: objects.Str("f")}), nil)
	if !errors.As(err, &ee) || ee.Class != "NotImplementedError" || ee.Module != exception.ModuleBuiltins {
		t.Errorf("federation_create: %#v", err)
	}
}
