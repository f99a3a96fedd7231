package oslo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// closeOwnConnections makes the broker close every connection of this test
// process (identified by the connection_name our dialer sends), as
// `rabbitmqctl close_all_connections` would, without touching other
// processes' connections on the shared broker.
func closeOwnConnections(t *testing.T) int {
	t.Helper()
	out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_connections", "pid", "client_properties")
	if err != nil {
		t.Fatalf("rabbitmqctl list_connections: %v", err)
	}
	marker := fmt.Sprintf(":%d:", os.Getpid())
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		pid, props, ok := strings.Cut(line, "\t")
		if !ok || !strings.Contains(props, `{"connection_name","`) || !strings.Contains(props, marker) {
			continue
		}
		if out, err := testkit.CombinedOutput(testkit.ToolTimeout, "rabbitmqctl", "-q", "close_connection", pid, "test: broker connection loss"); err != nil {
			t.Fatalf("close_connection %s: %v %s", pid, err, out)
		}
		n++
	}
	return n
}

func TestLiveRecoversFromConnectionLoss(t *testing.T) {
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		t.Fatalf("rabbitmqctl is required: %v", err)
	}
	_, rec, c, tgt := recoveryEnv(t, 100*time.Millisecond)
	// listener, reply publisher, client reply consumer, client publisher
	if n := closeOwnConnections(t); n < 4 {
		t.Fatalf("closed %d connections, want at least 4", n)
	}
	callUntilAnswered(t, c, tgt, 3*time.Second, 60*time.Second, "connection loss")
	if err := c.Cast(context.Background(), tgt, "record", map[string]any{"value": 1, "note": "after"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "after")
	// A second loss is survived as well.
	if n := closeOwnConnections(t); n < 4 {
		t.Fatalf("closed %d connections the second time", n)
	}
	callUntilAnswered(t, c, tgt, 3*time.Second, 60*time.Second, "second loss")
}

// callUntilAnswered calls ping_conductor (each call waiting up to
// callTimeout) until one is answered, and fails t with the last error if
// none is within timeout.
func callUntilAnswered(t *testing.T, c *Client, tgt Target, callTimeout, timeout time.Duration, after string) {
	t.Helper()
	var err error
	if testkit.Poll(timeout, func() bool {
		_, err = c.Call(userCtx(), tgt, "ping_conductor", nil, CallOptions{Timeout: callTimeout})
		if err != nil {
			t.Logf("call during recovery: %v", err)
		}
		return err == nil
	}) != nil {
		t.Fatalf("no recovery after %s: %v", after, err)
	}
}

// TestLiveReconnectsAtOnceAfterConnectionLoss: the first dial after a lost
// connection is immediate, and the listener declares its queues and
// consumes before anything else, whatever oslo's back-off options say (here
// 20 s waits): a cast published right after the loss is served at once
// (rec.wait gives it 10 s). The old listener waited kombu_reconnect_delay
// first.
func TestLiveReconnectsAtOnceAfterConnectionLoss(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.KombuReconnectDelay = 20 * time.Second
	e.opts.Rabbit.RetryInterval = 20 * time.Second
	e.opts.Rabbit.ReconnectIntervalMax = 0
	rec := newRecorder()
	e.startServer(liveDispatcher(t, rec, nil))
	c := e.client()
	tgt := Target{Topic: e.topic}
	if err := c.Cast(userCtx(), tgt, "record", map[string]any{"value": 1, "note": "before"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "before")
	if n := closeOwnConnections(t); n < 2 {
		t.Fatalf("closed %d connections, want the listener's and the client's", n)
	}
	if err := c.Cast(userCtx(), tgt, "record", map[string]any{"value": 1, "note": "after"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "after")
}

// TestLiveRedeclaresWhenQueuesAreDeleted: a broker-side queue deletion
// cancels the consumers (consumer_cancel_notify); server and client
// redeclare their queues and go on.
func TestLiveRedeclaresWhenQueuesAreDeleted(t *testing.T) {
	e, _, c, tgt := recoveryEnv(t, 50*time.Millisecond)
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(e.topic, false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(c.ReplyQueue(), false, false, false); err != nil {
		t.Fatal(err)
	}
	callUntilAnswered(t, c, tgt, 2*time.Second, 30*time.Second, "queue deletion")
	if _, err := ch.QueueDeclarePassive(e.topic, false, false, false, false, nil); err != nil {
		t.Fatalf("topic queue not redeclared: %v", err)
	}
}

// recoveryEnv starts a server (the live dispatcher, reconnecting after
// delay) and a client on a fresh exchange and topic, and checks one call.
func recoveryEnv(t *testing.T, delay time.Duration) (*testEnv, *recorder, *Client, Target) {
	t.Helper()
	e := newEnv(t)
	e.opts.Rabbit.KombuReconnectDelay = delay
	rec := newRecorder()
	e.startServer(liveDispatcher(t, rec, nil))
	c := e.client()
	tgt := Target{Topic: e.topic}
	if _, err := c.Call(userCtx(), tgt, "ping_conductor", nil); err != nil {
		t.Fatal(err)
	}
	return e, rec, c, tgt
}

// TestCallWithoutBrokerSaysWhy: a call that cannot get its reply queue
// because the broker does not answer ends with the deadline, and says what
// the dial said (no password).
func TestCallWithoutBrokerSaysWhy(t *testing.T) {
	opts := DefaultOptions()
	opts.TransportURL = "rabbit://guest:topsecret@127.0.0.1:1/"
	c, err := NewClient(opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(userCtx(), time.Second)
	defer cancel()
	_, err = c.Call(ctx, Target{Topic: "t"}, "ping_conductor", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error = %v", err)
	}
	// The same with the call's own timeout (rpc_response_timeout or
	// CallOptions) and a context without a deadline, as magnum-api's calls
	// come: waiting for the reply queue used to ignore it and never end.
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(userCtx(), Target{Topic: "t"}, "ping_conductor", nil, CallOptions{Timeout: time.Second})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("error with the call's timeout = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a call with a 1 s timeout still waits for its reply queue after 30 s")
	}
}
