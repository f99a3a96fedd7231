package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/certmanager"
	"github.com/openstack/magnum-conductor/conductor"
	"github.com/openstack/magnum-conductor/conductor/indirection"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/internal/exepages"
	"github.com/openstack/magnum-conductor/internal/gurumeditation"
	"github.com/openstack/magnum-conductor/internal/oslolog"
	"github.com/openstack/magnum-conductor/internal/osloopts"
	"github.com/openstack/magnum-conductor/migrations"
	"github.com/openstack/magnum-conductor/periodic"
)

// driverCallTimeout bounds one driver call made by an RPC handler (casts
// have no deadline of their own). Drivers start long operations and return;
// completion is observed by sync_cluster_status.
const driverCallTimeout = 5 * time.Minute

// stopReserve is the part of shutdown_grace_period kept, after the RPC
// server's handlers, for the rest of the stop (at most a quarter of it);
// stopSlack is how long past the grace period a stop blocked in a close is
// let run before the process exits anyway.
const (
	stopReserve = 2 * time.Second
	stopSlack   = time.Second
)

// startupSettle is how long after it serves RPC the conductor returns its
// start-up garbage to the OS, and pages out its start-up code
// ([conductor] release_startup_pages).
const startupSettle = 15 * time.Second

// serve loads the configuration, starts every part of the conductor and
// blocks until ctx is cancelled (SIGTERM), then stops them in order.
func serve(ctx context.Context, st startup, logOut io.Writer) (err error) { //nolint:contextcheck // the stop sequence runs after ctx (SIGTERM) is done, on stopCtx
	// Armed at SIGTERM, disarmed by the last deferred call: a close that
	// blocks (below) cannot hold the process past the grace period.
	var watchdog *time.Timer
	defer func() {
		if watchdog != nil {
			watchdog.Stop()
		}
	}()
	files, dirs := st.files, st.dirs
	cfg, err := config.Load(files, dirs)
	if err != nil {
		return &startError{err}
	}
	st.logFlags.Apply(&cfg.Default)
	logging, err := openLogging(cfg, st.logFormat, logOut)
	if err != nil {
		return &startError{err}
	}
	defer func() { _ = logging.Close() }()
	log := logging.Logger
	defer func() {
		if err != nil && ctx.Err() != nil {
			// SIGTERM while it was still starting (waiting for the
			// broker or the database): a requested stop, not a failure.
			log.Info("magnum-conductor stopped before it finished starting", "interrupted", err)
			err = nil
			return
		}
		// The reason goes to the log file too, not only to stderr.
		if se := (*startError)(nil); errors.As(err, &se) {
			log.Error("magnum-conductor failed", "error", se.err)
		} else if err != nil {
			log.Error("magnum-conductor failed", "error", err)
		}
	}()
	for _, w := range logging.Warnings {
		log.Warn(w)
	}
	// Every goroutine that outlives this block is started through bg; bgCtx
	// ends them when serve returns early (a failed start) as at a stop, and
	// the last deferred wait gives them a moment to return.
	var bg background
	bgCtx, stopBG := context.WithCancel(ctx)
	defer func() { //nolint:contextcheck // runs as serve returns, when ctx may be done: the wait has a bound of its own
		stopBG()
		waitCtx, cancel := context.WithTimeout(context.Background(), stopSlack)
		defer cancel()
		if left := bg.wait(waitCtx); len(left) > 0 {
			log.Warn("background work still running as magnum-conductor returns", "tasks", left)
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	bg.Go("sighup", func() { reloadOnHangup(bgCtx, hup, st, logging, log) })
	bg.Go("gurumeditation", func() {
		gurumeditation.Report{Service: binaryName, Version: version(), Config: cfg}.Serve(bgCtx, gurumeditation.Options{
			LogDir: cfg.OsloReports.LogDir, FileEventHandler: cfg.OsloReports.FileEventHandler,
			FileEventHandlerInterval: cfg.OsloReports.FileEventHandlerInterval, Stderr: logOut,
		}, log.With("component", "gurumeditation"))
	})
	log.Info("starting magnum-conductor", "config_files", files, "config_dirs", dirs,
		"host", cfg.Default.Host, "topic", cfg.Conductor.Topic)
	log.Debug("configuration", "config", cfg)

	store, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return &startError{err}
	}
	defer store.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := periodic.NewMetrics(reg)
	if err != nil {
		return &startError{err}
	}

	certs, err := certmanager.New(certOptions(cfg), store, log.With("component", "certmanager"))
	if err != nil {
		return &startError{fmt.Errorf("certificate manager: %w", err)}
	}

	registry, err := buildDrivers(ctx, st, cfg, certs, store, log)
	if err != nil {
		return &startError{fmt.Errorf("drivers: %w", err)}
	}
	// The drivers' background work (the Cluster API driver's informers)
	// lives as long as the process.
	bg.Go("drivers", startDrivers(bgCtx, registry, log))

	osloOpts := osloopts.From(cfg)
	notifier, err := oslo.NewNotifier(osloOpts, log.With("component", "notifier"))
	if err != nil {
		return &startError{fmt.Errorf("notifier: %w", err)}
	}
	defer notifier.Close()
	events := conductor.NewNotifications(notifier, store, cfg.Audit.Namespace, log.With("component", "notifications"))

	// runCtx ends once the RPC server stopped (after the grace period).
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	handlers, err := conductor.New(conductor.Deps{
		Store: store, Certs: certs, Drivers: registry, Notifications: events,
		Log:           log.With("component", "handlers"),
		DriverTimeout: driverTimeout(cfg),
		Timeouts:      statusTimeouts(cfg),
		Lifetime:      runCtx,
	})
	if err != nil {
		return &startError{err}
	}
	disp, err := buildDispatcher(cfg, store, handlers, log)
	if err != nil {
		return &startError{err}
	}
	rpcMetrics, err := newRPCMetrics(reg)
	if err != nil {
		return &startError{err}
	}
	disp.Observe(rpcMetrics.observe)

	// The key pool and the client-file cache live as long as the process.
	bg.Go("certificate key pool", func() {
		if err := certs.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("certificate key pool stopped", "error", err)
		}
	})

	runner, err := buildPeriodic(cfg, store, registry, events, certs, handlers, metrics, log)
	if err != nil {
		return &startError{err}
	}

	server, err := oslo.NewServer(osloOpts, oslo.ServerOptions{GracePeriod: cfg.Conductor.ShutdownGracePeriod,
		TranslateError: translateError, RetryCast: retryCast},
		oslo.Target{Topic: cfg.Conductor.Topic}, disp, log.With("component", "rpc"))
	if err != nil {
		return &startError{fmt.Errorf("rpc server: %w", err)}
	}
	if err := server.Start(ctx); err != nil {
		return &startError{fmt.Errorf("rpc server: %w", err)}
	}
	log.Info("serving RPC", "topic", cfg.Conductor.Topic, "server", server.Target().Server,
		"exchange", cfg.Default.ControlExchange, "workers", cfg.Conductor.WorkerCount(),
		"rpc_pool", osloOpts.ExecutorThreadPoolSize,
		"drivers", registry.Names())

	bg.Go("periodic", func() { runner.Run(runCtx) })

	metricsSrv := startMetrics(ctx, &bg, cfg.Conductor.MetricsListen, reg, store, log)
	// Start-up (configuration, schema check, package initialisers, the key
	// pool's first RSA keys, the first periodic runs) leaves garbage that the
	// runtime would return to the OS only gradually, and pages of the binary
	// that only start-up used; once it has settled, an idle conductor should
	// not hold them.
	freeStartup := time.AfterFunc(startupSettle, func() {
		settleStartup(cfg.Conductor.ReleaseStartupPages, log)
	})
	defer freeStartup.Stop()

	<-ctx.Done()
	grace := cfg.Conductor.ShutdownGracePeriod
	log.Info("stopping magnum-conductor", "grace_period", grace.String())
	// The whole stop fits in the grace period: the RPC server's handlers get
	// it but for what the rest needs; a close that blocks past it (a broker
	// or database that does not answer) is cut short.
	stopCtx, cancelStop := context.WithTimeout(context.Background(), grace)
	defer cancelStop()
	watchdog = time.AfterFunc(grace+stopSlack, func() {
		log.Error("magnum-conductor did not stop within shutdown_grace_period; exiting now", "grace_period", grace.String())
		os.Exit(1)
	})
	rpcCtx, cancelRPC := context.WithTimeout(stopCtx, grace-min(grace/4, stopReserve))
	defer cancelRPC()
	if err := server.Stop(rpcCtx); err != nil { //nolint:contextcheck // ctx is done by now (SIGTERM): the stop has the grace period of its own
		log.Error("rpc server did not stop cleanly", "error", err)
	}
	cancelRun()
	stopBG()
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(stopCtx) //nolint:contextcheck // ctx is done by now (SIGTERM): the stop has the grace period of its own
	}
	if left := bg.wait(stopCtx); len(left) > 0 { //nolint:contextcheck // ctx is done by now (SIGTERM): the stop has the grace period of its own
		log.Warn("background work did not stop within the grace period", "tasks", left)
	}
	log.Info("magnum-conductor stopped")
	return nil
}

