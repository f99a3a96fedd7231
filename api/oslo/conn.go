package oslo

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/internal/tlschain"
)

// dialer opens AMQP connections to the brokers of a transport URL, failing
// over round-robin (oslo's kombu_failover_strategy default) and backing off
// as oslo does (see retryWait), but never longer than
// reconnect_interval_max.
type dialer struct {
	url     *TransportURL
	opts    RabbitOptions
	log     *slog.Logger
	purpose string // "listener", "publisher", "reply", for the connection name
	// limit, when set, keeps message bodies larger than max_message_size
	// out of the connections of this dialer (the listener's).
	limit *bodyLimit

	mu      sync.Mutex
	next    int
	lastErr error // the last failed dial, until a dial succeeds
}

// lastError is why the last dial failed, or nil after a success.
func (d *dialer) lastError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

func (d *dialer) setLastError(err error) {
	d.mu.Lock()
	d.lastErr = err
	d.mu.Unlock()
}

func newDialer(u *TransportURL, opts RabbitOptions, purpose string, log *slog.Logger) *dialer {
	d := &dialer{url: u, opts: opts, log: log, purpose: purpose}
	if len(u.Hosts) > 1 {
		// oslo shuffles the hosts once (random.shuffle(url.hosts)).
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(u.Hosts))))
		d.next = int(n.Int64())
	}
	return d
}

func uuidHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return hex.EncodeToString(b[:])
}

func uuidDashed() string {
	h := uuidHex()
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (d *dialer) tlsConfig(host string) (*tls.Config, error) {
	if !d.opts.SSL && d.url.Query["ssl"] != "1" && d.url.Query["ssl"] != "true" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch strings.ToLower(d.opts.SSLVersion) {
	case "", "sslv23", "tls":
	case "tlsv1":
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS10
	case "tlsv1_1":
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS11, tls.VersionTLS11
	case "tlsv1_2":
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	case "tlsv1_3":
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	default:
		return nil, fmt.Errorf("invalid SSL version: %s", d.opts.SSLVersion)
	}
	if d.opts.SSLCertFile != "" || d.opts.SSLKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(d.opts.SSLCertFile, d.opts.SSLKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading ssl_cert_file/ssl_key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if d.opts.SSLCAFile == "" {
		// oslo: ssl without a CA file does not verify the broker.
		cfg.InsecureSkipVerify = true // oslo.messaging's behaviour
		return cfg, nil
	}
	pool, err := tlschain.LoadCAFile(d.opts.SSLCAFile)
	if err != nil {
		return nil, fmt.Errorf("ssl_ca_file: %w", err)
	}
	cfg.RootCAs = pool
	if d.opts.SSLEnforceHostnameVerification {
		cfg.ServerName = host
		return cfg, nil
	}
	// Verify the chain but not the host name, as oslo does by default.
	tlschain.WithoutHostname(cfg, pool)
	return cfg, nil
}

// nextHost is the broker of the next dial: the next one in turn
// (round-robin), or one drawn at random (kombu_failover_strategy shuffle).
func (d *dialer) nextHost() TransportHost {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.opts.FailoverShuffle && len(d.url.Hosts) > 1 {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(d.url.Hosts))))
		return d.url.Hosts[n.Int64()]
	}
	h := d.url.Hosts[d.next%len(d.url.Hosts)]
	d.next++
	return h
}

// dialTimeout bounds one dial: TCP connect, TLS and AMQP handshakes.
const dialTimeout = 30 * time.Second

// brokerConn is an AMQP connection and the TCP socket under it, which
// closeConn closes when the broker does not answer the close in time.
type brokerConn struct {
	*amqp.Connection
	sock      net.Conn
	closeOnce sync.Once
}

