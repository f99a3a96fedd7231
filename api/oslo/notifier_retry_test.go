package oslo

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateBroker is a TCP front for the real broker that drops the first
// refuse connections as soon as they are accepted (refuse < 0: all of
// them) and relays the later ones to 127.0.0.1:5672.
type gateBroker struct {
	ln     net.Listener
	refuse int

	mu    sync.Mutex
	dials int
}

func newGateBroker(t *testing.T, refuse int) *gateBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateBroker{ln: ln, refuse: refuse}
	t.Cleanup(func() { _ = ln.Close() })
	go g.serve(t)
	return g
}

func (g *gateBroker) url() string { return "rabbit://guest:guest@" + g.ln.Addr().String() + "/" }

func (g *gateBroker) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dials
}

func (g *gateBroker) serve(t *testing.T) {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.dials++
		drop := g.refuse < 0 || g.dials <= g.refuse
		g.mu.Unlock()
		if drop {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", "127.0.0.1:5672")
		if err != nil {
			t.Errorf("relay: %v", err)
			_ = c.Close()
			continue
		}
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// TestLiveNotifierRetryAsOslo: [oslo_messaging_notifications] retry bounds
// how many times a notification is tried while the broker does not take
// it, as oslo's ensure(retry=N) does: N retries after the first try, each
// dial counting; -1 tries until the deadline.
func TestLiveNotifierRetryAsOslo(t *testing.T) {
	cases := []struct {
		name      string
		retry     int
		refuse    int
		deadline  time.Duration
		sent      bool
		wantDials int // exact; 0: at least 2
	}{
		{name: "retry 0, broker drops the first dial", retry: 0, refuse: 1, deadline: 10 * time.Second, wantDials: 1},
		{name: "retry 2, third dial gets through", retry: 2, refuse: 2, deadline: 10 * time.Second, sent: true, wantDials: 3},
		{name: "retry 1, broker drops five dials", retry: 1, refuse: 5, deadline: 10 * time.Second, wantDials: 2},
		{name: "retry -1 tries until the deadline", retry: -1, refuse: -1, deadline: 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			g := newGateBroker(t, tc.refuse)
			topic := "notif_" + uuidHex()[:8]
			e.opts.TransportURL = g.url()
			e.opts.Rabbit.RetryInterval = 20 * time.Millisecond
			e.opts.Rabbit.RetryBackoff = 0
			e.opts.Rabbit.KombuReconnectDelay = 0 // oslo waits it too between dials
			e.opts.Notifications.Driver = []string{"messagingv2"}
			e.opts.Notifications.Topics = []string{topic}
			e.opts.Notifications.Retry = tc.retry
			e.cleanups = append(e.cleanups, topic+".info")
			n, err := NewNotifier(e.opts, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			ctx, cancel := context.WithTimeout(userCtx(), tc.deadline)
			defer cancel()
			err = n.Notify(ctx, "INFO", "magnum.cluster.update", map[string]any{"outcome": "success"})
			if tc.sent != (err == nil) {
				t.Fatalf("Notify: %v (sent %v wanted)", err, tc.sent)
			}
			if err != nil {
				if tc.retry >= 0 && !strings.Contains(err.Error(), "tries") {
					t.Errorf("error does not say it gave up: %v", err)
				}
				if tc.retry < 0 && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("retry -1 ended with %v, want the deadline", err)
				}
			}
			if got := g.count(); tc.wantDials > 0 && got != tc.wantDials || tc.wantDials == 0 && got < 2 {
				t.Errorf("%d dials, want %d (0: at least 2)", got, tc.wantDials)
			}
			ch, err := e.raw.Channel()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			q, err := ch.QueueDeclarePassive(topic+".info", false, false, false, false, nil)
			switch {
			case tc.sent && (err != nil || q.Messages != 1):
				t.Errorf("queue %s: %+v %v, want 1 message", topic+".info", q, err)
			case !tc.sent && err == nil:
				t.Errorf("queue %s exists (%d messages) though nothing got through", topic+".info", q.Messages)
			}
		})
	}
}
