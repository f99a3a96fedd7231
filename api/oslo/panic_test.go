package oslo

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// panickyResult panics when the reply is encoded: outside the method,
// where dispatch's own recovery does not reach.
type panickyResult struct{}

func (panickyResult) MarshalJSON() ([]byte, error) { panic("boom while encoding the reply") }

// TestLivePanicOutsideTheMethodKeepsServing: a panic while a message is
// decoded or its reply encoded drops that message with a log line; the
// server goes on serving.
func TestLivePanicOutsideTheMethodKeepsServing(t *testing.T) {
	e := newEnv(t)
	d := NewDispatcher()
	if err := d.Handle("boom", Method(func(context.Context, NoArgs) (any, error) { return panickyResult{}, nil })); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("ping_conductor", Method(func(context.Context, NoArgs) (any, error) { return true, nil })); err != nil {
		t.Fatal(err)
	}
	var logs testkit.SyncBuffer
	e.startServerLogged(Target{Topic: e.topic}, d, slog.New(slog.NewTextHandler(&logs, nil)))
	c := e.client()
	tgt := Target{Topic: e.topic}

	_, err := c.Call(userCtx(), tgt, "boom", nil, CallOptions{Timeout: 2 * time.Second})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("boom: %v, want a timeout (the message is dropped)", err)
	}
	if !strings.Contains(logs.String(), "panic while serving an RPC message") ||
		!strings.Contains(logs.String(), "boom while encoding the reply") {
		t.Fatalf("no log line about the panic:\n%s", logs.String())
	}
	for i := 0; i < 3; i++ {
		res, err := c.Call(userCtx(), tgt, "ping_conductor", nil, CallOptions{Timeout: 5 * time.Second})
		if err != nil || string(res) != "true" {
			t.Fatalf("ping after the panic: %s, %v", res, err)
		}
	}
}