// settleStartup returns start-up's garbage to the OS and, when asked, the
// pages of the executable that only start-up touched (see package exepages).
func settleStartup(releasePages bool, log *slog.Logger) {
	debug.FreeOSMemory()
	if !releasePages {
		return
	}
	before := residentBytes()
	if _, err := exepages.Release(); err != nil {
		log.Warn("could not release the start-up pages of the executable", "error", err)
		return
	}
	log.Info("released the start-up pages of the executable",
		"rss_before_mib", before>>20, "rss_after_mib", residentBytes()>>20)
}

// residentBytes is the process's resident set size from /proc/self/statm,
// or 0 where that cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// openLogging sets up the log outputs oslo.log's options ask for.
func openLogging(cfg *config.Config, format string, stderr io.Writer) (*oslolog.Logging, error) {
	o := oslolog.FromConfig(cfg.Default, binaryName)
	o.Format, o.Stderr = format, stderr
	return oslolog.Open(o)
}

// reloadOnHangup serves SIGHUP as oslo.service does for the options that
// can change while running: the log file is reopened (after logrotate moved
// it) and the configuration read again; debug applies at once, the other
// options at the next start. Without this, SIGHUP would end the process.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, st startup, logging *oslolog.Logging, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if err := logging.Reopen(); err != nil {
			log.Error("SIGHUP: the log file could not be reopened", "error", err)
		}
		cfg, err := config.Load(st.files, st.dirs)
		if err != nil {
			log.Error("SIGHUP: the configuration was not reloaded; the running one stays", "error", err)
			continue
		}
		st.logFlags.Apply(&cfg.Default)
		logging.SetDebug(cfg.Default.Debug)
		log.Info("SIGHUP: log file reopened, configuration reread (debug applied; other changes take effect at the next start)",
			"debug", cfg.Default.Debug)
	}
}

