package oslo

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/internal/testkit"
)

// scanIDs runs an idScanner over body in chunks of random sizes.
func scanIDs(body []byte, rng *rand.Rand) (string, string, string) {
	var s idScanner
	for len(body) > 0 {
		n := 1 + rng.IntN(len(body))
		if rng.IntN(3) == 0 {
			n = min(n, 1+rng.IntN(7))
		}
		s.scan(body[:n])
		body = body[n:]
	}
	return s.ids()
}

// trickyArgs are values that could mislead a scanner: quotes, backslashes,
// escapes of structural characters, non-ASCII, and members named like the
// ones it keeps, nested where they do not count.
func trickyArgs(rng *rand.Rand, size int) map[string]any {
	pieces := []string{`"`, `\`, `\"`, `{`, `}`, `[`, `]`, `,`, `:`, "é", "日本", "\u2028", "\x01", `"_msg_id": "evil"`,
		`\u0022`, "_reply_q", "oslo.message", "plain text "}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return map[string]any{
		"cluster": map[string]any{"_msg_id": "nested-not-this", "labels": map[string]any{"_reply_q": "nor-this"},
			"blob": b.String()},
		"list": []any{map[string]any{"_unique_id": "x"}, "oslo.message", 1.5, nil, true},
	}
}

// TestIDScannerAgreesWithDecodeRequest: whatever the arguments hold, the
// scanner finds the _msg_id, _reply_q and _unique_id that DecodeRequest
// reads, for calls and casts as oslo writes them, in any chunking.
func TestIDScannerAgreesWithDecodeRequest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := request.With(context.Background(), &request.Context{RequestID: "req-" + uuidDashed(), AuthToken: `tok"en\`})
	for i := range 200 {
		msgID, replyQ := "", ""
		if i%3 != 0 {
			msgID, replyQ = uuidHex(), "reply_"+uuidHex()
		}
		body, err := encodeRequest(ctx, Target{Topic: "t"}, "cluster_create", trickyArgs(rng, rng.IntN(20000)), msgID, replyQ, 0)
		if err != nil {
			t.Fatal(err)
		}
		req, err := DecodeRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		gotMsg, gotReply, gotUnique := scanIDs(body, rng)
		if gotMsg != req.MsgID || gotReply != req.ReplyQ || gotUnique != req.UniqueID {
			t.Fatalf("message %d: scanned %q %q %q, decoded %q %q %q", i, gotMsg, gotReply, gotUnique,
				req.MsgID, req.ReplyQ, req.UniqueID)
		}
		if req.UniqueID == "" {
			t.Fatal("no _unique_id in an encoded request")
		}
	}
}

func TestIDScannerReadsMessagesWithoutEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	body := []byte(`{"args": {"_msg_id": "no"}, "_msg_id": "m1", "x": [1, {"_reply_q": "no"}], "_reply_q": "reply_q1", "_unique_id": "u1"}`)
	if m, r, u := scanIDs(body, rng); m != "m1" || r != "reply_q1" || u != "u1" {
		t.Fatalf("got %q %q %q", m, r, u)
	}
	// An envelope without oslo.version is no envelope (DecodeRequest reads
	// the body itself), and a value that is not a string is no value.
	body = []byte(`{"oslo.message": "{\"_msg_id\": \"inner\"}", "_msg_id": 5, "_reply_q": "outer"}`)
	if m, r, _ := scanIDs(body, rng); m != "" || r != "outer" {
		t.Fatalf("got %q %q", m, r)
	}
	// Values that would need escaping, or are too long for a queue name,
	// are not kept: no reply is better than one to a mangled name.
	body = []byte(`{"_msg_id": "a\"b", "_reply_q": "` + strings.Repeat("q", 300) + `"}`)
	if m, r, _ := scanIDs(body, rng); m != "" || r != "" {
		t.Fatalf("got %q %q", m, r)
	}
}

func FuzzIDScanner(f *testing.F) {
	f.Add([]byte(rawCall("ping_conductor", `{"a": "\"}{"}`, "m", "reply_x", "")), uint64(7))
	f.Add([]byte(`{"_msg_id": "a", "_reply_q": "b"}`), uint64(1))
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed))
		m, r, u := scanIDs(body, rng)
		for _, v := range []string{m, r, u} {
			if len(v) > maxID || strings.IndexFunc(v, func(c rune) bool { return c > 0x7f || !safeIDByte(byte(c)) }) >= 0 {
				t.Fatalf("kept %q", v)
			}
		}
		req, err := DecodeRequest(body)
		if err != nil || req.BadMsgID {
			return
		}
		// DecodeRequest's generic path matches the envelope's keys as
		// encoding/json does, ignoring case ("oslo.messAge"); oslo and the
		// scanner take only the exact keys.
		lower := bytes.ToLower(body)
		for _, k := range []string{`"oslo.message"`, `"oslo.version"`} {
			if bytes.Contains(lower, []byte(k)) != bytes.Contains(body, []byte(k)) {
				return
			}
		}
		safe := func(v string) string {
			if len(v) > maxID || strings.IndexFunc(v, func(c rune) bool { return c > 0x7f || !safeIDByte(byte(c)) }) >= 0 {
				return ""
			}
			return v
		}
		if m != safe(req.MsgID) || r != safe(req.ReplyQ) || u != safe(req.UniqueID) {
			t.Fatalf("scanned %q %q %q, decoded %q %q %q", m, r, u, req.MsgID, req.ReplyQ, req.UniqueID)
		}
	})
}

// amqpFrame builds one AMQP frame.
func amqpFrame(typ byte, ch uint16, payload []byte) []byte {
	f := []byte{typ, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(f[1:], ch)
	binary.BigEndian.PutUint32(f[3:], uint32(len(payload)))
	return append(append(f, payload...), frameEnd)
}

// contentHeader is a content header payload for a body of size bytes, with
// one property (a content type).
func contentHeader(size uint64) []byte {
	p := []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 16}
	binary.BigEndian.PutUint64(p[headerBodySizeAt:], size)
	return append(p, "application/json"...)
}

// message is the frames of one delivery of body on ch, cut in body frames
// of at most frameMax bytes.
func message(ch uint16, body []byte, frameMax int) [][]byte {
	out := [][]byte{amqpFrame(frameTypeMethod, ch, []byte{0, 60, 0, 60, 1, 2, 3}),
		amqpFrame(frameTypeHeader, ch, contentHeader(uint64(len(body))))}
	for len(body) > 0 {
		n := min(len(body), frameMax)
		out = append(out, amqpFrame(frameTypeBody, ch, body[:n]))
		body = body[n:]
	}
	return out
}

// readFrames parses a frame stream into (type, channel, payload) and
// checks each frame's end byte.
type parsedFrame struct {
	typ     byte
	ch      uint16
	payload []byte
}

func readFrames(t *testing.T, r io.Reader) []parsedFrame {
	t.Helper()
	var out []parsedFrame
	for {
		var h [7]byte
		if _, err := io.ReadFull(r, h[:]); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, binary.BigEndian.Uint32(h[3:])+1)
		if _, err := io.ReadFull(r, p); err != nil {
			t.Fatal(err)
		}
		if p[len(p)-1] != frameEnd {
			t.Fatal("frame without its end byte")
		}
		out = append(out, parsedFrame{h[0], binary.BigEndian.Uint16(h[1:]), p[:len(p)-1]})
	}
}

// TestLimitConnDropsOnlyOversizedBodies: frames of bodies within the limit
// reach the library byte for byte; a larger body is replaced by the short
// one of the limit, which names its size, _msg_id and _reply_q, with the
// content header's body size changed to match; frames of other channels
// go on in between.
func TestLimitConnDropsOnlyOversizedBodies(t *testing.T) {
	lim := newBodyLimit(1000)
	small := []byte(rawCall("ping_conductor", `{}`, "m-small", "reply_small", ""))
	big := rawCall("cluster_create", `{"blob": "`+strings.Repeat(`x\"`, 3000)+`"}`, "m-big", "reply_big", "")
	heartbeat := amqpFrame(8, 0, nil)
	frames := [][]byte{heartbeat}
	frames = append(frames, message(1, small, 100)...)
	bigFrames := message(1, big, 512)
	// Frames of another channel, and a heartbeat, in the middle of the big
	// body.
	frames = append(frames, bigFrames[:len(bigFrames)/2]...)
	frames = append(frames, heartbeat)
	frames = append(frames, message(2, small, 64)...)
	frames = append(frames, bigFrames[len(bigFrames)/2:]...)
	frames = append(frames, message(1, small, 4096)...)
	stream := bytes.Join(frames, nil)

	client, server := net.Pipe()
	go func() {
		// Written in odd pieces, as TCP would deliver them.
		rng := rand.New(rand.NewPCG(5, 6))
		for b := stream; len(b) > 0; {
			n := min(len(b), 1+rng.IntN(700))
			if _, err := server.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
		_ = server.Close()
	}()
	c := lim.wrap(client)
	var bodies [][]byte // in the order their content headers came
	var sizes []uint64
	current := map[uint16]int{}
	heartbeats := 0
	for _, f := range readFrames(t, c) {
		switch f.typ {
		case frameTypeHeader:
			sizes = append(sizes, binary.BigEndian.Uint64(f.payload[headerBodySizeAt:]))
			bodies = append(bodies, nil)
			current[f.ch] = len(bodies) - 1
		case frameTypeBody:
			bodies[current[f.ch]] = append(bodies[current[f.ch]], f.payload...)
		case 8:
			heartbeats++
		}
	}
	if len(bodies) != 4 || heartbeats != 2 {
		t.Fatalf("%d messages and %d heartbeats came through, want 4 and 2", len(bodies), heartbeats)
	}
	// The big body's header is held back until its body has passed, so
	// channel 2's message comes before it.
	for _, i := range []int{0, 1, 3} {
		if !bytes.Equal(bodies[i], small) {
			t.Fatalf("body %d within the limit was changed", i)
		}
	}
	for i, b := range bodies {
		if sizes[i] != uint64(len(b)) {
			t.Fatalf("message %d: header says %d bytes, body has %d", i, sizes[i], len(b))
		}
	}
	o, ok := lim.parse(bodies[2])
	if !ok {
		t.Fatalf("the oversized body was not replaced: %.200s", bodies[2])
	}
	if o.Size != uint64(len(big)) || o.MsgID != "m-big" || o.ReplyQ != "reply_big" || o.UniqueID == "" {
		t.Fatalf("replacement %+v (body of %d bytes)", o, len(big))
	}
	if _, ok := newBodyLimit(1000).parse(bodies[2]); ok {
		t.Fatal("another limit's nonce was accepted")
	}
}

// TestLiveOversizedCallGetsAFailureReply: a call larger than
// max_message_size is answered with InvalidParameterValue naming the limit
// (magnum-api rebuilds it), a cast of that size is dropped with a log line,
// and the server goes on serving.
func TestLiveOversizedCallGetsAFailureReply(t *testing.T) {
	e := newEnv(t)
	e.opts.Rabbit.MaxMessageSize = 64 << 10
	rec := newRecorder()
	logs := newLogWaiter()
	e.startServerLogged(Target{Topic: e.topic}, liveDispatcher(t, rec, nil), slog.New(slog.NewTextHandler(logs, nil)))
	replyQ := "reply_" + uuidHex()
	replies := e.rawReplyQueue(replyQ)
	blob, _ := json.Marshal(strings.Repeat("z", 5<<20))
	e.publishRaw(rawCall("echo", `{"value": `+string(blob)+`}`, "m-over", replyQ, ""))
	r := waitReply(t, replies, "m-over")
	if got := failureClass(t, r); got != "magnum.common.exception.InvalidParameterValue" {
		t.Fatalf("failure %s: %v", got, r.Failure)
	}
	f, _ := DecodeFailure(*r.Failure)
	if !strings.Contains(f.Message, "65536") || !strings.Contains(f.Message, "max_message_size") {
		t.Fatalf("the failure does not say the limit: %s", f.Message)
	}
	// A cast of that size: nothing to answer; logged.
	inner := `{"method": "record", "args": {"value": 1, "note": ` + string(blob) + `}, "_unique_id": "` + uuidHex() + `"}`
	cast, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
	e.publishRaw(cast)
	c := e.client()
	if err := c.Cast(userCtx(), Target{Topic: e.topic}, "record", map[string]any{"value": 2, "note": "after"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "after")
	if !logs.waitFor(10*time.Second, func(s string) bool { return strings.Count(s, "larger than max_message_size") >= 2 }) {
		t.Fatalf("the two oversized messages were not both logged:\n%s", logs.String())
	}
	if _, err := c.Call(userCtx(), Target{Topic: e.topic}, "ping_conductor", nil); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}

// logWaiter is a log output a test can wait on.
type logWaiter struct {
	testkit.SyncBuffer
	wrote chan struct{}
}

func newLogWaiter() *logWaiter { return &logWaiter{wrote: make(chan struct{}, 1)} }

func (w *logWaiter) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor waits until the log so far satisfies ok, or timeout.
func (w *logWaiter) waitFor(timeout time.Duration, ok func(string) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !ok(w.String()) {
		select {
		case <-w.wrote:
		case <-deadline.C:
			return ok(w.String())
		}
	}
	return true
}

// BenchmarkOversizedBody measures what a 50 MB request costs the listener's
// connection with max_message_size at its default: the body streams through
// the scanner in the reader's 32 KiB buffer, so the bytes allocated per
// message (B/op) stay a few KiB, not 50 MB.
func BenchmarkOversizedBody(b *testing.B) {
	body := rawCall("ping_conductor", `{"payload": "`+strings.Repeat("x", 50<<20)+`"}`, "m-big", "reply_big", "")
	stream := bytes.Join(message(1, body, 128<<10), nil)
	lim := newBodyLimit(DefaultMaxMessageSize)
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		c := lim.wrap(&readConn{Reader: bytes.NewReader(stream)})
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
	}
}

// readConn is a net.Conn that reads from a Reader.
type readConn struct {
	net.Conn
	io.Reader
}

func (c *readConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }
