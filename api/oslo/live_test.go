package oslo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

const brokerURL = "rabbit://guest:guest@127.0.0.1:5672/"

// testEnv is one test's own exchange and topic on the real broker.
type testEnv struct {
	t        *testing.T
	opts     Options
	topic    string
	raw      *brokerConn
	cleanups []string
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	opts := DefaultOptions()
	opts.TransportURL = brokerURL
	opts.ControlExchange = "test_" + uuidHex()[:12]
	opts.Rabbit.MissingConsumerRetryTimeout = 5 * time.Second
	testkit.NeedsService(t, "RabbitMQ")
	// amqp.Dial's defaults, and the socket for closeConn.
	var sock net.Conn
	conn, err := amqp.DialConfig("amqp://guest:guest@127.0.0.1:5672/", amqp.Config{
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := amqp.DefaultDial(30*time.Second)(network, addr)
			sock = c
			return c, err
		},
	})
	if err != nil {
		t.Fatalf("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
	}
	e := &testEnv{t: t, opts: opts, topic: "topic_" + uuidHex()[:12], raw: &brokerConn{Connection: conn, sock: sock}}
	t.Cleanup(func() {
		if ch, err := e.raw.Channel(); err == nil {
			for _, q := range e.cleanups {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_, _ = ch.QueueDelete(e.topic, false, false, false)
			_ = ch.ExchangeDelete(e.opts.ControlExchange, false, false)
			_ = ch.ExchangeDelete(e.topic+"_fanout", false, false)
			_ = ch.Close()
		}
		closeConn(e.raw) // bounded: a cleanup must not wait for ever on a broker's close-ok
	})
	return e
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (e *testEnv) startServer(d *Dispatcher) *Server {
	e.t.Helper()
	return e.startServerAt(Target{Topic: e.topic}, d)
}

// startServerAt starts a server on target (a topic of e's), stopped when
// the test ends if the test has not stopped it.
func (e *testEnv) startServerAt(target Target, d *Dispatcher) *Server {
	e.t.Helper()
	return e.startServerLogged(target, d, testLogger(e.t))
}

// startServerLogged is startServerAt with the server's logger.
func (e *testEnv) startServerLogged(target Target, d *Dispatcher, log *slog.Logger) *Server {
	e.t.Helper()
	s, err := NewServer(e.opts, ServerOptions{GracePeriod: 5 * time.Second}, target, d, log)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s
}

func (e *testEnv) client() *Client {
	c, err := NewClient(e.opts, testLogger(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

type echoArgs struct {
	Value any    `json:"value"`
	Note  string `json:"note,omitempty"`
}

// recorder collects the notes of the record method. Notes arrive on
// different queues and workers, so in no particular order: wait finds a note
// whether it came before or after the ones waited for earlier.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	ch      chan string
	skipped map[string]int // drained by wait while it looked for another note
}

func newRecorder() *recorder {
	return &recorder{ch: make(chan string, 100), skipped: map[string]int{}}
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
	r.ch <- s
}

func (r *recorder) wait(t *testing.T, want string) {
	t.Helper()
	r.mu.Lock()
	if r.skipped[want] > 0 {
		r.skipped[want]--
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-r.ch:
			if got == want {
				return
			}
			r.mu.Lock()
			r.skipped[got]++
			r.mu.Unlock()
		case <-timeout:
			t.Fatalf("%q never recorded", want)
		}
	}
}

func liveDispatcher(t *testing.T, rec *recorder, release chan struct{}) *Dispatcher {
	d := NewDispatcher()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Handle("ping_conductor", Method(func(ctx context.Context, _ NoArgs) (any, error) { return true, nil })))
	must(d.Handle("echo", Method(func(ctx context.Context, a echoArgs) (any, error) {
		rc := request.From(ctx)
		return map[string]any{"value": a.Value, "request_id": rc.RequestID, "user_id": rc.UserID}, nil
	})))
	must(d.Handle("not_found", Method(func(ctx context.Context, a echoArgs) (any, error) {
		return nil, exception.ClusterNotFound(a.Value)
	})))
	must(d.Handle("plain_error", Method(func(ctx context.Context, _ NoArgs) (any, error) {
		return nil, errors.New("disk on fire")
	})))
	must(d.Handle("boom", Method(func(ctx context.Context, _ NoArgs) (any, error) {
		var m map[string]int
		//lint:ignore SA5000 the panic is the point: its message is asserted on both sides
		m["x"] = 1
		return nil, nil
	})))
	must(d.Handle("record", Method(func(ctx context.Context, a echoArgs) (any, error) {
		rec.add(a.Note)
		return nil, nil
	})))
	must(d.Handle("slow", Method(func(ctx context.Context, a echoArgs) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return "done", nil
	})))
	must(d.Handle("sleep", Method(func(ctx context.Context, a echoArgs) (any, error) {
		ms, _ := a.Value.(float64)
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return "slept", nil
	})))
	return d
}

func userCtx() context.Context {
	return request.With(context.Background(), &request.Context{
		UserID: "u1", ProjectID: "p1", RequestID: "req-test", GlobalRequestID: "req-global",
		AuthToken: "secret-token", Roles: []string{"admin"}, IsAdmin: true,
	})
}

func TestLiveCallCastFanoutAndFailures(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	srv := e.startServer(liveDispatcher(t, rec, nil))
	c := e.client()
	ctx := userCtx()
	tgt := Target{Topic: e.topic}

	res, err := c.Call(ctx, tgt, "ping_conductor", nil)
	if err != nil || string(res) != "true" {
		t.Fatalf("ping: %s %v", res, err)
	}
	res, err = c.Call(ctx, tgt, "echo", map[string]any{"value": map[string]any{"a": []any{1.0, "é"}}})
	if err != nil {
		t.Fatal(err)
	}
	var echoed map[string]any
	_ = json.Unmarshal(res, &echoed)
	jsonEqual(t, "echo", echoed, map[string]any{"value": map[string]any{"a": []any{1.0, "é"}}, "request_id": "req-test", "user_id": "u1"})

	// Server-specific target.
	if _, err := c.Call(ctx, Target{Topic: e.topic, Server: srv.Target().Server}, "ping_conductor", nil); err != nil {
		t.Fatalf("call to server target: %v", err)
	}

	failures := []struct {
		method string
		args   any
		module string
		class  string
		msg    string
		code   int
	}{
		{"not_found", map[string]any{"value": "abc"}, exception.ModuleMagnum, "ClusterNotFound", "Cluster abc could not be found.", 404},
		{"plain_error", nil, exception.ModuleMagnum, "MagnumException", "disk on fire", 500},
		{"boom", nil, exception.ModuleMagnum, "MagnumException", "panic in RPC method: assignment to entry in nil map", 500},
		{"nope", nil, exception.ModuleDispatcher, "NoSuchMethod", "Endpoint does not support RPC method nope", 500},
		{"_private", nil, exception.ModuleDispatcher, "NoSuchMethod", "Endpoint does not support RPC method _private", 500},
		{"ping_conductor", map[string]any{"bogus": 1}, exception.ModuleBuiltins, "TypeError", "Handler.ping_conductor() got an unexpected keyword argument 'bogus'", 500},
		{"echo", map[string]any{}, exception.ModuleBuiltins, "TypeError", "Handler.echo() missing 1 required positional argument: 'value'", 500},
	}
	for _, f := range failures {
		_, err := c.Call(ctx, tgt, f.method, f.args)
		var ex *exception.Error
		if !errors.As(err, &ex) {
			t.Fatalf("%s: want *exception.Error, got %T %v", f.method, err, err)
		}
		if ex.Module != f.module || ex.Class != f.class || ex.Message != f.msg || ex.Code != f.code {
			t.Errorf("%s: got %s.%s %q %d", f.method, ex.Module, ex.Class, ex.Message, ex.Code)
		}
		checkTracebackHasNoSourcePaths(t, f.method, err)
	}
	_, err = c.Call(ctx, tgt, "not_found", map[string]any{"value": "x"})
	if !errors.Is(err, exception.ClassResourceNotFound.New(nil)) {
		t.Errorf("ClusterNotFound should match ResourceNotFound: %v", err)
	}

	// Version and namespace.
	_, err = c.Call(ctx, Target{Topic: e.topic, Version: "2.0"}, "ping_conductor", nil)
	var ex *exception.Error
	if !errors.As(err, &ex) || ex.Class != "UnsupportedVersion" {
		t.Errorf("version 2.0: %v", err)
	}
	if _, err = c.Call(ctx, Target{Topic: e.topic, Version: "1.0"}, "ping_conductor", nil); err != nil {
		t.Errorf("version 1.0: %v", err)
	}

	// Casts: topic and fanout.
	if err := c.Cast(ctx, tgt, "record", map[string]any{"value": 1, "note": "cast"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "cast")
	if err := c.Cast(ctx, Target{Topic: e.topic, Fanout: true}, "record", map[string]any{"value": 1, "note": "fanout"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "fanout")
}

// checkTracebackHasNoSourcePaths: a failure's traceback starts as
// Python's, ends with the exception, and names no source file of ours.
func checkTracebackHasNoSourcePaths(t *testing.T, what string, err error) {
	t.Helper()
	var rt *RemoteTraceback
	if !errors.As(err, &rt) || len(rt.Lines) < 2 || rt.Lines[0] != "Traceback (most recent call last):\n" {
		t.Fatalf("%s: traceback %v", what, rt)
	}
	for _, l := range rt.Lines {
		if strings.Contains(l, ".go") || strings.Contains(l, "File ") || strings.Contains(l, "magnum-conductor/") {
			t.Errorf("%s: the traceback names a source file: %q", what, l)
		}
	}
}

// TestLiveTranslatedErrorReachesTheCaller: ServerOptions.TranslateError
// decides the failure a method's error becomes (here a lost database
// becomes oslo.db's DBConnectionError, as with the Python conductor,
// instead of MagnumException); other errors are left alone.
func TestLiveTranslatedErrorReachesTheCaller(t *testing.T) {
	e := newEnv(t)
	logs := &testkit.SyncBuffer{}
	s, err := NewServer(e.opts, ServerOptions{GracePeriod: 5 * time.Second, TranslateError: func(err error) error {
		if err.Error() == "disk on fire" {
			return exception.DBConnectionError("db: list clusters: connection refused", err)
		}
		return err
	}}, Target{Topic: e.topic}, liveDispatcher(t, newRecorder(), nil), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	c := e.client()
	_, err = c.Call(userCtx(), Target{Topic: e.topic}, "plain_error", nil)
	var ex *exception.Error
	if !errors.As(err, &ex) || ex.Module != "oslo_db.exception" || ex.Class != "DBConnectionError" ||
		ex.Message != "db: list clusters: connection refused" || len(ex.Kwargs) != 0 {
		t.Fatalf("got %#v", err)
	}
	checkTracebackHasNoSourcePaths(t, "plain_error", err)
	if l := logs.String(); !strings.Contains(l, `level=ERROR msg="RPC method failed"`) ||
		!strings.Contains(l, "class=oslo_db.exception.DBConnectionError") {
		t.Errorf("the lost database is not an ERROR line:\n%s", l)
	}
	var rt *RemoteTraceback
	_ = errors.As(err, &rt)
	if last := rt.Lines[len(rt.Lines)-1]; last != "oslo_db.exception.DBConnectionError: db: list clusters: connection refused\n" {
		t.Errorf("last traceback line %q", last)
	}
	if _, err = c.Call(userCtx(), Target{Topic: e.topic}, "not_found", map[string]any{"value": "x"}); !errors.As(err, &ex) ||
		ex.Class != "ClusterNotFound" {
		t.Fatalf("an error left alone: %v", err)
	}
}

func TestLiveCallTimeoutAndCallMonitor(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.startServer(liveDispatcher(t, newRecorder(), release))
	c := e.client()
	tgt := Target{Topic: e.topic}

	start := time.Now()
	_, err := c.Call(userCtx(), tgt, "slow", map[string]any{"value": 1}, CallOptions{Timeout: 300 * time.Millisecond})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want *TimeoutError, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	close(release)

	// A 2.6 s method with a 2 s call-monitor timeout succeeds only if the
	// server sends heartbeats (every 1 s).
	res, err := c.Call(userCtx(), tgt, "sleep", map[string]any{"value": 2600},
		CallOptions{Timeout: 20 * time.Second, CallMonitorTimeout: 2 * time.Second})
	if err != nil || string(res) != `"slept"` {
		t.Fatalf("call-monitored call: %s %v", res, err)
	}
}

// readyMessages is the number of messages ready (not delivered) in queue.
func (e *testEnv) readyMessages(ch *amqp.Channel, queue string) int {
	e.t.Helper()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return q.Messages
}

// publishRaw sends body to the test topic as a raw AMQP message.
func (e *testEnv) publishRaw(body []byte) {
	e.t.Helper()
	ch, err := e.raw.Channel()
	if err != nil {
		e.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.PublishWithContext(context.Background(), e.opts.ControlExchange, e.topic, false, false,
		amqp.Publishing{ContentType: "application/json", Body: body}); err != nil {
		e.t.Fatal(err)
	}
}

// rawReplyQueue declares a reply queue and returns its deliveries.
func (e *testEnv) rawReplyQueue(name string) <-chan amqp.Delivery {
	e.t.Helper()
	ch, err := e.raw.Channel()
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ch.Close() })
	if _, err := ch.QueueDeclare(name, false, true, false, false, nil); err != nil {
		e.t.Fatal(err)
	}
	d, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func rawCall(method, args, msgID, replyQ, extra string) []byte {
	inner := `{"method": "` + method + `", "args": ` + args + `, "_msg_id": "` + msgID + `", "_reply_q": "` + replyQ +
		`", "_timeout": null, "_unique_id": "` + uuidHex() + `", "_context_request_id": "req-raw"` + extra + `}`
	b, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
	return b
}

func waitReply(t *testing.T, d <-chan amqp.Delivery, msgID string) replyMessage {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case m := <-d:
			inner, err := unwrapEnvelope(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			var r replyMessage
			b, _ := json.Marshal(inner)
			_ = json.Unmarshal(b, &r)
			if r.MsgID == msgID && r.Ending {
				if m.DeliveryMode != 2 || m.ContentType != "application/json" {
					t.Errorf("reply delivery mode %d", m.DeliveryMode)
				}
				return r
			}
		case <-timeout:
			t.Fatalf("no reply to %s", msgID)
		}
	}
}

func failureClass(t *testing.T, r replyMessage) string {
	t.Helper()
	if r.Failure == nil {
		return ""
	}
	f, err := DecodeFailure(*r.Failure)
	if err != nil {
		t.Fatal(err)
	}
	return f.Module + "." + f.Class
}

func TestLiveBadInputNeverStalls(t *testing.T) {
	e := newEnv(t)
	e.opts.ExecutorThreadPoolSize = 2
	// The 10 MB echo below is served when max_message_size allows it
	// (TestLiveOversizedCallGetsAFailureReply: refused when not).
	e.opts.Rabbit.MaxMessageSize = 16 << 20
	e.startServer(liveDispatcher(t, newRecorder(), nil))
	replyQ := "reply_" + uuidHex()
	replies := e.rawReplyQueue(replyQ)

	e.publishRaw([]byte("\xff\xfe not json at all"))
	e.publishRaw([]byte(`[1, 2, 3]`))
	e.publishRaw([]byte(`{"oslo.version": "2.0", "oslo.message": "{broken"}`))
	e.publishRaw([]byte(`{"oslo.version": "3.0", "oslo.message": "{\"method\": \"ping_conductor\", \"_msg_id\": \"env3\", \"_reply_q\": \"` + replyQ + `\"}"}`))
	e.publishRaw(rawCall("ping_conductor", "[1]", "argslist", replyQ, ""))
	e.publishRaw(rawCall("ping_conductor", "{}", "unknownctx", replyQ, `, "_context_something_new": {"x": 1}`))
	var big bytes.Buffer
	big.WriteString(`{"value": "`)
	big.WriteString(strings.Repeat("x", 10<<20))
	big.WriteString(`"}`)
	e.publishRaw(rawCall("echo", big.String(), "big", replyQ, ""))
	// No method at all.
	noMethod, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": `{"args": {}, "_msg_id": "nomethod", "_reply_q": "` + replyQ + `", "_unique_id": "` + uuidHex() + `"}`})
	e.publishRaw(noMethod)

	want := map[string]string{
		"env3":       "oslo_messaging._drivers.common.UnsupportedRpcEnvelopeVersion",
		"argslist":   "builtins.AttributeError",
		"unknownctx": "",
		"big":        "",
		"nomethod":   "builtins.TypeError",
	}
	got := map[string]string{}
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case m := <-replies:
			inner, err := unwrapEnvelope(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			var r replyMessage
			b, _ := json.Marshal(inner)
			_ = json.Unmarshal(b, &r)
			got[r.MsgID] = failureClass(t, r)
			if r.MsgID == "big" && (r.Failure != nil || len(r.Result) < 10<<20) {
				t.Errorf("10 MB echo: failure %v, %d bytes", r.Failure, len(r.Result))
			}
		case <-timeout:
			t.Fatalf("replies so far %v, want %v", got, want)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q want %q", k, got[k], v)
		}
	}
	// Still serving.
	c := e.client()
	if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "ping_conductor", nil); err != nil {
		t.Fatalf("server stalled: %v", err)
	}
}

func TestLiveMissingReplyQueueRetriedWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	e.opts.ExecutorThreadPoolSize = 1
	e.startServer(liveDispatcher(t, newRecorder(), nil))
	replyQ := "reply_" + uuidHex()
	e.publishRaw(rawCall("ping_conductor", "{}", "late", replyQ, ""))
	// With a single worker, this call only succeeds if the retrying reply
	// does not hold the worker.
	c := e.client()
	for i := 0; i < 3; i++ {
		if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "ping_conductor", nil, CallOptions{Timeout: 3 * time.Second}); err != nil {
			t.Fatalf("blocked by the retrying reply: %v", err)
		}
	}
	// The queue appears late: the retried reply reaches it.
	r := waitReply(t, e.rawReplyQueue(replyQ), "late")
	if string(r.Result) != "true" {
		t.Fatalf("late reply %s", r.Result)
	}
}

