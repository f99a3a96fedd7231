package oslo

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkNoopCall measures round trips per second of a no-op call through
// our client and server, at 1 and 16 concurrent callers, beside raw
// amqp091-go request/reply on the same broker:
//
//   - raw: bare request/reply, no confirms, 20-byte bodies;
//   - raw+confirms: the same with a publisher confirm awaited per message;
//   - raw+oslowire: what oslo's wire format costs the broker (topic exchange,
//     the 1.5 KB enveloped request, persistent delivery, expiration,
//     confirms, mandatory reply, manual acks), without any Go-side JSON.
//
// Run: go test ./api/oslo -run '^$' -bench NoopCall -benchtime 3s -count 3
func BenchmarkNoopCall(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("oslo/callers=%d", callers), func(b *testing.B) { benchOslo(b, callers) })
		b.Run(fmt.Sprintf("raw/callers=%d", callers), func(b *testing.B) { benchRaw(b, callers, false) })
		b.Run(fmt.Sprintf("raw+confirms/callers=%d", callers), func(b *testing.B) { benchRaw(b, callers, true) })
		b.Run(fmt.Sprintf("raw+oslowire/callers=%d", callers), func(b *testing.B) { benchRawOsloWire(b, callers) })
	}
}

func runCallers(b *testing.B, callers int, call func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := call(); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

func benchOslo(b *testing.B, callers int) {
	opts := DefaultOptions()
	opts.TransportURL = brokerURL
	opts.ControlExchange = "bench_" + uuidHex()[:8]
	topic := "bench_" + uuidHex()[:8]
	d := NewDispatcher()
	if err := d.Handle("noop", Method(func(ctx context.Context, _ NoArgs) (any, error) { return nil, nil })); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	s, err := NewServer(opts, ServerOptions{}, Target{Topic: topic}, d, log)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	c, err := NewClient(opts, log)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
		cleanupBench(opts.ControlExchange, topic, topic+"."+s.Target().Server)
	}()
	ctx := userCtx()
	tgt := Target{Topic: topic}
	if _, err := c.Call(ctx, tgt, "noop", nil); err != nil {
		b.Fatal(err)
	}
	runCallers(b, callers, func() error {
		_, err := c.Call(ctx, tgt, "noop", nil)
		return err
	})
}

func cleanupBench(exchange string, queues ...string) {
	conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	for _, q := range queues {
		_, _ = ch.QueueDelete(q, false, false, false)
	}
	_ = ch.ExchangeDelete(exchange, false, false)
}

// benchRaw is the floor: a plain amqp091-go server and client; with
// confirms, both sides wait for the broker's publisher confirm of every
// message, as oslo.messaging does.
func benchRaw(b *testing.B, callers int, confirms bool) {
	q := "rawbench_" + uuidHex()[:8]
	sconn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		b.Fatal(err)
	}
	defer sconn.Close()
	sch, _ := sconn.Channel()
	if _, err := sch.QueueDeclare(q, false, true, false, false, nil); err != nil {
		b.Fatal(err)
	}
	reqs, _ := sch.Consume(q, "", false, false, false, false, nil)
	pubOf := func(conn *amqp.Connection) func(key string, m amqp.Publishing) error {
		var mu sync.Mutex
		var pool []*amqp.Channel
		return func(key string, m amqp.Publishing) error {
			mu.Lock()
			var ch *amqp.Channel
			if n := len(pool); n > 0 {
				ch, pool = pool[n-1], pool[:n-1]
			}
			mu.Unlock()
			if ch == nil {
				var err error
				if ch, err = conn.Channel(); err != nil {
					return err
				}
				if confirms {
					if err := ch.Confirm(false); err != nil {
						return err
					}
				}
			}
			dc, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", key, false, false, m)
			if err != nil {
				return err
			}
			if dc != nil {
				dc.Wait()
			}
			mu.Lock()
			pool = append(pool, ch)
			mu.Unlock()
			return nil
		}
	}
	spub := pubOf(sconn)
	go func() {
		for d := range reqs {
			_ = d.Ack(false)
			go func(d amqp.Delivery) {
				_ = spub(d.ReplyTo, amqp.Publishing{CorrelationId: d.CorrelationId, Body: []byte(`{"result": null}`)})
			}(d)
		}
	}()
	cconn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		b.Fatal(err)
	}
	defer cconn.Close()
	cch, _ := cconn.Channel()
	rq, err := cch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	replies, _ := cch.Consume(rq.Name, "", true, true, false, false, nil)
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	go func() {
		for d := range replies {
			mu.Lock()
			if w, ok := waiting[d.CorrelationId]; ok {
				close(w)
				delete(waiting, d.CorrelationId)
			}
			mu.Unlock()
		}
	}()
	var seq atomic.Int64
	cpub := pubOf(cconn)
	runCallers(b, callers, func() error {
		id := strconv.FormatInt(seq.Add(1), 10)
		w := make(chan struct{})
		mu.Lock()
		waiting[id] = w
		mu.Unlock()
		if err := cpub(q, amqp.Publishing{CorrelationId: id, ReplyTo: rq.Name, Body: []byte(`{"method": "noop"}`)}); err != nil {
			return err
		}
		select {
		case <-w:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("raw reply %s timed out", id)
		}
	})
}

