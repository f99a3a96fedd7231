package rawamqp

import (
	"bytes"
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const brokerURL = "amqp://guest:guest@127.0.0.1:5672/"

// TestWirePartsAreOslosProperties: OsloWire sets every property oslo's
// rabbit driver sets, and each part sets only its own.
func TestWirePartsAreOslosProperties(t *testing.T) {
	all := withParts(amqp.Publishing{}, Options{OsloWire: true}.parts(), true)
	if all.DeliveryMode != amqp.Persistent || all.ContentType != "application/json" || all.ContentEncoding != "utf-8" ||
		all.Headers == nil || len(all.Headers) != 0 || all.Expiration != "60000" {
		t.Fatalf("oslo's wire: %+v", all)
	}
	if reply := withParts(amqp.Publishing{}, Options{OsloWire: true}.parts(), false); reply.Expiration != "" {
		t.Fatalf("a reply carries an expiration: %+v", reply)
	}
	if bare := withParts(amqp.Publishing{}, Options{}.parts(), true); bare.DeliveryMode != 0 || bare.ContentType != "" ||
		bare.Headers != nil || bare.Expiration != "" {
		t.Fatalf("bare: %+v", bare)
	}
	only := withParts(amqp.Publishing{}, Options{Parts: &WireParts{Expiration: true}}.parts(), true)
	if only.Expiration != "60000" || only.DeliveryMode != 0 || only.ContentType != "" {
		t.Fatalf("expiration alone: %+v", only)
	}
}

// startPair starts a server answering reply and its client, with
// publisher confirms; stop closes both (a benchmark's function runs once
// per b.N, so each run closes its own). noBroker (Fatalf or Skipf) says
// when RabbitMQ is not there.
func startPair(tb testing.TB, parts WireParts, reply []byte, noBroker func(string, ...any)) (c *Client, stop func()) {
	tb.Helper()
	o := Options{URL: brokerURL, Exchange: RandomName("bench_wire_"), Queue: RandomName("bench_wire_"), Confirm: true,
		Parts: &parts, ReplyBody: reply}
	srv, err := StartServer(o)
	if err != nil {
		noBroker("RabbitMQ at 127.0.0.1:5672 is required: %v", err)
		return nil, func() {}
	}
	if c, err = NewClient(o); err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	return c, func() { c.Close(); srv.Close() }
}

// TestPairAnswers: a call through the broker gets the server's reply body.
func TestPairAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs RabbitMQ")
	}
	c, stop := startPair(t, WireParts{Persistent: true, Properties: true, Expiration: true}, []byte("pong"), t.Fatalf)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Call(ctx, []byte("ping"))
	if err != nil || string(got) != "pong" {
		t.Fatalf("call: %q, %v", got, err)
	}
}

// BenchmarkWireParts measures what each of oslo's message properties, and
// the size of its bodies, costs a request/reply pair on the broker:
// 8 x GOMAXPROCS concurrent callers (16 on two CPUs), publisher confirms
// as oslo uses them. Compare the calls/s of the sub-benchmarks of one run.
//
//	go test ./test/bench/rawamqp -run '^$' -bench WireParts -benchtime 3s -count 3
func BenchmarkWireParts(b *testing.B) {
	small := make([]byte, 16)
	request, reply := bytes.Repeat([]byte("r"), 1500), bytes.Repeat([]byte("a"), 150) // oslo's ping request context, its reply
	for _, v := range []struct {
		name       string
		parts      WireParts
		req, reply []byte
	}{
		{"bare", WireParts{}, small, small},
		{"persistent", WireParts{Persistent: true}, small, small},
		{"properties", WireParts{Properties: true}, small, small},
		{"expiration", WireParts{Expiration: true}, small, small},
		{"oslo-bodies", WireParts{}, request, reply},
		{"oslo-all", WireParts{Persistent: true, Properties: true, Expiration: true}, request, reply},
	} {
		b.Run(v.name, func(b *testing.B) {
			c, stop := startPair(b, v.parts, v.reply, b.Skipf)
			defer stop()
			ctx := context.Background()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(ctx, v.req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