// openDatabase opens [database]/connection. An SQLite database (the embedded
// default) is created and migrated on first start; a MySQL one must already
// be at the head revision (magnum-db-manage upgrade), as with Magnum.
func openDatabase(ctx context.Context, cfg *config.Config, log *slog.Logger) (*db.Store, error) {
	opts := db.Options{
		Connection:            cfg.Database.Connection,
		ConnectionParameters:  cfg.Database.ConnectionParameters,
		MaxPoolSize:           cfg.Database.MaxPoolSize,
		MaxOverflow:           cfg.Database.MaxOverflow,
		MaxRetries:            cfg.Database.MaxRetries,
		ConnectionRecycleTime: cfg.Database.ConnectionRecycleTime,
		RetryInterval:         cfg.Database.RetryInterval,
		MySQLEngine:           cfg.Database.MySQLEngine,
		MySQLSQLMode:          &cfg.Database.MySQLSQLMode,
		IOTimeout:             cfg.Database.MySQLIOTimeout,
	}
	u, err := db.ParseURL(cfg.Database.Connection)
	if err != nil {
		return nil, fmt.Errorf("[database]/connection: %w", err)
	}
	embedded := u.Dialect == migrations.SQLite
	opts.SkipSchemaCheck = embedded
	store, err := db.Open(ctx, opts, log.With("component", "db"))
	if err != nil {
		return nil, err // a schema behind head says to run magnum-db-manage upgrade
	}
	if embedded {
		m, err := migrations.New(store.SQLDB(), store.Dialect(), cfg.Database.MySQLEngine, log.With("component", "migrations"))
		if err == nil {
			err = m.Upgrade(ctx, "head")
		}
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("migrating the embedded database: %w", err)
		}
	}
	return store, nil
}

