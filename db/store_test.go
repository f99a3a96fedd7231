package db_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url                      string
		dialect, database        string
		memory                   bool
		net, addr, user, pass    string
		wantErr, redactedHasPass bool
	}{
		{url: "mysql+pymysql://magnum:s3cr%40t@db.example:3307/magnum?charset=utf8", dialect: "mysql",
			database: "magnum", net: "tcp", addr: "db.example:3307", user: "magnum", pass: "s3cr@t"},
		{url: "mysql://root@localhost/magnum", dialect: "mysql", database: "magnum", net: "tcp",
			addr: "localhost:3306", user: "root"},
		{url: "mysql+pymysql://magnum:pw@/magnum?unix_socket=/run/mysqld/mysqld.sock&charset=utf8", dialect: "mysql",
			database: "magnum", net: "unix", addr: "/run/mysqld/mysqld.sock", user: "magnum", pass: "pw"},
		{url: "mysql+pymysql://u:p@[::1]:3306/m", dialect: "mysql", database: "m", net: "tcp", addr: "[::1]:3306", user: "u", pass: "p"},
		{url: "sqlite:///relative.db", dialect: "sqlite", database: "relative.db"},
		{url: "sqlite:////var/lib/magnum/magnum.sqlite", dialect: "sqlite", database: "/var/lib/magnum/magnum.sqlite"},
		{url: "sqlite://", dialect: "sqlite", memory: true},
		{url: "sqlite:///:memory:", dialect: "sqlite", memory: true},
		// Passwords SQLAlchemy takes as they are and net/url refuses:
		// a space and ^ { } | " < > \ `, and a % that starts no escape
		// (urllib.parse.unquote keeps it).
		{url: "mysql+pymysql://magnum:Sup3r^Secret{pw} |\"<>\\`@db:3306/magnum", dialect: "mysql", database: "magnum",
			net: "tcp", addr: "db:3306", user: "magnum", pass: "Sup3r^Secret{pw} |\"<>\\`"},
		{url: "mysql+pymysql://magnum:100%zz%4@db/magnum", dialect: "mysql", database: "magnum", net: "tcp",
			addr: "db:3306", user: "magnum", pass: "100%zz%4"},
		{url: "mysql+pymysql://magnum:a:b/c?d@db/magnum", dialect: "mysql", database: "magnum", net: "tcp",
			addr: "db:3306", user: "magnum", pass: "a:b/c?d"},
		{url: "mysql+pymysql://magnum:p@db:port/magnum", wantErr: true},
		{url: "mysql+pymysql://magnum:p@db\x7f/magnum", wantErr: true},
		{url: "postgresql://u:p@h/db", wantErr: true},
		{url: "not a url", wantErr: true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			u, err := db.ParseURL(tc.url)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseURL accepted %q", tc.url)
				}
				if strings.Contains(err.Error(), ":p@") {
					t.Fatalf("error leaks the password: %v", err)
				}
				return
			}
			must(t, err)
			if u.Dialect != tc.dialect || u.Database != tc.database || u.Memory != tc.memory {
				t.Fatalf("got %+v", u)
			}
			if tc.pass != "" && strings.Contains(u.Redacted, ":"+tc.pass+"@") {
				t.Fatalf("Redacted %q shows the password", u.Redacted)
			}
			if tc.dialect == "mysql" {
				cfg, err := mysql.ParseDSN(u.DSN)
				must(t, err)
				if cfg.Net != tc.net || cfg.Addr != tc.addr || cfg.User != tc.user || cfg.Passwd != tc.pass ||
					cfg.DBName != tc.database || !cfg.ParseTime || cfg.Loc != time.UTC || !cfg.ClientFoundRows {
					t.Fatalf("DSN config %+v", cfg)
				}
			}
		})
	}
}

// TestMySQLArgumentsAreWrittenIntoTheStatement: with a character set
// where it is safe, queries carry their arguments (one round trip, as
// PyMySQL does); values that need escaping still round-trip exactly.
func TestMySQLArgumentsAreWrittenIntoTheStatement(t *testing.T) {
	for raw, want := range map[string]bool{
		"mysql+pymysql://root@db/magnum":                     true,
		"mysql+pymysql://root@db/magnum?charset=utf8":        true,
		"mysql+pymysql://root@db/magnum?charset=utf8mb4":     true,
		"mysql+pymysql://root@db/magnum?charset=gbk":         false,
		"mysql+pymysql://root@db/magnum?charset=big5&x=1":    false,
		"mysql://root@db/magnum?charset=latin1&read_timeout": true,
	} {
		u, err := db.ParseURL(raw)
		must(t, err)
		cfg, err := mysql.ParseDSN(u.DSN)
		must(t, err)
		if cfg.InterpolateParams != want {
			t.Errorf("%s: interpolateParams = %v, want %v", raw, cfg.InterpolateParams, want)
		}
	}
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		for i, name := range []string{`it's`, `back\slash`, `"quoted" ? and %`, "\u00e9t\u00e9 \u2028", `\'; DROP TABLE cluster; --`} {
			c := cluster(fmt.Sprintf("c%d", i), "p1", objects.CreateComplete)
			c.Name = objects.Str(name)
			c.Labels = map[string]string{"k": name}
			must(t, s.CreateCluster(ctx, c))
			got, err := s.GetClusterByName(ctx, name)
			must(t, err)
			if objects.Deref(got.Name) != name || got.Labels["k"] != name || *got.UUID != *c.UUID {
				t.Fatalf("%q came back as %q, labels %v", name, objects.Deref(got.Name), got.Labels)
			}
		}
		n, err := s.CountClusters(ctx, db.ClusterFilters{})
		must(t, err)
		if n != 5 {
			t.Fatalf("%d clusters, want 5", n)
		}
	})
}

func TestSQLiteURLFormsOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	for _, url := range []string{"sqlite://", "sqlite:///rel.db", "sqlite:///" + filepath.Join(dir, "abs.db")} {
		t.Run(url, func(t *testing.T) {
			s, err := db.Open(ctx, db.Options{Connection: url, SkipSchemaCheck: true}, nil)
			must(t, err)
			defer s.Close()
			must(t, s.Ping(ctx))
			if s.Dialect() != "sqlite" {
				t.Fatal(s.Dialect())
			}
		})
	}
}

func TestOpenRefusesSchemaNotAtHead(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{dbtest.SQLite(t), func() string { _, u := dbtest.MySQL(t); return u }()} {
		_, err := db.Open(ctx, db.Options{Connection: url}, nil)
		if !errors.Is(err, db.ErrSchemaVersion) || !strings.Contains(err.Error(), "magnum-db-manage upgrade") {
			t.Fatalf("Open on an empty database: %v", err)
		}
	}
}

// TestSQLiteMissingDirectorySaysSo: SQLite itself reports a missing
// directory as "unable to open database file: out of memory (14)".
func TestSQLiteMissingDirectorySaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	_, err := db.Open(context.Background(), db.Options{Connection: "sqlite:///" + filepath.Join(dir, "magnum.sqlite"),
		SkipSchemaCheck: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "the directory "+dir+" of the SQLite database does not exist") {
		t.Fatalf("error = %v", err)
	}
}

func TestOpenUnreachableDatabaseFailsClearly(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	_, err := db.Open(ctx, db.Options{Connection: "mysql+pymysql://magnum:topsecret@127.0.0.1:1/magnum",
		MaxRetries: 1, RetryInterval: 50 * time.Millisecond}, nil)
	if err == nil {
		t.Fatal("Open succeeded on a closed port")
	}
	if !strings.Contains(err.Error(), "unreachable after 2 attempts") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error = %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("too slow")
	}
}

// TestStoreRecoversWhenConnectionsAreKilled kills every server connection of
// the store (as a MariaDB restart or failover does) and checks that the next
// calls work again.
func TestStoreRecoversWhenConnectionsAreKilled(t *testing.T) {
	s := newStore(t, "mysql")
	ctx := adminCtx()
	c := cluster("c", "p1", objects.CreateComplete)
	must(t, s.CreateCluster(ctx, c))
	var dbName string
	must(t, s.SQLDB().QueryRow("SELECT DATABASE()").Scan(&dbName))
	admin := dbtest.Admin(t)
	rows, err := admin.Query("SELECT id FROM information_schema.processlist WHERE db = ?", dbName)
	must(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		must(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	_ = rows.Close()
	if len(ids) == 0 {
		t.Fatal("no server connection found for the store")
	}
	for _, id := range ids {
		if _, err := admin.Exec("KILL ?", id); err != nil {
			t.Fatalf("kill %d: %v", id, err)
		}
	}
	// A call may fail once with a clear error while the pool notices.
	var got *objects.Cluster
	for attempt := range 3 {
		got, err = s.GetClusterByUUID(ctx, *c.UUID)
		if err == nil {
			break
		}
		if !strings.HasPrefix(err.Error(), "db: ") {
			t.Fatalf("attempt %d: unclear error %v", attempt, err)
		}
	}
	must(t, err)
	if got.ID != c.ID {
		t.Fatal("wrong row")
	}
	must(t, s.Ping(ctx))
}

// TestSQLiteConcurrentWriters runs many goroutines writing at once.
func TestSQLiteConcurrentWriters(t *testing.T) {
	s := newStore(t, "sqlite")
	ctx := adminCtx()
	c := cluster("c", "p1", objects.CreateComplete)
	must(t, s.CreateCluster(ctx, c))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Go(func() {
			ng := nodegroup(c, "ng-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)), "worker", 1)
			if err := s.CreateNodeGroup(ctx, ng); err != nil {
				errs <- err
			}
			if _, err := s.ReportServiceUp(ctx, "h", "magnum-conductor"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := s.CountNodeGroups(ctx, *c.UUID)
	must(t, err)
	svc, err := s.GetMagnumServiceByHostAndBinary(ctx, "h", "magnum-conductor")
	must(t, err)
	if n != 50 || svc.ReportCount != 50 {
		t.Fatalf("nodegroups %d, reports %d; want 50, 50", n, svc.ReportCount)
	}
}

func TestInMemorySQLiteStoresAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, err := db.Open(ctx, db.Options{Connection: "sqlite://", SkipSchemaCheck: true}, nil)
	must(t, err)
	defer a.Close()
	b, err := db.Open(ctx, db.Options{Connection: "sqlite://", SkipSchemaCheck: true}, nil)
	must(t, err)
	defer b.Close()
	if _, err := a.SQLDB().Exec("CREATE TABLE only_in_a (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SQLDB().Exec("INSERT INTO only_in_a VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	must(t, a.SQLDB().QueryRow("SELECT COUNT(*) FROM only_in_a").Scan(&n))
	if n != 1 {
		t.Fatalf("a sees %d rows", n)
	}
	if err := b.SQLDB().QueryRow("SELECT COUNT(*) FROM only_in_a").Scan(&n); err == nil {
		t.Fatal("a second in-memory store sees the first one's tables")
	}
}
