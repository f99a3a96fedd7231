package oslo

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/request"
)

func TestGoldenNotificationLayout(t *testing.T) {
	var ref frame
	for _, f := range loadFrames(t) {
		if f.File == "notification_cluster_create.json" {
			ref = f
			break
		}
	}
	if ref.Message == nil {
		t.Fatal("no notification vector")
	}
	opts := DefaultOptions()
	opts.Host = "magnum-ref"
	opts.Notifications.Driver = []string{"noop"}
	n, err := NewNotifier(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.now = func() time.Time { return time.Date(2026, 11, 29, 21, 50, 15, 576717000, time.UTC) }
	// The request as magnum-api sends it, secrets included.
	ctxMap := map[string]any{}
	for k, v := range ref.Message {
		if strings.HasPrefix(k, "_context_") {
			ctxMap[strings.TrimPrefix(k, "_context_")] = v
		}
	}
	ctxMap["auth_token"] = "a-secret-token"
	ctxMap["password"] = "a-secret-password"
	ctx := request.With(context.Background(), request.FromWire(ctxMap))
	inner, err := n.encodeNotification(ctx, "ERROR", "magnum.cluster.create", ref.Message["payload"])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(inner), "a-secret") {
		t.Fatalf("secret leaked: %s", inner)
	}
	var got map[string]any
	if err := json.Unmarshal(inner, &got); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(got["message_id"].(string)) {
		t.Errorf("message_id %v", got["message_id"])
	}
	if got["timestamp"] != ref.Message["timestamp"] {
		t.Errorf("timestamp %v, want %v", got["timestamp"], ref.Message["timestamp"])
	}
	for _, k := range []string{"message_id", "_unique_id"} {
		got[k], ref.Message[k] = nil, nil
	}
	jsonEqual(t, "notification", got, ref.Message)
	// Key order as the reference.
	wantOrder := []string{"message_id", "publisher_id", "event_type", "priority", "payload", "timestamp", "_unique_id", "_context_user"}
	last := -1
	for _, k := range wantOrder {
		i := strings.Index(string(inner), `"`+k+`": `)
		if i < last {
			t.Errorf("key %s out of order", k)
		}
		last = i
	}
}

func TestLiveNotifierRoutesAndDeclaresQueue(t *testing.T) {
	e := newEnv(t)
	topic := "notif_" + uuidHex()[:8]
	e.opts.Notifications.Driver = []string{"messagingv2"}
	e.opts.Notifications.Topics = []string{topic}
	e.opts.Host = "conductor-1"
	e.cleanups = append(e.cleanups, topic+".info", topic+".error")
	n, err := NewNotifier(e.opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	payload := map[string]any{"typeURI": "http://schemas.dmtf.org/cloud/audit/1.0/event", "outcome": "success"}
	if err := n.Notify(userCtx(), "INFO", "magnum.cluster.update", payload); err != nil {
		t.Fatal(err)
	}
	if err := n.Notify(userCtx(), "error", "magnum.cluster.delete", payload); err != nil {
		t.Fatal(err)
	}
	// Nobody consumed yet: the notifier's own queues hold the messages.
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for key, event := range map[string]string{topic + ".info": "magnum.cluster.update", topic + ".error": "magnum.cluster.delete"} {
		d, ok, err := ch.Get(key, true)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", key, ok, err)
		}
		if d.RoutingKey != key || d.Exchange != e.opts.ControlExchange || d.DeliveryMode != 2 {
			t.Errorf("delivery %s/%s mode %d", d.Exchange, d.RoutingKey, d.DeliveryMode)
		}
		inner, err := unwrapEnvelope(d.Body)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		b, _ := json.Marshal(inner)
		_ = json.Unmarshal(b, &m)
		if m["event_type"] != event || m["publisher_id"] != "container-infra.conductor-1" || m["_context_auth_token"] != nil ||
			m["_context_request_id"] != "req-test" {
			t.Errorf("%s: %v", key, m)
		}
		if p := m["priority"]; p != strings.ToUpper(strings.TrimPrefix(key, topic+".")) {
			t.Errorf("priority %v", p)
		}
	}
}

// TestNotificationContextHasNoSecretsAtAnyDepth: the context keys the
// conductor does not model are passed through, but a secret inside one
// (osprofiler's trace_info carries its hmac_key) is nulled like the
// top-level ones, in the notification and in the "log" driver's line.
func TestNotificationContextHasNoSecretsAtAnyDepth(t *testing.T) {
	rc := request.FromWire(map[string]any{
		"auth_token": "tok-SECRET1",
		"trace_info": map[string]any{"base_id": "b-1", "parent_id": "p-1", "hmac_key": "SECRET2"},
		"extra":      []any{map[string]any{"api_key": "SECRET3", "name": "kept"}, "plain"},
		"request_id": "req-1",
	})
	got := sanitizedContext(rc)
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "SECRET") {
		t.Fatalf("a secret is in the notification's context: %s", b)
	}
	for _, kept := range []string{`"base_id":"b-1"`, `"parent_id":"p-1"`, `"name":"kept"`, `"plain"`, `"request_id":"req-1"`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("%s missing from %s", kept, b)
		}
	}
	if ti := rc.Raw["trace_info"].(map[string]any); ti["hmac_key"] != "SECRET2" {
		t.Fatalf("the request's own context was changed: %v", ti)
	}
}