func startMetrics(ctx context.Context, bg *background, listen string, reg *prometheus.Registry, store *db.Store, log *slog.Logger) *http.Server {
	if listen == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		log.Error("metrics listener not started", "listen", listen, "error", err)
		return nil
	}
	log.Info("serving metrics", "listen", ln.Addr().String())
	bg.Go("metrics", func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err)
		}
	})
	return srv
}

func certOptions(cfg *config.Config) certmanager.Options {
	x := cfg.X509
	k := cfg.KeystoneAuth
	return certmanager.Options{
		CertManagerType: cfg.Certificates.CertManagerType,
		// The Barbican backend uses the service credentials of
		// [keystone_auth], as Magnum's admin client does.
		Barbican: certmanager.BarbicanOptions{
			AuthURL: k.AuthURL, Username: k.Username, UserID: k.UserID, Password: k.Password,
			UserDomainName: k.UserDomainName, UserDomainID: k.UserDomainID,
			ProjectName: k.ProjectName, ProjectID: k.ProjectID,
			ProjectDomainName: k.ProjectDomainName, ProjectDomainID: k.ProjectDomainID,
			RegionName: cfg.BarbicanClient.RegionName, EndpointType: cfg.BarbicanClient.EndpointType,
			Timeout: k.Timeout, CAFile: k.Cafile, Insecure: k.Insecure,
		},
		StoragePath:           cfg.Certificates.StoragePath,
		AllowCA:               x.AllowCA,
		AllowedExtensions:     x.AllowedExtensions,
		AllowedKeyUsage:       x.AllowedKeyUsage,
		TermOfValidity:        x.TermOfValidity,
		RSAKeySize:            x.RSAKeySize,
		AllowSystemMastersCSR: !x.RefuseSystemMastersCSR,
		TempCacheDir:          cfg.Cluster.TempCacheDir,
		KeyPoolSize:           x.KeyPoolSize,
	}
}

// buildDispatcher binds the conductor's RPC methods: Magnum's endpoint
// order, the indirection API first, then the handlers; and oslo's
// oslo_rpc_server_ping with [DEFAULT] rpc_ping_enabled.
func buildDispatcher(cfg *config.Config, store *db.Store, handlers *conductor.Handlers, log *slog.Logger) (*oslo.Dispatcher, error) {
	disp := oslo.NewDispatcher()
	if err := indirection.New(store, log.With("component", "indirection")).Register(disp); err != nil {
		return nil, err
	}
	if err := handlers.Register(disp); err != nil {
		return nil, err
	}
	if cfg.Default.RPCPingEnabled {
		if err := disp.HandlePing(); err != nil {
			return nil, err
		}
	}
	return disp, nil
}