func TestLiveDuplicateUniqueIDIsDropped(t *testing.T) {
	e := newEnv(t)
	e.opts.ExecutorThreadPoolSize = 1
	rec := newRecorder()
	e.startServer(liveDispatcher(t, rec, nil))
	cast := func(note, uid string) []byte {
		inner := `{"method": "record", "args": {"value": 1, "note": "` + note + `"}, "_unique_id": "` + uid + `"}`
		b, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
		return b
	}
	dup := uuidHex()
	e.publishRaw(cast("dup", dup))
	e.publishRaw(cast("dup", dup))
	e.publishRaw(cast("marker", uuidHex()))
	rec.wait(t, "marker")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, c := range rec.calls {
		if c == "dup" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("duplicate processed %d times (%v)", n, rec.calls)
	}
}

func TestLiveDeclarationsAndGracefulStop(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	s, err := NewServer(e.opts, ServerOptions{}, Target{Topic: e.topic}, liveDispatcher(t, newRecorder(), release), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// Re-declaring with the reference's exact flags and arguments succeeds
	// only if ours are identical.
	if err := ch.ExchangeDeclare(e.opts.ControlExchange, "topic", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(e.topic, false, false, false, false, nil); err != nil {
		t.Fatalf("%s: %v", e.topic, err)
	}
	// Unlike oslo's, the server queue of a randomly named server expires
	// (rabbit_transient_queues_ttl) once unused: a killed conductor does not
	// leave it behind for ever.
	if _, err := ch.QueueDeclare(e.topic+"."+s.Target().Server, false, false, false, false,
		amqp.Table{"x-expires": int32(1800000)}); err != nil {
		t.Fatalf("server queue: %v", err)
	}
	if err := ch.ExchangeDeclare(e.topic+"_fanout", "fanout", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	qi, err := ch.QueueDeclare(s.fanoutQueue, false, false, false, false, amqp.Table{"x-expires": int32(1800000)})
	if err != nil {
		t.Fatalf("fanout queue: %v", err)
	}
	if qi.Consumers != 1 {
		t.Fatalf("fanout consumers %d", qi.Consumers)
	}
	if !strings.HasPrefix(s.fanoutQueue, e.topic+"_fanout_") || len(s.fanoutQueue) != len(e.topic)+8+32 {
		t.Fatalf("fanout queue name %s", s.fanoutQueue)
	}

	// An in-flight call finishes during Stop; its reply still arrives.
	c := e.client()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(userCtx(), Target{Topic: e.topic}, "slow", map[string]any{"value": 1})
		done <- err
	}()
	// Wait until the call is in flight (the topic queue is drained).
	testkit.Eventually(t, 5*time.Second, func() bool {
		return e.readyMessages(ch, e.topic) == 0 && len(s.sem) == 1
	}, "call never started")
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	select { // consumers cancelled and fanout queue deleted before the in-flight call ends
	case <-s.loopDone:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the listener did not stop while a call was in flight")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("in-flight call lost: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	ch2, _ := e.raw.Channel()
	if _, err := ch2.QueueDeclarePassive(s.fanoutQueue, false, false, false, false, nil); err == nil {
		t.Fatal("fanout queue survived Stop")
	}
	ch3, _ := e.raw.Channel()
	if _, err := ch3.QueueDeclarePassive(e.topic+"."+s.Target().Server, false, false, false, false, nil); err == nil {
		t.Fatal("the randomly named server queue survived Stop")
	}
	ch4, _ := e.raw.Channel()
	if _, err := ch4.QueueDeclarePassive(e.topic, false, false, false, false, nil); err != nil {
		t.Fatalf("the shared topic queue must stay: %v", err)
	}
}

// TestLiveNamedServerQueueOutlivesStop: a server name set by the operator
// is reused by the next process, so its queue is left in place.
func TestLiveNamedServerQueueOutlivesStop(t *testing.T) {
	e := newEnv(t)
	name := "fixed-" + uuidHex()[:8]
	s := e.startServerAt(Target{Topic: e.topic, Server: name}, liveDispatcher(t, newRecorder(), nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive(e.topic+"."+name, false, false, false, false, nil); err != nil {
		t.Fatalf("the named server queue was deleted: %v", err)
	}
}

// startStuckServer starts a server with one worker and a "stuck" method
// that records "entered" and returns only when canceled.
func startStuckServer(t *testing.T, e *testEnv, rec *recorder) *Server {
	t.Helper()
	e.opts.ExecutorThreadPoolSize = 1
	d := liveDispatcher(t, rec, nil)
	if err := d.Handle("stuck", Method(func(ctx context.Context, a echoArgs) (any, error) {
		rec.add("entered")
		<-ctx.Done()
		return nil, ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(e.opts, ServerOptions{}, Target{Topic: e.topic}, d, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	return s
}

func TestLiveStopPastGracePeriodCancelsStuckHandlers(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	s := startStuckServer(t, e, rec)
	c := e.client()
	for i := 0; i < 3; i++ {
		if err := c.Cast(userCtx(), Target{Topic: e.topic}, "stuck", map[string]any{"value": i}); err != nil {
			t.Fatal(err)
		}
	}
	rec.wait(t, "entered") // the single worker is taken; the listener waits for it
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop past grace: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %s", d)
	}
}

// TestLiveStopHonoursItsDeadlineWhateverIsPending: a handler that ignores
// its cancellation and a reply being retried to a reply queue that is gone
// (for kombu_missing_consumer_retry_timeout, a minute) do not hold Stop past
// its deadline (plus the short wait for what it canceled): the conductor's
// shutdown_grace_period holds.
func TestLiveStopHonoursItsDeadlineWhateverIsPending(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.MissingConsumerRetryTimeout = time.Minute
	rec := newRecorder()
	d := liveDispatcher(t, rec, nil)
	deaf := make(chan struct{})
	t.Cleanup(func() { close(deaf) })
	if err := d.Handle("deaf", Method(func(ctx context.Context, a echoArgs) (any, error) {
		rec.add("deaf")
		<-deaf // ignores ctx
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(e.opts, ServerOptions{GracePeriod: time.Hour}, Target{Topic: e.topic}, d, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	c := e.client()
	if err := c.Cast(userCtx(), Target{Topic: e.topic}, "deaf", map[string]any{"value": 1}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "deaf")
	// A call whose reply queue does not exist: its reply is returned by the
	// broker and retried.
	e.publishRaw(rawCall("record", `{"value": 1, "note": "replied"}`, "m-gone", "reply_gone_"+uuidHex(), ""))
	rec.wait(t, "replied")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- s.Stop(ctx) }()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(start); took > time.Second+cancelWait+time.Second {
			t.Fatalf("Stop took %s for a 1 s deadline", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop still waits 30 s after its 1 s deadline")
	}
}

// TestLiveStopLeavesUnstartedRequestsInTheQueue: a request that never got a
// worker is not acknowledged, so a stop leaves it in the queue for the next
// server (oslo acknowledges on receipt and drops it); and with
// rabbit_qos_prefetch_count unset the consumers' prefetch is the pool plus a
// batch, so a backlog stays in the broker.
func TestLiveStopLeavesUnstartedRequestsInTheQueue(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	s := startStuckServer(t, e, rec)
	out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_consumers", "queue_name", "prefetch_count")
	if err != nil {
		t.Fatal(err)
	}
	// pool + batch = 65, but no more than 64 MiB of max_message_size (1 MiB)
	// messages.
	// messages, of which the server and fanout consumers get 2 each.
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(e.topic) + `\s+60$`).Match(out) {
		t.Errorf("the topic consumer's prefetch is not min(pool + batch, 64 MiB / 1 MiB) - 2 × 2 = 60:\n%s", out)
	}
	e.opts.Rabbit.MaxMessageSize = 16 << 20
	if s2, _ := NewServer(e.opts, ServerOptions{}, Target{Topic: e.topic}, NewDispatcher(), nil); s2.prefetch() != 4 ||
		s2.consumerPrefetch() != [3]int{2, 1, 1} || s2.BufferBound() != 5*16<<20 {
		t.Errorf("with 16 MiB messages: prefetch %d (%v), bound %d", s2.prefetch(), s2.consumerPrefetch(), s2.BufferBound())
	}
	c := e.client()
	tgt := Target{Topic: e.topic}
	if err := c.Cast(userCtx(), tgt, "stuck", map[string]any{"value": 0}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "entered") // the only worker is taken
	for _, note := range []string{"q1", "q2", "q3"} {
		if err := c.Cast(userCtx(), tgt, "record", map[string]any{"value": 1, "note": note}); err != nil {
			t.Fatal(err)
		}
	}
	// All three delivered to the listener (Cast returns once the broker has
	// the message; none is ready in the queue any more: they wait,
	// unacknowledged, for the worker).
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	testkit.Eventually(t, 10*time.Second, func() bool { return e.readyMessages(ch, e.topic) == 0 },
		"the casts were not delivered to the listener")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: %v", err)
	}
	// The next server on the topic gets the three that never started.
	rec2 := newRecorder()
	e.startServer(liveDispatcher(t, rec2, nil))
	for _, note := range []string{"q1", "q2", "q3"} {
		rec2.wait(t, note)
	}
}

// TestLiveConsumersPrefetchSumsToBufferBound: RabbitMQ applies a channel's
// (non-global) prefetch to each consumer, so the server's three consumers
// (topic, server and fanout queue) may together hold the sum of theirs
// unacknowledged. That sum, read back from the broker, is what BufferBound
// counts: the configured prefetch, not three times it. Also on quorum
// queues, which refuse a consumer on a channel with global QoS.
func TestLiveConsumersPrefetchSumsToBufferBound(t *testing.T) {
	for _, c := range []struct {
		name     string
		prefetch int // rabbit_qos_prefetch_count
		quorum   bool
		want     int // the sum of the consumers' prefetch
	}{
		{"default", 0, false, 64},
		{"configured", 100, false, 100},
		{"quorum", 10, true, 10},
		{"below one each", 2, false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.opts.Rabbit.QoSPrefetchCount = c.prefetch
			e.opts.Rabbit.QuorumQueue = c.quorum
			s := e.startServer(NewDispatcher())
			out, err := testkit.Output(testkit.ToolTimeout, "rabbitmqctl", "-q", "--no-table-headers", "list_consumers",
				"queue_name", "prefetch_count")
			if err != nil {
				t.Fatal(err)
			}
			ours := map[string]bool{e.topic: true, e.topic + "." + s.Target().Server: true, s.fanoutQueue: true}
			sum, seen := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(line)
				if len(f) != 2 || !ours[f[0]] {
					continue
				}
				n, err := strconv.Atoi(f[1])
				if err != nil || n <= 0 {
					t.Fatalf("consumer of %s has prefetch %q: a consumer without a limit has no bound", f[0], f[1])
				}
				sum += n
				seen++
			}
			if seen != 3 {
				t.Fatalf("%d consumers of the server's queues, want 3:\n%s", seen, out)
			}
			size := e.opts.Rabbit.MaxMessageSize
			if assumed := s.BufferBound()/size - int64(e.opts.ExecutorThreadPoolSize); int64(sum) != assumed || sum != c.want {
				t.Errorf("the consumers' prefetch sums to %d; BufferBound counts %d; want %d\n%s", sum, assumed, c.want, out)
			}
		})
	}
}
