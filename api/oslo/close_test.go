package oslo

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// AMQP methods a freezeRelay can hold back: (class, method).
var (
	methodConnectionOpen  = [2]uint16{10, 40}
	methodConnectionClose = [2]uint16{10, 50}
	methodChannelClose    = [2]uint16{20, 40}
	methodBasicConsume    = [2]uint16{60, 20}
	methodBasicCancel     = [2]uint16{60, 30}
)

// freezeRelay is a TCP front for the real broker that relays both ways
// until the client sends one of the methods it freezes on. From then on
// nothing more of the client's reaches the broker (the relay reads and
// drops it), while the broker's frames still reach the client, and the
// relay adds heartbeats both ways, several a second: the broker keeps the
// connection up, and the client sees a broker that is alive and busy (its
// every frame moves amqp091-go's read deadline) but never answers. That
// is the case a wait bounded only by the socket's deadline never gets out
// of.
type freezeRelay struct {
	ln     net.Listener
	freeze map[[2]uint16]bool

	accepted chan *relayedConn // each connection, as it is accepted

	mu    sync.Mutex
	conns []*relayedConn
	socks []net.Conn
}

// relayedConn is one client connection through a freezeRelay.
type relayedConn struct {
	frozen     chan struct{} // closed when the client sent a frozen method
	clientGone chan struct{} // closed when the client closed its socket

	toClient sync.Mutex // whole frames to the client: the broker's and ours
}

func newFreezeRelay(t *testing.T, on ...[2]uint16) *freezeRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &freezeRelay{ln: ln, freeze: map[[2]uint16]bool{}, accepted: make(chan *relayedConn, 16)}
	for _, m := range on {
		r.freeze[m] = true
	}
	t.Cleanup(func() {
		_ = ln.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.socks {
			_ = c.Close()
		}
	})
	go r.serve(t)
	return r
}

func (r *freezeRelay) url() string { return "rabbit://guest:guest@" + r.ln.Addr().String() + "/" }

// relayed is the connections relayed so far.
func (r *freezeRelay) relayed() []*relayedConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*relayedConn(nil), r.conns...)
}

func (r *freezeRelay) serve(t *testing.T) {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		broker, err := net.Dial("tcp", "127.0.0.1:5672")
		if err != nil {
			t.Errorf("relay: %v", err)
			_ = client.Close()
			continue
		}
		rc := &relayedConn{frozen: make(chan struct{}), clientGone: make(chan struct{})}
		r.mu.Lock()
		r.conns = append(r.conns, rc)
		r.socks = append(r.socks, client, broker)
		r.mu.Unlock()
		select {
		case r.accepted <- rc:
		default: // nobody is counting
		}
		go rc.fromBroker(broker, client)
		go rc.fromClient(client, broker, r.freeze)
	}
}

var heartbeatFrame = []byte{8, 0, 0, 0, 0, 0, 0, frameEnd}

