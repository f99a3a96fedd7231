package oslo

import (
	"bytes"
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestPublishedBodyIsTheBrokers is what lets the server hand a reply's
// buffer back to the pool as soon as publish returns: by then the broker
// has confirmed the whole message, so writing over the buffer cannot
// change what the caller receives. It fails if publish ever returns before
// the body is the broker's (an asynchronous write, a library that keeps the
// slice to send it later). Bodies span several frames (128 KiB frames).
func TestPublishedBodyIsTheBrokers(t *testing.T) {
	e := newEnv(t)
	u, err := ParseTransportURL(e.opts.TransportURL)
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(newDialer(u, e.opts.Rabbit, "test", testLogger(t)), testLogger(t))
	defer pub.close()
	ch, err := e.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q := "replybuf_" + uuidHex()[:12]
	e.cleanups = append(e.cleanups, q)
	if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var want [][]byte
	buf := make([]byte, 512<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		for j := range buf {
			buf[j] = byte('a' + i)
		}
		want = append(want, bytes.Clone(buf))
		if err := pub.publish(ctx, publishing{key: q, body: buf}); err != nil {
			t.Fatal(err)
		}
		// The next message's bytes go into the same buffer at once, as
		// the pool hands it to the next reply.
		for j := range buf {
			buf[j] = 'X'
		}
	}
	// Consume, not ConsumeWithContext: the latter's goroutine cancels the
	// consumer on this channel when ctx ends, racing the deferred
	// ch.Close for the channel's one reply slot; the broker, closing the
	// channel, answers only the close, and a Close that loses its close-ok
	// to the cancel waits for ever (it hung CI's api/oslo run twice).
	deliveries, err := ch.Consume(q, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var d amqp.Delivery
		select {
		case d = <-deliveries:
		case <-ctx.Done():
			t.Fatalf("message %d not delivered", i)
		}
		if !bytes.Equal(d.Body, want[i]) {
			t.Fatalf("message %d changed after publish returned (%d bytes, first %q)", i, len(d.Body), d.Body[:1])
		}
	}
}
