package oslo

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLiveRequestLogLinesCarryRequestIDsAndNoSecrets checks that every log
// line about a request names request_id and global_request_id, and that
// the token and password of the context never reach the log.
func TestLiveRequestLogLinesCarryRequestIDsAndNoSecrets(t *testing.T) {
	e := newEnv(t)
	var out lockedBuffer
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