// readFrame reads one AMQP frame: type, channel, payload size, payload,
// frame end.
func readFrame(in *bufio.Reader) ([]byte, error) {
	var h [7]byte
	if _, err := io.ReadFull(in, h[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 7+int(binary.BigEndian.Uint32(h[3:]))+1)
	copy(frame, h[:])
	_, err := io.ReadFull(in, frame[7:])
	return frame, err
}

// fromBroker relays the broker's frames to the client.
func (rc *relayedConn) fromBroker(broker, client net.Conn) {
	defer func() { _ = client.Close() }()
	in := bufio.NewReader(broker)
	for {
		frame, err := readFrame(in)
		if err != nil {
			return
		}
		rc.toClient.Lock()
		_, err = client.Write(frame)
		rc.toClient.Unlock()
		if err != nil {
			return
		}
	}
}

// fromClient relays the client's frames to the broker until the first
// frozen method, and drops them after it.
func (rc *relayedConn) fromClient(client, broker net.Conn, freeze map[[2]uint16]bool) {
	defer func() { _ = broker.Close() }()
	defer close(rc.clientGone)
	in := bufio.NewReader(client)
	var protocolHeader [8]byte
	if _, err := io.ReadFull(in, protocolHeader[:]); err != nil {
		return
	}
	if _, err := broker.Write(protocolHeader[:]); err != nil {
		return
	}
	frozen := false
	for {
		frame, err := readFrame(in)
		if err != nil {
			return
		}
		if !frozen && frame[0] == frameTypeMethod && len(frame) >= 7+4+1 &&
			freeze[[2]uint16{binary.BigEndian.Uint16(frame[7:]), binary.BigEndian.Uint16(frame[9:])}] {
			frozen = true
			close(rc.frozen)
			go rc.heartbeats(broker, client)
		}
		if frozen {
			continue
		}
		if _, err := broker.Write(frame); err != nil {
			return
		}
	}
}

// heartbeats sends heartbeats both ways on a frozen connection (the only
// writer to the broker once frozen) until the client goes.
func (rc *relayedConn) heartbeats(broker, client net.Conn) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-rc.clientGone:
			return
		case <-tick.C:
			if _, err := broker.Write(heartbeatFrame); err != nil {
				return
			}
			rc.toClient.Lock()
			_, err := client.Write(heartbeatFrame)
			rc.toClient.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// closeBound is what the tests allow a close: closeTimeout plus slack for
// a loaded machine. Without a bound of their own the closes below would
// wait as long as the broker keeps heartbeating: for ever.
const closeBound = 15 * time.Second

// returnsWithin runs f and fails the test if it has not returned within
// closeBound (leaving it running: the test has failed).
func returnsWithin(t *testing.T, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	if !waitUntil(done, start.Add(closeBound)) {
		t.Fatalf("%s has not returned after %s", what, closeBound)
	}
	return time.Since(start)
}

// mustFreeze waits until every connection through r has sent one of the
// methods r freezes on: so the broker has indeed not been told.
func mustFreeze(t *testing.T, r *freezeRelay, want int) {
	t.Helper()
	conns := r.relayed()
	if len(conns) != want {
		t.Fatalf("%d connections relayed, want %d", len(conns), want)
	}
	for i, rc := range conns {
		if !waitUntil(rc.frozen, time.Now().Add(5*time.Second)) {
			t.Fatalf("connection %d never sent the method the relay holds back", i)
		}
	}
}

// relayOpts are e's options through r. The heartbeat timeout is the
// default, 60 s: amqp091-go then writes a heartbeat every 30 s, and that
// write, failing after a socket deadline, is what ends the waits when
// nothing else does.
func relayOpts(e *testEnv, r *freezeRelay) Options {
	opts := e.opts
	opts.TransportURL = r.url()
	return opts
}

// TestLiveCloseConnBoundedWhenBrokerNeverAnswers: closeConn returns
// within its bound though the broker, heartbeating, never gets our
// connection.close, and it closes the socket.
func TestLiveCloseConnBoundedWhenBrokerNeverAnswers(t *testing.T) {
	e := newEnv(t)
	r := newFreezeRelay(t, methodConnectionClose)
	opts := relayOpts(e, r)
	u, err := ParseTransportURL(opts.TransportURL)
	if err != nil {
		t.Fatal(err)
	}
	d := newDialer(u, opts.Rabbit, "close-test", testLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := d.dialOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := returnsWithin(t, "closeConn", func() { closeConn(conn) })
	mustFreeze(t, r, 1)
	t.Logf("closeConn returned after %s", took.Round(time.Millisecond))
	if !conn.IsClosed() {
		t.Error("the connection is not closed")
	}
	if !waitUntil(r.relayed()[0].clientGone, time.Now().Add(5*time.Second)) {
		t.Error("the socket is still open")
	}
}

// TestLiveDialBoundedWhenBrokerNeverOpens: a dial ends with its context
// (its deadline, or its cancellation) though the broker, busy, never gets
// our connection.open, and the socket is closed. (RabbitMQ itself drops a
// connection that has not opened after its handshake_timeout, 10 s: the
// bound asserted is below it.)
func TestLiveDialBoundedWhenBrokerNeverOpens(t *testing.T) {
	for _, cancelAtFreeze := range []bool{false, true} {
		name := "deadline"
		if cancelAtFreeze {
			name = "cancelled"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			r := newFreezeRelay(t, methodConnectionOpen)
			opts := relayOpts(e, r)
			u, err := ParseTransportURL(opts.TransportURL)
			if err != nil {
				t.Fatal(err)
			}
			d := newDialer(u, opts.Rabbit, "dial-test", testLogger(t))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			want := context.DeadlineExceeded
			if cancelAtFreeze {
				ctx, cancel = context.WithCancel(context.Background())
				want = context.Canceled
				go func() {
					select {
					case rc := <-r.accepted:
						select {
						case <-rc.frozen:
						case <-ctx.Done():
						}
					case <-ctx.Done():
					}
					cancel()
				}()
			}
			defer cancel()
			var conn *brokerConn
			took := returnsWithin(t, "dialOnce", func() { conn, _, err = d.dialOnce(ctx) })
			if err == nil {
				closeConn(conn)
				t.Fatal("the dial succeeded though the broker never got connection.open")
			}
			t.Logf("dialOnce failed after %s: %v", took.Round(time.Millisecond), err)
			if took > 5*time.Second {
				t.Errorf("the dial took %s", took)
			}
			if !errors.Is(err, want) {
				t.Errorf("the error does not say the context ended (%v): %v", want, err)
			}
			mustFreeze(t, r, 1)
			if !waitUntil(r.relayed()[0].clientGone, time.Now().Add(5*time.Second)) {
				t.Error("the socket of the failed dial is still open")
			}
		})
	}
}

// TestLiveClientCloseBoundedWhenBrokerNeverAnswers: Client.Close returns
// within its bound though the broker, heartbeating, never answers the
// closes of the reply consumer and the publisher, and the reply loop has
// ended.
func TestLiveClientCloseBoundedWhenBrokerNeverAnswers(t *testing.T) {
	e := newEnv(t)
	r := newFreezeRelay(t, methodConnectionClose, methodChannelClose)
	c, err := NewClient(relayOpts(e, r), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e.cleanups = append(e.cleanups, c.ReplyQueue())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.startReplies(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Cast(ctx, Target{Topic: e.topic}, "nothing", nil); err != nil {
		t.Fatal(err)
	}
	took := returnsWithin(t, "Client.Close", func() { _ = c.Close() })
	mustFreeze(t, r, 2) // the reply consumer's and the publisher's
	t.Logf("Client.Close returned after %s", took.Round(time.Millisecond))
	if !waitUntil(c.replyDone, time.Now().Add(5*time.Second)) {
		t.Error("the reply loop has not ended")
	}
	for i, rc := range r.relayed() {
		if !waitUntil(rc.clientGone, time.Now().Add(5*time.Second)) {
			t.Errorf("the socket of connection %d is still open", i)
		}
	}
}

// TestLiveNotifierCloseBoundedWhenBrokerNeverAnswers: Notifier.Close
// returns within its bound though the broker, heartbeating, never answers
// the close of its connection (or of a pooled channel).
func TestLiveNotifierCloseBoundedWhenBrokerNeverAnswers(t *testing.T) {
	e := newEnv(t)
	r := newFreezeRelay(t, methodConnectionClose, methodChannelClose)
	opts := relayOpts(e, r)
	topic := "closenotif_" + uuidHex()[:8]
	opts.Notifications.Driver = []string{"messagingv2"}
	opts.Notifications.Topics = []string{topic}
	e.cleanups = append(e.cleanups, topic+".info")
	n, err := NewNotifier(opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(userCtx(), 10*time.Second)
	defer cancel()
	if err := n.Notify(ctx, "INFO", "magnum.cluster.update", map[string]any{"outcome": "success"}); err != nil {
		t.Fatal(err)
	}
	took := returnsWithin(t, "Notifier.Close", func() { _ = n.Close() })
	mustFreeze(t, r, 1)
	t.Logf("Notifier.Close returned after %s", took.Round(time.Millisecond))
	if !waitUntil(r.relayed()[0].clientGone, time.Now().Add(5*time.Second)) {
		t.Error("the socket is still open")
	}
}

// TestLiveServerStopBoundedWhenBrokerNeverAnswers: Stop returns, and its
// listener lets go of the connection (its loop ends, the socket is
// closed), within their bounds though the broker, heartbeating, stops
// answering the listener: when it stops (from basic.cancel on: the
// consumers' cancels, the deletes, the closes are never answered), or
// while it sets up (from the first basic.consume on: it never consumes,
// Start fails, the server keeps waiting in the background until Stop).
func TestLiveServerStopBoundedWhenBrokerNeverAnswers(t *testing.T) {
	for _, c := range []struct {
		name     string
		freeze   [2]uint16
		consumes bool
	}{
		{"cancel", methodBasicCancel, true},
		{"consume", methodBasicConsume, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			r := newFreezeRelay(t, c.freeze)
			s, err := NewServer(relayOpts(e, r), ServerOptions{}, Target{Topic: e.topic}, NewDispatcher(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			e.cleanups = append(e.cleanups, e.topic+"."+s.Target().Server, s.fanoutQueue)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := s.Start(ctx); (err == nil) != c.consumes {
				t.Fatalf("Start: %v", err)
			}
			// Stop's own bound (its ctx) is above the listener's: it is
			// the listener's that must end the wait.
			stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Second)
			if !c.consumes {
				// A listener that never consumes has nothing to clean up:
				// it is let go of once Stop's ctx has ended.
				stopCtx, stopCancel = context.WithTimeout(context.Background(), 2*time.Second)
			}
			defer stopCancel()
			start := time.Now()
			took := returnsWithin(t, "Server.Stop", func() { _ = s.Stop(stopCtx) })
			if !waitUntil(s.loopDone, start.Add(closeBound)) {
				t.Fatalf("the listener's loop has not ended %s after Stop began", closeBound)
			}
			t.Logf("Stop returned after %s, the listener ended after %s", took.Round(time.Millisecond),
				time.Since(start).Round(time.Millisecond))
			mustFreeze(t, r, 1) // the listener's (nothing was replied) sent c.freeze
			if !waitUntil(r.relayed()[0].clientGone, time.Now().Add(5*time.Second)) {
				t.Error("the listener's socket is still open")
			}
		})
	}
}
