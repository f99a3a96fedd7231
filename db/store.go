// Package db is the conductor's database layer: GORM models of Magnum's
// tables at alembic head b3e1cf4a2d5e and a Store with the semantics of
// Magnum's dbapi (magnum/db/sqlalchemy/api.py). Callers see api/objects
// types only; GORM types do not leave this package.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/migrations"
)

// Options are the [database] options the store honours (oslo.db names).
type Options struct {
	// Connection is [database]connection, an SQLAlchemy URL.
	Connection string
	// ConnectionParameters is connection_parameters: more URL parameters
	// ("a=1&b=2") appended to Connection's query.
	ConnectionParameters string
	// MaxPoolSize is max_pool_size (oslo.db default 5): idle connections kept.
	MaxPoolSize int
	// MaxOverflow is max_overflow (default 50): connections allowed above
	// the pool size. Open connections are capped at MaxPoolSize+MaxOverflow.
	MaxOverflow int
	// MaxRetries is max_retries (default 10; -1 retries forever): attempts
	// to reach the database at start-up, and retries of a transaction that
	// hit a deadlock.
	MaxRetries int
	// ConnectionRecycleTime is connection_recycle_time (default 3600 s).
	ConnectionRecycleTime time.Duration
	// RetryInterval is retry_interval (default 10 s) between start-up
	// connection attempts.
	RetryInterval time.Duration
	// MySQLEngine is mysql_engine (default InnoDB), used by migrations.
	MySQLEngine string
	// MySQLSQLMode is mysql_sql_mode: the session sql_mode. Nil means
	// oslo.db's default TRADITIONAL; "" keeps the server's mode.
	MySQLSQLMode *string
	// SkipSchemaCheck opens a database that is not at Head (for
	// magnum-db-manage). The conductor leaves it false.
	SkipSchemaCheck bool
	// ConnectTimeout bounds opening a MySQL connection (default 10 s,
	// PyMySQL's connect_timeout).
	ConnectTimeout time.Duration
	// IOTimeout bounds every read and write on a MySQL connection, so that
	// a database that stops answering (a network partition, a hung server)
	// fails the statement instead of holding the caller for the kernel's TCP
	// timeout. Zero leaves them unbounded (magnum-db-manage: a migration's
	// ALTER TABLE may take long).
	IOTimeout time.Duration
	// Now is the clock of created_at and updated_at (default time.Now;
	// tests that move time). Its value is stored in UTC, to the second.
	Now func() time.Time
}

// ErrStatusChanged is matched (errors.Is) by the error SaveClusterIfStatus
// and SaveNodeGroupIfStatus return when the row's status is no longer one of
// the allowed ones: another conductor got there first.
var ErrStatusChanged = errors.New("db: status changed concurrently")

// ErrSchemaVersion is matched by the error Open returns when the database is
// not at the alembic head this conductor needs.
var ErrSchemaVersion = errors.New("db: database schema is not at the required revision")

// Store is the conductor's access to Magnum's database. It is safe for
// concurrent use.
type Store struct {
	gdb        *gorm.DB
	sqlDB      *sql.DB
	dialect    string
	maxRetries int
	log        *slog.Logger
	now        func() time.Time
	plans      scanPlans
}