// dialOnce tries the next broker once, within dialTimeout or until ctx
// ends if sooner.
func (d *dialer) dialOnce(ctx context.Context) (*brokerConn, TransportHost, error) {
	h := d.nextHost()

	user, pass := h.Username, h.Password
	if user == "" {
		user = "guest"
	}
	if pass == "" && h.Username == "" {
		pass = "guest"
	}
	tlsCfg, err := d.tlsConfig(h.Hostname)
	if err != nil {
		return nil, h, err
	}
	heartbeat := d.opts.HeartbeatTimeoutThreshold
	if heartbeat < 0 {
		heartbeat = 0
	}
	cfg := amqp.Config{
		SASL:      d.opts.sasl(user, pass),
		Vhost:     d.url.vhost(),
		Heartbeat: heartbeat,
		Locale:    "en_US",
		Properties: amqp.Table{
			"product":         "magnum-conductor",
			"connection_name": fmt.Sprintf("%s:%d:%s:%s", filepath.Base(os.Args[0]), os.Getpid(), d.purpose, uuidDashed()),
		},
	}

	// The socket's deadline that netDial sets does not bound the AMQP
	// handshake: from connection.tune on, amqp091-go's heartbeater moves
	// the read deadline at every frame the broker sends, so a broker that
	// heartbeats but never answers connection.open would hold the dial
	// until our next heartbeat fails (up to half the heartbeat timeout
	// later), and a cancelled ctx would not end it at all. So the socket
	// is closed when ctx (within dialTimeout) ends before the dial does,
	// which ends amqp091-go's reads and writes at once.
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var mu sync.Mutex
	var sock net.Conn // once netDial has returned it
	closeSock := func() {
		mu.Lock()
		defer mu.Unlock()
		if sock != nil {
			_ = sock.Close()
		}
	}
	// TLS is set up here, under the byte stream the AMQP library reads, so
	// that the body limit sees frames, not ciphertext.
	cfg.Dial = func(network, addr string) (net.Conn, error) {
		c, s, err := d.netDial(ctx, network, addr, tlsCfg)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if err := ctx.Err(); err != nil { // closeSock has run already
			_ = s.Close()
			return nil, err
		}
		sock = s
		return c, nil
	}
	stop := context.AfterFunc(ctx, closeSock)
	conn, err := amqp.DialConfig("amqp://"+h.Addr()+"/", cfg)
	if !stop() || err != nil {
		// A failed handshake may leave the library's reader and
		// heartbeater on an open socket: closing it ends them.
		closeSock()
		if ctxErr := ctx.Err(); ctxErr != nil {
			// err may be the library's guess at why the socket closed
			// under it (a refused vhost, say): the cause is ctx.
			return nil, h, fmt.Errorf("dialing %s: %w", h.Addr(), ctxErr)
		}
		return nil, h, err
	}
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	go func() {
		for b := range blocked {
			if b.Active {
				d.log.Error("the broker has blocked the connection", "reason", b.Reason, "broker", h.Addr(), "purpose", d.purpose)
			} else {
				d.log.Info("the broker has unblocked the connection", "broker", h.Addr(), "purpose", d.purpose)
			}
		}
	}()
	return &brokerConn{Connection: conn, sock: sock}, h, nil
}

// netDial opens the byte stream of one AMQP connection: TCP within ctx,
// a deadline for the handshakes (the AMQP library clears it once the
// connection is open), TLS when configured, and the body limit of a
// listener. It returns that stream and the TCP socket under it. ctx has
// a deadline.
func (d *dialer) netDial(ctx context.Context, network, addr string, tlsCfg *tls.Config) (conn, sock net.Conn, err error) {
	deadline, _ := ctx.Deadline()
	nd := net.Dialer{Deadline: deadline}
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	sock = c
	if err := c.SetDeadline(deadline); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	if tlsCfg != nil {
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		c = tc
	}
	if d.limit != nil {
		c = d.limit.wrap(c)
	}
	return c, sock, nil
}

// retryWait is the wait after the n-th failed dial (from 0) as oslo
// computes it from its options (kombu's interval from
// rabbit_retry_interval growing by rabbit_retry_backoff up to
// rabbit_interval_max, plus kombu_reconnect_delay), capped at
// reconnect_interval_max, plus a random share of kombu_reconnect_splay.
func (d *dialer) retryWait(n int) time.Duration {
	w := d.opts.RetryInterval + time.Duration(n)*d.opts.RetryBackoff
	if w > d.opts.IntervalMax {
		w = d.opts.IntervalMax
	}
	w += d.opts.KombuReconnectDelay
	if c := d.opts.ReconnectIntervalMax; c > 0 && w > c {
		w = c
	}
	if d.opts.KombuReconnectSplay > 0 {
		w += mrand.N(d.opts.KombuReconnectSplay) //nolint:gosec // reconnect splay, not a secret
	}
	return w
}

