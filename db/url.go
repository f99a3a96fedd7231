package db

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// URL is a parsed [database]connection.
type URL struct {
	// Dialect is "mysql" or "sqlite".
	Dialect string
	// DSN is what the Go driver opens: a go-sql-driver/mysql DSN, or a
	// glebarez/go-sqlite file name with its pragmas.
	DSN string
	// Database is the MySQL schema name, or the SQLite file path ("" for
	// an in-memory database).
	Database string
	// Memory is true for an in-memory SQLite database.
	Memory bool
	// Redacted is the URL with its password replaced, for log lines.
	Redacted string
}

// ParseURL parses the SQLAlchemy URLs operators write in magnum.conf:
//
//	mysql+pymysql://user:pass@host:port/db?charset=utf8
//	mysql://user:pass@host/db?unix_socket=/run/mysqld/mysqld.sock
//	sqlite:///relative.db   sqlite:////absolute.db   sqlite://   sqlite:///:memory:
//
// Any mysql+<driver> is accepted: the Go driver replaces the Python one.
func ParseURL(raw string) (*URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("db: connection %q is not a URL (expected mysql+pymysql://… or sqlite:///…)", redact(raw))
	}
	backend, _, _ := strings.Cut(strings.ToLower(scheme), "+")
	switch backend {
	case "mysql", "mariadb":
		return parseMySQL(raw)
	case "sqlite":
		return parseSQLite(rest)
	default:
		return nil, fmt.Errorf("db: unsupported database backend %q in [database]connection (supported: mysql, sqlite)", scheme)
	}
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

func parseMySQL(raw string) (*URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("db: parse connection URL %s: %w", redact(raw), err)
	}
	cfg := mysql.NewConfig()
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// Affected rows count matched rows, so that a conditional UPDATE that
	// writes identical values still reports success.
	cfg.ClientFoundRows = true
	cfg.Params = map[string]string{}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	if sock := q.Get("unix_socket"); sock != "" {
		cfg.Net = "unix"
		cfg.Addr = sock
	} else {
		cfg.Net = "tcp"
		host := u.Hostname()
		if host == "" {
			host = "localhost"
		}
		port := u.Port()
		if port == "" {
			port = "3306"
		}
		cfg.Addr = net.JoinHostPort(host, port)
	}
	cs := q.Get("charset")
	if cs != "" {
		cfg.Params["charset"] = cs
	}
	// Arguments are written into the statement, one round trip per query
	// instead of prepare, execute and close, as PyMySQL does for
	// SQLAlchemy. Only for character sets where an escaped quote cannot
	// be taken for the tail of a multi-byte character.
	switch strings.ToLower(cs) {
	case "", "utf8", "utf8mb3", "utf8mb4", "latin1", "ascii":
		cfg.InterpolateParams = true
	}
	return &URL{Dialect: "mysql", DSN: cfg.FormatDSN(), Database: cfg.DBName, Redacted: u.Redacted()}, nil
}

func parseSQLite(rest string) (*URL, error) {
	// SQLAlchemy: sqlite:// is memory; sqlite:///x is the relative path x;
	// sqlite:////x is the absolute path /x. Query parameters are dropped.
	path, _, _ := strings.Cut(rest, "?")
	if path != "" {
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("db: sqlite URL must be sqlite:///<path> (got sqlite://%s)", rest)
		}
		path = path[1:]
	}
	if path == "" || path == ":memory:" {
		// A named in-memory database shared by the store's connections and
		// by no other store.
		var b [8]byte
		_, _ = rand.Read(b[:])
		return &URL{Dialect: "sqlite", DSN: "file:magnum-" + hex.EncodeToString(b[:]) + "?mode=memory&cache=shared" +
			sqlitePragmas("&"), Memory: true, Redacted: "sqlite://"}, nil
	}
	return &URL{Dialect: "sqlite", DSN: "file:" + path + "?" + strings.TrimPrefix(sqlitePragmas("&"), "&"),
		Database: path, Redacted: "sqlite:///" + path}, nil
}

// sqlitePragmas makes SQLite safe for concurrent goroutines: WAL, a busy
// timeout instead of immediate SQLITE_BUSY, and write transactions that take
// the write lock when they begin (no lock upgrade deadlocks).
func sqlitePragmas(sep string) string {
	return sep + "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=foreign_keys(0)&_txlock=immediate&_time_format=sqlite"
}

// withSQLMode sets the session sql_mode of a MySQL DSN, as oslo.db does on
// every new connection ("" leaves the server's mode).
func withSQLMode(dsn, mode string) (string, error) {
	if mode == "" {
		return dsn, nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("db: mysql DSN: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = "'" + strings.ReplaceAll(mode, "'", "") + "'"
	return cfg.FormatDSN(), nil
}