// Open connects to the database of opts.Connection with oslo.db's pool
// settings, waits for it up to MaxRetries×RetryInterval, and checks that
// its schema is at migrations.Head (run magnum-db-manage upgrade otherwise).
func Open(ctx context.Context, opts Options, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u, err := ParseURL(WithParameters(opts.Connection, opts.ConnectionParameters))
	if err != nil {
		return nil, err
	}
	if u.Dialect == "mysql" {
		mode := "TRADITIONAL"
		if opts.MySQLSQLMode != nil {
			mode = *opts.MySQLSQLMode
		}
		if u.DSN, err = withSQLMode(u.DSN, mode); err != nil {
			return nil, err
		}
	}
	opts = withDefaults(opts)
	var dialector gorm.Dialector
	if u.Dialect == "mysql" {
		cfg, err := mysql.ParseDSN(u.DSN)
		if err != nil {
			return nil, fmt.Errorf("db: %s: %w", u.Redacted, err)
		}
		// The driver's own messages (bad idle connections ...) go to our
		// logger instead of its package-global one on stderr.
		cfg.Logger = driverLogger{log}
		cfg.Timeout = opts.ConnectTimeout
		cfg.ReadTimeout, cfg.WriteTimeout = opts.IOTimeout, opts.IOTimeout
		cfg.TLS = u.TLS // not in the DSN, which has no form for it
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("db: %s: %w", u.Redacted, err)
		}
		dialector = gormmysql.New(gormmysql.Config{Conn: sql.OpenDB(connector), DefaultStringSize: 255,
			SkipInitializeWithVersion: true})
	} else {
		if err := sqliteDirReady(u); err != nil {
			return nil, fmt.Errorf("db: %s: %w", u.Redacted, err)
		}
		dialector = sqlite.Open(u.DSN)
	}
	clock := opts.Now
	if clock == nil {
		clock = time.Now
	}
	now := func() time.Time { return clock().UTC().Truncate(time.Second) }
	gdb, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		TranslateError:         true,
		DisableAutomaticPing:   true,
		NowFunc:                now,
	})
	if err != nil {
		return nil, fmt.Errorf("db: open %s: %w", u.Redacted, err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, fmt.Errorf("db: open %s: %w", u.Redacted, err)
	}
	if u.Dialect == "sqlite" && u.Memory {
		// Every connection must see the same in-memory database, and the
		// database lives as long as one connection stays open.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
	} else {
		if opts.MaxPoolSize > 0 {
			sqlDB.SetMaxIdleConns(opts.MaxPoolSize)
			sqlDB.SetMaxOpenConns(opts.MaxPoolSize + opts.MaxOverflow)
		} else {
			// max_pool_size = 0: no limit.
			sqlDB.SetMaxIdleConns(5)
			sqlDB.SetMaxOpenConns(0)
		}
		sqlDB.SetConnMaxLifetime(opts.ConnectionRecycleTime)
	}
	s := &Store{gdb: gdb, sqlDB: sqlDB, dialect: u.Dialect, maxRetries: opts.MaxRetries, log: log, now: now}
	if err := s.waitReachable(ctx, opts, u.Redacted); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	if !opts.SkipSchemaCheck {
		m, err := migrations.New(sqlDB, u.Dialect, opts.MySQLEngine, log)
		if err != nil {
			_ = sqlDB.Close()
			return nil, err
		}
		rev, err := m.Current(ctx)
		if err != nil {
			_ = sqlDB.Close()
			return nil, fmt.Errorf("db: read schema revision: %w", err)
		}
		if rev != migrations.Head {
			_ = sqlDB.Close()
			if rev == "" {
				rev = "None"
			}
			return nil, fmt.Errorf("%w: %s is at %s, this conductor needs %s; run `magnum-db-manage upgrade`",
				ErrSchemaVersion, u.Redacted, rev, migrations.Head)
		}
	}
	log.InfoContext(ctx, "database connected", "connection", u.Redacted, "dialect", u.Dialect)
	return s, nil
}

func withDefaults(o Options) Options {
	if o.MaxOverflow < 0 {
		o.MaxOverflow = 0
	}
	if o.ConnectionRecycleTime <= 0 {
		o.ConnectionRecycleTime = time.Hour
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 10 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	return o
}

func (s *Store) waitReachable(ctx context.Context, opts Options, redacted string) error {
	for attempt := 0; ; attempt++ {
		err := s.sqlDB.PingContext(ctx)
		if err == nil {
			return nil
		}
		if opts.MaxRetries >= 0 && attempt >= opts.MaxRetries {
			return fmt.Errorf("db: database %s unreachable after %d attempts: %w", redacted, attempt+1, err)
		}
		s.log.WarnContext(ctx, "database unreachable, retrying", "connection", redacted, "attempt", attempt+1,
			"retry_interval", opts.RetryInterval.String(), "error", err.Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("db: database %s unreachable: %w (last error: %v)", redacted, ctx.Err(), err) //nolint:errorlint // only the context's error is the cause callers test; the last error is there for the reader
		case <-time.After(opts.RetryInterval):
		}
	}
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.sqlDB.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("db: ping: %w", err)
	}
	return nil
}