// connect dials until it succeeds or ctx ends.
func (d *dialer) connect(ctx context.Context) (*brokerConn, error) {
	return d.connectTries(ctx, 0)
}

// connectTries dials until it succeeds, ctx ends, or, when tries > 0,
// tries dials have failed (kombu's ensure_connection with max_retries =
// tries-1).
func (d *dialer) connectTries(ctx context.Context, tries int) (*brokerConn, error) {
	for n := 0; ; n++ {
		conn, h, err := d.dialOnce(ctx)
		d.setLastError(err)
		if err == nil {
			if n > 0 {
				d.log.Info("reconnected to AMQP server", "broker", h.Addr(), "purpose", d.purpose, "attempts", n+1)
			}
			return conn, nil
		}
		if tries > 0 && n+1 >= tries {
			// The caller, which bounded the dials, logs and decides.
			return nil, fmt.Errorf("connecting to %s: unreachable after %d tries: %w", d.url, n+1, err)
		}
		wait := d.retryWait(n)
		d.log.Error("AMQP server is unreachable, trying again", "broker", h.Addr(), "purpose", d.purpose,
			"error", err.Error(), "retry_in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("connecting to %s: %w (last error: %v)", d.url, ctx.Err(), err) //nolint:errorlint // only the context's error is the cause callers test; the last error is there for the reader
		case <-t.C:
		}
	}
}

// Reachable dials each broker of opts' transport URL once, in turn, until
// one accepts the AMQP login, and closes that connection. It is how a
// command line tool fails at once, saying why, when no broker can be
// reached, instead of waiting for its call's timeout (calls and casts
// retry until then, as oslo's do).
func Reachable(ctx context.Context, opts Options) error {
	opts = opts.withDefaults()
	u, err := ParseTransportURL(opts.TransportURL)
	if err != nil {
		return err
	}
	d := newDialer(u, opts.Rabbit, "probe", slog.New(slog.DiscardHandler))
	var errs []string
	for range u.Hosts {
		conn, h, err := d.dialOnce(ctx)
		if err == nil {
			closeConn(conn)
			return nil
		}
		errs = append(errs, h.Addr()+": "+err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("no broker of %s can be reached: %s", u, strings.Join(errs, "; "))
}

// closeTimeout bounds the closing handshake of a connection (our
// connection.close, the broker's close-ok): a broker that does not answer
// (a half-open TCP connection, a node stalled by an alarm) must not hold
// a listener's loop, Stop, or the publisher's lock for ever, as
// amqp091-go's Close, which waits for close-ok without a deadline, would.
const closeTimeout = 5 * time.Second

// closeWait bounds a Close: closeConn's bound, and as long again as
// cancelWait for the goroutines that held the connection to see it closed.
const closeWait = closeTimeout + 2*cancelWait

// closeConn closes conn within closeTimeout (and cancelWait for the
// library to see it): it asks the broker to close, and closes the socket
// if the broker has not answered by then. amqp091-go's CloseDeadline does
// not bound this on its own: it sets the socket's deadline, but its
// heartbeater moves the read deadline at every frame the broker sends, so
// a broker that stays busy or heartbeats but never answers the close
// holds it until our next heartbeat fails (up to half the heartbeat
// timeout later). Closing the socket ends the library's reads and
// writes, and so its goroutines and the calls waiting on the connection's
// channels. Calls after the first wait for it to end.
func closeConn(conn *brokerConn) {
	conn.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = conn.CloseDeadline(time.Now().Add(closeTimeout))
		}()
		if !waitUntil(done, time.Now().Add(closeTimeout)) {
			_ = conn.sock.Close()
			waitUntil(done, time.Now().Add(cancelWait))
		}
	})
}
