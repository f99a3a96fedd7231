package oslo

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestOrderedObjectErrorIsSticky: the first value that cannot be encoded
// stops the builder; bytes reports it, naming the member, whatever was
// added after it.
func TestOrderedObjectErrorIsSticky(t *testing.T) {
	var ob orderedObject
	ob.add("a", 1)
	ob.addPrefixed("_context_", "bad", func() {})
	ob.add("b", 2)
	if b, err := ob.bytes(); err == nil || !strings.Contains(err.Error(), `"_context_bad"`) {
		t.Fatalf("bytes = %s, %v; want the error of _context_bad", b, err)
	}
	if strings.Contains(string(ob.buf), `"b"`) {
		t.Fatalf("members were added after the error: %s", ob.buf)
	}
	if _, err := encodeReply("m", func() {}, nil, true); err == nil {
		t.Fatal("a reply whose result cannot be encoded was built")
	}
}

// TestMalformedReplyMembers: ending, _msg_id and _unique_id of the wrong
// type make a reply malformed on the fast path and the generic one alike,
// and the _msg_id is kept when it is itself well formed, so that the call
// can be failed.
func TestMalformedReplyMembers(t *testing.T) {
	for _, tc := range []struct {
		members string
		msgID   string
		bad     string
	}{
		{`"ending": "yes", "_msg_id": "m1", "_unique_id": "u"`, "m1", "ending is not a boolean"},
		{`"ending": true, "_msg_id": "m2", "_unique_id": 7`, "m2", "_unique_id is not a string"},
		{`"ending": true, "_msg_id": ["m3"], "_unique_id": "u"`, "", "_msg_id is not a string"},
		{`"ending": true, "_msg_id": "m4", "failure": 3`, "m4", "failure is not a string"},
		{`"ending": null, "_msg_id": "m5", "_unique_id": null`, "m5", ""},
	} {
		inner := `{"result": null, ` + tc.members + `}`
		env, err := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
		if err != nil {
			t.Fatal(err)
		}
		fast, fastErr := decodeReplyBody(env)
		msg, err := unwrapEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		generic, genErr := decodeReply(msg)
		for name, got := range map[string]struct {
			r   replyMessage
			err error
		}{"fast": {fast, fastErr}, "generic": {generic, genErr}} {
			if tc.bad == "" {
				if got.err != nil || got.r.Ending || got.r.UniqueID != "" {
					t.Errorf("%s %s: %+v %v, want a valid reply", name, tc.members, got.r, got.err)
				}
				continue
			}
			if got.err == nil || !strings.Contains(got.err.Error(), tc.bad) {
				t.Errorf("%s %s: error %v, want %q", name, tc.members, got.err, tc.bad)
			}
			if got.r.MsgID != tc.msgID {
				t.Errorf("%s %s: msg_id %q, want %q", name, tc.members, got.r.MsgID, tc.msgID)
			}
		}
	}
}

// TestMalformedReplyFailsTheCallAtOnce: a reply whose ending is not a
// boolean fails the call at once, with an error that says so, instead of
// leaving it to wait out its timeout.
func TestMalformedReplyFailsTheCallAtOnce(t *testing.T) {
	e := newEnv(t)
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	r := e.opts.Rabbit
	if err := ch.ExchangeDeclare(e.opts.ControlExchange, "topic", r.durable(), r.AMQPAutoDelete, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(e.topic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(e.topic, e.topic, e.opts.ControlExchange, false, nil); err != nil {
		t.Fatal(err)
	}
	requests, err := ch.Consume(e.topic, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The peer: answers the call with "ending": "yes".
	go func() {
		d, ok := <-requests
		if !ok {
			return
		}
		req, err := DecodeRequest(d.Body)
		if err != nil {
			t.Errorf("request: %v", err)
			return
		}
		inner := `{"result": 1, "failure": null, "ending": "yes", "_msg_id": "` + req.MsgID + `", "_unique_id": "` + uuidHex() + `"}`
		body, _ := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": inner})
		pch, err := e.raw.Channel()
		if err != nil {
			t.Errorf("channel: %v", err)
			return
		}
		defer pch.Close()
		if err := pch.PublishWithContext(context.Background(), "", req.ReplyQ, false, false,
			amqp.Publishing{ContentType: "application/json", Body: body}); err != nil {
			t.Errorf("reply: %v", err)
		}
	}()
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Call(ctx, Target{Topic: e.topic}, "echo", map[string]any{"value": 1}, CallOptions{Timeout: 60 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "ending is not a boolean") {
		t.Fatalf("call = %v, want the malformed reply's error", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the call failed after %s: it waited for its timeout", d)
	}
}
