package conductorapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestLiveAPIAgainstGoServer drives the typed API through a real broker
// into an oslo server.
func TestLiveAPIAgainstGoServer(t *testing.T) {
	testkit.NeedsService(t, "RabbitMQ")
	opts := oslo.DefaultOptions()
	opts.TransportURL = "rabbit://guest:guest@127.0.0.1:5672/"
	opts.ControlExchange = "capi_" + randHex()
	topic := "capi_" + randHex()
	log := slog.New(slog.DiscardHandler)

	d := oslo.NewDispatcher()
	if err := d.Handle("ping_conductor", oslo.Method(func(ctx context.Context, _ oslo.NoArgs) (any, error) { return true, nil })); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan string, 1)
	if err := d.Handle("cluster_delete", oslo.Method(func(ctx context.Context, a struct {
		UUID string `json:"uuid"`
	}) (any, error) {
		if a.UUID == "missing" {
			return nil, exception.ClusterNotFound(a.UUID)
		}
		deleted <- a.UUID
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("object_action", oslo.Method(func(ctx context.Context, a struct {
		ObjInst   json.RawMessage `json:"objinst"`
		ObjMethod string          `json:"objmethod"`
		Args      []any           `json:"args"`
		Kwargs    map[string]any  `json:"kwargs"`
	}) (any, error) {
		return []any{map[string]any{"status": "DELETE_IN_PROGRESS", "obj_what_changed": []string{}}, nil}, nil
	})); err != nil {
		t.Fatal(err)
	}
	srv, err := oslo.NewServer(opts, oslo.ServerOptions{}, oslo.Target{Topic: topic}, d, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	c, err := oslo.NewClient(opts, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = srv.Stop(context.Background())
		if conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/"); err == nil {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(topic, false, false, false)
				_, _ = ch.QueueDelete(topic+"."+srv.Target().Server, false, false, false)
				_ = ch.ExchangeDelete(opts.ControlExchange, false, false)
			}
			_ = conn.Close()
		}
	})
	api := New(c, topic)
	if ok, err := api.PingConductor(ctx); !ok || err != nil {
		t.Fatalf("ping: %v %v", ok, err)
	}
	if ok, err := api.WithServer(srv.Target().Server).PingConductor(ctx); !ok || err != nil {
		t.Fatalf("ping server: %v %v", ok, err)
	}
	if err := api.ClusterDelete(ctx, "missing"); !errors.Is(err, exception.ClassClusterNotFound.New(nil)) {
		t.Fatalf("ClusterDelete(missing): %v", err)
	}
	if err := api.ClusterDeleteAsync(ctx, "u-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-deleted:
		if got != "u-1" {
			t.Fatalf("deleted %q", got)
		}
	case <-ctx.Done():
		t.Fatal("cast never arrived")
	}
	updates, result, err := api.ObjectAction(ctx, json.RawMessage(`{"magnum_object.name": "Cluster"}`), "destroy", nil, nil)
	if err != nil || string(updates["status"]) != `"DELETE_IN_PROGRESS"` || string(result) != "null" {
		t.Fatalf("object_action: %v %s %v", updates, result, err)
	}
	var ex *exception.Error
	if e := api.CredentialRotate(ctx, json.RawMessage(`{}`)); !errors.As(e, &ex) || ex.Class != "NoSuchMethod" {
		t.Fatalf("credential_rotate on a server without it: %v", e)
	}
}