// Dialect returns "mysql" or "sqlite".
func (s *Store) Dialect() string { return s.dialect }

// SQLDB returns the underlying pool, for migrations and tests.
func (s *Store) SQLDB() *sql.DB { return s.sqlDB }

// q quotes an identifier (already validated against the model's columns).
func (s *Store) q(col string) string {
	if s.dialect == "mysql" {
		return "`" + col + "`"
	}
	return `"` + col + `"`
}

// isDuplicate reports a unique-constraint violation.
func isDuplicate(err error) bool {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return true
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// isRetriable reports a deadlock or lock timeout (oslo.db DBDeadlock) or a
// busy SQLite database, which retrying the whole transaction resolves.
func isRetriable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

// retry runs fn, and again on deadlocks, as oslo.db's wrap_db_retry with
// retry_on_deadlock: up to max_retries more times (20 when unset), with an
// interval doubling from 100 ms up to 2 s.
//
// Inside a transaction (InTx) fn runs once: a deadlock rolled the whole
// transaction back, and InTx runs it again.
func (s *Store) retry(ctx context.Context, op string, fn func() error) error {
	if txOf(ctx) != nil {
		return s.wrap(op, fn())
	}
	limit := s.maxRetries
	if limit <= 0 {
		limit = 20
	}
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt >= limit || !isRetriable(err) {
			if err != nil {
				return s.wrap(op, err)
			}
			return nil
		}
		s.log.WarnContext(ctx, "database deadlock, retrying", "operation", op, "attempt", attempt+1, "error", err.Error())
		select {
		case <-ctx.Done():
			return s.wrap(op, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// wrap leaves Magnum exceptions alone and prefixes database errors with the
// operation, so that a lost database reads "db: <op>: <driver error>".
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ee *exception.Error
	if errors.As(err, &ee) || errors.Is(err, ErrStatusChanged) {
		return err
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		// What the driver says after mysql_io_timeout or when the server
		// drops the connection mid-statement.
		return fmt.Errorf("db: %s: the database connection was lost or did not answer in time: %w", op, err)
	}
	return fmt.Errorf("db: %s: %w", op, err)
}

// ctxDB returns a GORM session bound to ctx: the transaction ctx carries
// (InTx), else the pool.
func (s *Store) ctxDB(ctx context.Context) *gorm.DB {
	if tx := txOf(ctx); tx != nil {
		return tx
	}
	return s.gdb.WithContext(ctx)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// driverLogger hands go-sql-driver/mysql's messages to slog.
type driverLogger struct{ log *slog.Logger }

// Print implements mysql.Logger.
func (l driverLogger) Print(v ...any) {
	l.log.Warn("mysql driver", "message", strings.TrimSpace(fmt.Sprint(v...)))
}

// sqliteDirReady says plainly what SQLite reports as "unable to open
// database file: out of memory (14)": the file's directory is missing or
// not a directory.
func sqliteDirReady(u *URL) error {
	if u.Memory || u.Database == "" {
		return nil
	}
	dir := filepath.Dir(u.Database)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s of the SQLite database does not exist: create it, or set "+
			"[database]/connection (the default is a SQLite file under [DEFAULT]/state_path)", dir)
	case err != nil:
		return fmt.Errorf("the directory of the SQLite database: %w", err)
	case !st.IsDir():
		return fmt.Errorf("%s, where the SQLite database should be, is not a directory", dir)
	}
	return nil
}
