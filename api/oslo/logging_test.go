package oslo

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// TestLiveRequestLogLinesCarryRequestIDsAndNoSecrets checks that every log
// line about a request names request_id and global_request_id, and that
// the token and password of the context never reach the log.
func TestLiveRequestLogLinesCarryRequestIDsAndNoSecrets(t *testing.T) {
	e := newEnv(t)
	var out testkit.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := NewServer(e.opts, ServerOptions{}, Target{Topic: e.topic}, liveDispatcher(t, newRecorder(), nil), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server)
	c := e.client()
	tgt := Target{Topic: e.topic}
	_, _ = c.Call(userCtx(), tgt, "ping_conductor", nil)
	_, _ = c.Call(userCtx(), tgt, "not_found", map[string]any{"value": "x"})
	_, _ = c.Call(userCtx(), tgt, "plain_error", nil)
	_, _ = c.Call(userCtx(), tgt, "boom", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	logs := out.String()
	if strings.Contains(logs, "secret-token") {
		t.Fatal("auth token logged")
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, about := rec["method"]; !about {
			continue
		}
		n++
		if rec["request_id"] != "req-test" || rec["global_request_id"] != "req-global" {
			t.Errorf("log line without request ids: %s", line)
		}
	}
	if n < 4 {
		t.Fatalf("only %d request log lines:\n%s", n, logs)
	}
}

// TestLiveHugeContextValuesAreBoundedInLogs: a call whose request_id is
// 2 MB (and whose _msg_id, method and an unknown context key are huge as
// well) fails as it would anyway, but no log line copies those values whole.
func TestLiveHugeContextValuesAreBoundedInLogs(t *testing.T) {
	e := newEnv(t)
	out := newLogWaiter()
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.opts.Rabbit.MaxMessageSize = 16 << 20
	e.startServerLogged(Target{Topic: e.topic}, liveDispatcher(t, newRecorder(), nil), log)
	replyQ := "reply_" + uuidHex()
	replies := e.rawReplyQueue(replyQ)
	huge := strings.Repeat("r", 2<<20)
	msgID := "m-" + strings.Repeat("m", 1<<20)
	e.publishRaw(rawCall("no_such_"+strings.Repeat("x", 1<<20), "{}", msgID, replyQ,
		`, "_context_request_id": "`+huge+`", "_context_`+strings.Repeat("k", 1<<20)+`": 1`))
	r := waitReply(t, replies, msgID)
	if got := failureClass(t, r); got != "oslo_messaging.rpc.dispatcher.NoSuchMethod" {
		t.Fatalf("failure %s", got)
	}
	if !out.waitFor(10*time.Second, func(s string) bool { return strings.Contains(s, "unknown context key") }) {
		t.Fatalf("no line about the unknown key:\n%.2000s", out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, line := range lines {
		if len(line) > 4096 {
			t.Fatalf("a log line of %d bytes: %.300s", len(line), line)
		}
	}
	if !strings.Contains(out.String(), `"request_id":"rrrr`) {
		t.Fatalf("the request_id's start is not logged:\n%.2000s", out.String())
	}
}

// TestLiveCallWithANonStringMsgIDIsRejectedAndLogged: a call whose _msg_id
// is a number or an object is not run as a cast with nobody told: it is
// dropped with an ERROR line, and the server goes on serving. An empty or
// null _msg_id is a cast, as in oslo.
func TestLiveCallWithANonStringMsgIDIsRejectedAndLogged(t *testing.T) {
	e := newEnv(t)
	var out testkit.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rec := newRecorder()
	e.startServerLogged(Target{Topic: e.topic}, liveDispatcher(t, rec, nil), log)
	replyQ := "reply_" + uuidHex()
	replies := e.rawReplyQueue(replyQ)
	publish := func(note, msgID string) {
		inner := `{"method": "record", "args": {"value": 1, "note": "` + note + `"}, "_msg_id": ` + msgID + `, "_reply_q": "` + replyQ +
			`", "_unique_id": "` + uuidHex() + `", "_context_request_id": "req-` + note + `"}`
		b, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
		e.publishRaw(b)
	}
	publish("number", `12345`)
	publish("object", `{"id": "x"}`)
	publish("null", `null`)
	publish("empty", `""`)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(out.String())
		}
	})
	rec.wait(t, "null")
	rec.wait(t, "empty")
	c := e.client()
	if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "record", map[string]any{"value": 1, "note": "after"}); err != nil {
		t.Fatalf("server stalled: %v", err)
	}
	rec.wait(t, "after")
	rec.mu.Lock()
	calls := slices.Clone(rec.calls)
	rec.mu.Unlock()
	if slices.Contains(calls, "number") || slices.Contains(calls, "object") {
		t.Fatalf("a call with a non-string _msg_id was run: %v", calls)
	}
	select {
	case m := <-replies:
		t.Fatalf("unexpected reply %s", m.Body)
	default:
	}
	logs := out.String()
	for _, req := range []string{"req-number", "req-object"} {
		if !regexp.MustCompile(`"level":"ERROR","msg":"rejecting RPC call whose _msg_id is not a string[^"]*"[^\n]*"request_id":"` + req + `"`).MatchString(logs) {
			t.Errorf("no ERROR line for %s in:\n%s", req, logs)
		}
	}
}
