package oslo

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/openstack/magnum-conductor/tlschain"
)

// dialer opens AMQP connections to the brokers of a transport URL, failing
// over round-robin (oslo's kombu_failover_strategy default) and backing off
// as kombu does: rabbit_retry_interval, growing by rabbit_retry_backoff,
// capped at rabbit_interval_max.
type dialer struct {
	url     *TransportURL
	opts    RabbitOptions
	log     *slog.Logger
	purpose string // "listener", "publisher", "reply", for the connection name

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
		cfg.InsecureSkipVerify = true //nolint:gosec // oslo.messaging's behaviour
		return cfg, nil
	}
	pem, err := os.ReadFile(d.opts.SSLCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading ssl_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ssl_ca_file %s holds no certificate", d.opts.SSLCAFile)
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

// dialOnce tries the next broker once.
func (d *dialer) dialOnce() (*amqp.Connection, TransportHost, error) {
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
	scheme := "amqp"
	if tlsCfg != nil {
		scheme = "amqps"
	}
	heartbeat := d.opts.HeartbeatTimeoutThreshold
	if heartbeat < 0 {
		heartbeat = 0
	}
	cfg := amqp.Config{
		SASL:            d.opts.sasl(user, pass),
		Vhost:           d.url.vhost(),
		Heartbeat:       heartbeat,
		TLSClientConfig: tlsCfg,
		Locale:          "en_US",
		Properties: amqp.Table{
			"product":         "magnum-conductor",
			"connection_name": fmt.Sprintf("%s:%d:%s:%s", filepath.Base(os.Args[0]), os.Getpid(), d.purpose, uuidDashed()),
		},
		Dial: amqp.DefaultDial(30 * time.Second),
	}
	conn, err := amqp.DialConfig(scheme+"://"+h.Addr()+"/", cfg)
	if err != nil {
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
	return conn, h, nil
}

// backoff returns the wait before attempt n (0-based), as kombu's
// ensure_connection computes it, plus kombu_reconnect_delay after the first.
func (d *dialer) backoff(n int) time.Duration {
	w := d.opts.RetryInterval + time.Duration(n)*d.opts.RetryBackoff
	if w > d.opts.IntervalMax {
		w = d.opts.IntervalMax
	}
	return w
}

// connect dials until it succeeds or ctx ends.
func (d *dialer) connect(ctx context.Context) (*amqp.Connection, error) {
	return d.connectTries(ctx, 0)
}

// connectTries dials until it succeeds, ctx ends, or, when tries > 0,
// tries dials have failed (kombu's ensure_connection with max_retries =
// tries-1).
func (d *dialer) connectTries(ctx context.Context, tries int) (*amqp.Connection, error) {
	for n := 0; ; n++ {
		conn, h, err := d.dialOnce()
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
		wait := d.backoff(n)
		d.log.Error("AMQP server is unreachable, trying again", "broker", h.Addr(), "purpose", d.purpose,
			"error", err.Error(), "retry_in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("connecting to %s: %w (last error: %v)", d.url, ctx.Err(), err)
		case <-t.C:
		}
	}
}
