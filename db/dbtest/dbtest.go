// Package dbtest gives tests a fresh database of their own: a MariaDB/MySQL
// schema magnum_test_<random> on the test server (dropped at cleanup), or
// an SQLite file in the test's temporary directory. It never skips: a test
// server that does not answer fails the test with a message saying so.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

// EnvMySQLAddr overrides the MariaDB address (default 127.0.0.1:3306).
const EnvMySQLAddr = "MAGNUM_TEST_MYSQL_ADDR"

// MySQLAddr is the test server's host:port.
func MySQLAddr() string {
	if a := os.Getenv(EnvMySQLAddr); a != "" {
		return a
	}
	return "127.0.0.1:3306"
}

// Admin opens a root connection to the test server (no database), failing
// the test when the server is down.
func Admin(t testing.TB) *sql.DB {
	t.Helper()
	testkit.NeedsService(t, "MariaDB")
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = MySQLAddr()
	cfg.Timeout = 5 * time.Second
	conn, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("dbtest: open MariaDB at %s: %v", cfg.Addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.PingContext(ctx); err != nil {
		_ = conn.Close()
		t.Fatalf("dbtest: MariaDB is not reachable at %s as root without password (start it; CI does): %v", cfg.Addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// RandomName returns prefix followed by 12 random hex digits.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// MySQL creates an empty database magnum_test_<random> (character set
// utf8mb3, the default a Magnum deployment's database has) and returns its
// name and the SQLAlchemy URL magnum.conf would hold. The database is
// dropped when the test ends.
func MySQL(t testing.TB) (name, url string) {
	t.Helper()
	admin := Admin(t)
	name = RandomName("magnum_test_")
	if _, err := admin.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci"); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	return name, "mysql+pymysql://root@" + MySQLAddr() + "/" + name + "?charset=utf8"
}

// SQLite returns the URL of a new SQLite file in the test's temporary
// directory.
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:///" + t.TempDir() + "/magnum.db"
}