// benchRawOsloWire is raw amqp091-go with oslo's wire costs: a topic
// exchange, the 1.5 KB enveloped request with 29 context keys, persistent
// delivery, expiration, confirms on both sides, a mandatory reply and
// manual acks; no JSON work in Go.
func benchRawOsloWire(b *testing.B, callers int) {
	exchange := "rawwire_" + uuidHex()[:8]
	q := exchange
	sconn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		b.Fatal(err)
	}
	defer sconn.Close()
	sch, _ := sconn.Channel()
	defer cleanupBench(exchange)
	if err := sch.ExchangeDeclare(exchange, "topic", false, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := sch.QueueDeclare(q, false, true, false, false, nil); err != nil {
		b.Fatal(err)
	}
	_ = sch.QueueBind(q, q, exchange, false, nil)
	reqs, _ := sch.Consume(q, "", false, false, false, false, nil)
	pool := func(conn *amqp.Connection) func(ex, key string, mandatory bool, m amqp.Publishing) error {
		var mu sync.Mutex
		var idle []*amqp.Channel
		return func(ex, key string, mandatory bool, m amqp.Publishing) error {
			mu.Lock()
			var ch *amqp.Channel
			if n := len(idle); n > 0 {
				ch, idle = idle[n-1], idle[:n-1]
			}
			mu.Unlock()
			if ch == nil {
				var err error
				if ch, err = conn.Channel(); err != nil {
					return err
				}
				_ = ch.Confirm(false)
			}
			m.DeliveryMode, m.ContentType, m.ContentEncoding, m.Headers = 2, "application/json", "utf-8", amqp.Table{}
			dc, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), ex, key, mandatory, false, m)
			if err != nil {
				return err
			}
			dc.Wait()
			mu.Lock()
			idle = append(idle, ch)
			mu.Unlock()
			return nil
		}
	}
	spub := pool(sconn)
	reply := []byte(`{"oslo.version": "2.0", "oslo.message": "{\"result\": null, \"failure\": null, \"ending\": true, \"_msg_id\": \"372baf9da21846bbad45c07fcf4a5412\", \"_unique_id\": \"4e18940eedef484c8c1880b69d498625\"}"}`)
	go func() {
		for d := range reqs {
			_ = d.Ack(false)
			go func(d amqp.Delivery) {
				_ = spub("", d.ReplyTo, true, amqp.Publishing{CorrelationId: d.CorrelationId, Body: reply})
			}(d)
		}
	}()
	cconn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		b.Fatal(err)
	}
	defer cconn.Close()
	cch, _ := cconn.Channel()
	rq, err := cch.QueueDeclare("reply_"+uuidHex(), false, false, false, false, amqp.Table{"x-expires": int32(1800000)})
	if err != nil {
		b.Fatal(err)
	}
	defer cleanupBench("", rq.Name)
	replies, _ := cch.Consume(rq.Name, "1", false, false, false, false, nil)
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	go func() {
		for d := range replies {
			_ = d.Ack(false)
			mu.Lock()
			if w, ok := waiting[d.CorrelationId]; ok {
				close(w)
				delete(waiting, d.CorrelationId)
			}
			mu.Unlock()
		}
	}()
	body, _ := encodeRequest(userCtx(), Target{Topic: q}, "noop", nil, uuidHex(), rq.Name, 0)
	var seq atomic.Int64
	cpub := pool(cconn)
	runCallers(b, callers, func() error {
		id := strconv.FormatInt(seq.Add(1), 10)
		w := make(chan struct{})
		mu.Lock()
		waiting[id] = w
		mu.Unlock()
		if err := cpub(exchange, q, false, amqp.Publishing{CorrelationId: id, ReplyTo: rq.Name, Expiration: "60000", Body: body}); err != nil {
			return err
		}
		select {
		case <-w:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("raw reply %s timed out", id)
		}
	})
}

// BenchmarkDecodeRequest decodes the recorded ping_conductor request of
// magnum-api (1.5 KB, 30 context keys), the server's per-request parsing.
func BenchmarkDecodeRequest(b *testing.B) {
	var body []byte
	for _, f := range loadFrames(b) {
		if f.File == "call_ping_request.json" {
			body = []byte(f.BodyRaw)
		}
	}
	if body == nil {
		b.Fatal("no recorded ping request")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeReply builds the reply to a ping (a result of true).
func BenchmarkEncodeReply(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildReply(nil, "372baf9da21846bbad45c07fcf4a5412", true, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeReply decodes the recorded reply to ping_conductor, the
// client's per-call parsing: the fast path, and the generic one it
// replaces for replies in oslo's layout.
func BenchmarkDecodeReply(b *testing.B) {
	var body []byte
	for _, f := range loadFrames(b) {
		if f.File == "call_ping_reply.json" {
			body = []byte(f.BodyRaw)
		}
	}
	if body == nil {
		b.Fatal("no recorded ping reply")
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r, err := decodeReplyBody(body); err != nil || r.MsgID == "" {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("generic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msg, err := unwrapEnvelope(body)
			if err != nil {
				b.Fatal(err)
			}
			if r, err := decodeReply(msg); err != nil || r.MsgID == "" {
				b.Fatal(r, err)
			}
		}
	})
}
