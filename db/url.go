package db

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/internal/pyurl"
	"github.com/openstack/magnum-conductor/internal/tlschain"
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
	// TLS is the MySQL connection's TLS configuration from the URL's ssl_*
	// parameters; nil for a plain connection.
	TLS *tls.Config
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
	bare, user, _, hasUser, _ := splitUserinfo(raw)
	if !hasUser {
		return bare
	}
	scheme, rest, _ := strings.Cut(bare, "://")
	return scheme + "://" + user + ":xxxxx@" + rest
}

// splitUserinfo takes the user and password out of a connection URL as
// SQLAlchemy's make_url reads them: after "scheme://", a user without ':'
// or '/', then optionally ':' and a password up to the first '@'. Both are
// percent-decoded as Python's urllib.parse.unquote does, which leaves an
// invalid escape as it is. bare is the URL without them, so that what
// net/url says of the rest (it rejects characters SQLAlchemy accepts in a
// password, and quotes what it rejects) never holds the password. hasPass
// tells whether a password (even an empty one) was written.
func splitUserinfo(raw string) (bare, user, pass string, hasUser, hasPass bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, "", "", false, false
	}
	at := strings.IndexByte(rest, '@')
	if at < 0 {
		return raw, "", "", false, false
	}
	cred := rest[:at]
	u, p, hasPass := strings.Cut(cred, ":")
	if strings.ContainsRune(u, '/') {
		return raw, "", "", false, false // the '@' is in the path or the query
	}
	return scheme + "://" + rest[at+1:], pyurl.Unquote(u), pyurl.Unquote(p), true, hasPass
}

func parseMySQL(raw string) (*URL, error) {
	bare, user, pass, hasUser, hasPass := splitUserinfo(raw)
	u, err := url.Parse(bare) // no password in it, nor in its errors
	if err != nil {
		return nil, fmt.Errorf("db: parse connection URL: %w", err)
	}
	cfg := mysql.NewConfig()
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// Affected rows count matched rows, so that a conditional UPDATE that
	// writes identical values still reports success.
	cfg.ClientFoundRows = true
	cfg.Params = map[string]string{}
	if hasUser {
		cfg.User, cfg.Passwd = user, pass
		u.User = url.User(user) // for Redacted below
		if hasPass {
			u.User = url.UserPassword(user, pass)
		}
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
	tlsCfg, err := mysqlTLS(q, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("db: connection URL %s: %w", u.Redacted(), err)
	}
	return &URL{Dialect: "mysql", DSN: cfg.FormatDSN(), Database: cfg.DBName, Redacted: u.Redacted(), TLS: tlsCfg}, nil
}

// mysqlTLS is the TLS of a connection URL's ssl_* parameters, as SQLAlchemy
// hands them to PyMySQL (ssl_ca, ssl_capath, ssl_cert, ssl_key,
// ssl_check_hostname; ssl_cipher names OpenSSL ciphers and is left to Go's
// choice) and as PyMySQL applies them: any of them turns TLS on; without a
// CA the server's certificate is not verified; with one it is, and so is its
// host name unless ssl_check_hostname is false.
func mysqlTLS(q url.Values, host string) (*tls.Config, error) {
	ca, capath, cert, key := q.Get("ssl_ca"), q.Get("ssl_capath"), q.Get("ssl_cert"), q.Get("ssl_key")
	_, hasCheck := q["ssl_check_hostname"]
	if ca == "" && capath == "" && cert == "" && key == "" && !hasCheck && !q.Has("ssl_cipher") {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != "" {
		if key == "" {
			key = cert // PyMySQL's load_cert_chain: the key in the certificate's file
		}
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("ssl_cert/ssl_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	if ca == "" && capath == "" {
		cfg.InsecureSkipVerify = true // PyMySQL: no CA, no verification
		return cfg, nil
	}
	roots, err := mysqlRoots(ca, capath)
	if err != nil {
		return nil, err
	}
	checkHost := true
	if hasCheck {
		if checkHost, err = pyBool(q.Get("ssl_check_hostname")); err != nil {
			return nil, fmt.Errorf("ssl_check_hostname: %w", err)
		}
	}
	if !checkHost {
		tlschain.WithoutHostname(cfg, roots)
		return cfg, nil
	}
	cfg.RootCAs, cfg.ServerName = roots, host
	return cfg, nil
}

// mysqlRoots reads the CA certificates of ssl_ca (a PEM file) and ssl_capath
// (a directory of PEM files, every one that holds certificates).
func mysqlRoots(ca, capath string) (*x509.CertPool, error) {
	roots := x509.NewCertPool()
	found := false
	if ca != "" {
		if err := tlschain.AppendCAFile(roots, ca); err != nil {
			return nil, fmt.Errorf("ssl_ca: %w", err)
		}
		found = true
	}
	if capath != "" {
		entries, err := os.ReadDir(capath)
		if err != nil {
			return nil, fmt.Errorf("ssl_capath: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if tlschain.AppendCAFile(roots, filepath.Join(capath, e.Name())) == nil {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("ssl_capath %s holds no certificate", capath)
		}
	}
	return roots, nil
}

// pyBool is SQLAlchemy's asbool on a URL parameter.
func pyBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "y", "t", "1":
		return true, nil
	case "false", "no", "off", "n", "f", "0":
		return false, nil
	}
	return false, fmt.Errorf("string is not a boolean: %q", s)
}

// WithParameters appends [database] connection_parameters
// ("param1=value1&param2=value2") to a connection URL's query, as oslo.db
// does at connect time.
func WithParameters(connection, params string) string {
	params = strings.TrimLeft(params, "?&")
	if params == "" {
		return connection
	}
	if strings.Contains(connection, "?") {
		return connection + "&" + params
	}
	return connection + "?" + params
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
