package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite" // registers "sqlite" for database/sql
	_ "github.com/go-sql-driver/mysql"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
	"github.com/openstack/magnum-conductor/migrations"
)

// refDir holds Magnum's own schema dumps (a copy of the shared reference
// schema/).
const refDir = "testdata/schema"

var (
	createRE  = regexp.MustCompile("(?s)CREATE TABLE `(\\w+)` \\(.*?\\n\\) ENGINE=[^;]*;")
	autoIncRE = regexp.MustCompile(` AUTO_INCREMENT=\d+`)
)

// tablesOf splits a mysqldump into its CREATE TABLE statements by table,
// with AUTO_INCREMENT counters removed.
func tablesOf(dump string) map[string]string {
	out := map[string]string{}
	for _, m := range createRE.FindAllStringSubmatch(dump, -1) {
		out[m[1]] = autoIncRE.ReplaceAllString(m[0], "")
	}
	return out
}

func mysqldump(t *testing.T, name string) map[string]string {
	t.Helper()
	host, port, err := net.SplitHostPort(dbtest.MySQLAddr())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mysqldump", "--no-data", "--skip-comments", "--skip-add-drop-table",
		"-uroot", "-h", host, "-P", port, name).Output()
	if err != nil {
		t.Fatalf("mysqldump %s: %v", name, err)
	}
	return tablesOf(string(out))
}

func reference(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refDir, file))
	if err != nil {
		t.Fatalf("reference schema: %v", err)
	}
	return tablesOf(string(b))
}

func sameTables(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("%s: tables %v, want %v", what, g, w)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: table %s differs\n--- got\n%s\n--- want\n%s", what, name, got[name], w)
		}
	}
}

type testDB struct {
	dialect string
	name    string // MySQL schema name
	url     string
	sql     *sql.DB
}

func open(t *testing.T, dialect string) *testDB {
	t.Helper()
	d := &testDB{dialect: dialect}
	if dialect == migrations.MySQL {
		d.name, d.url = dbtest.MySQL(t)
	} else {
		d.url = dbtest.SQLite(t)
	}
	u, err := db.ParseURL(d.url)
	if err != nil {
		t.Fatal(err)
	}
	driver := "mysql"
	if dialect == migrations.SQLite {
		driver = "sqlite"
	}
	d.sql, err = sql.Open(driver, u.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.sql.Close() })
	return d
}

func (d *testDB) migrator(t *testing.T) *migrations.Migrator {
	t.Helper()
	m, err := migrations.New(d.sql, d.dialect, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (d *testDB) columns(t *testing.T, table string) []string {
	t.Helper()
	var q string
	if d.dialect == migrations.MySQL {
		q = "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '" +
			table + "' ORDER BY ordinal_position"
	} else {
		q = "SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid"
	}
	rows, err := d.sql.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func forEachDialect(t *testing.T, f func(t *testing.T, d *testDB)) {
	for _, dialect := range []string{migrations.MySQL, migrations.SQLite} {
		t.Run(dialect, func(t *testing.T) { f(t, open(t, dialect)) })
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		current, target string
		want            []string
		wantErr         bool
	}{
		{"", "", migrations.Revisions(), false},
		{"", "head", migrations.Revisions(), false},
		{"", migrations.Base, []string{migrations.Base}, false},
		{migrations.Base, "", []string{migrations.Rev2026_1, migrations.RevDropTrust, migrations.Head}, false},
		{migrations.Rev2026_1, "heads", []string{migrations.RevDropTrust, migrations.Head}, false},
		{migrations.Head, "", []string{}, false},
		{migrations.Head, migrations.Base, nil, true},
		{"f1d8b0ab8b8d", "", nil, true},
		{"ffffffffffff", "", nil, true},
		{"", "2581ebaf0cb2", nil, true},
		{"", "nonsense", nil, true},
	} {
		t.Run(tc.current+"->"+tc.target, func(t *testing.T) {
			got, err := migrations.Plan(tc.current, tc.target)
			if tc.wantErr {
				if !errors.Is(err, migrations.ErrUnknownRevision) {
					t.Fatalf("Plan = %v, %v; want ErrUnknownRevision", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Plan = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestUpgradeEmptyToHeadThenNoop(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d *testDB) {
		ctx := context.Background()
		m := d.migrator(t)
		if rev, err := m.Current(ctx); err != nil || rev != "" {
			t.Fatalf("Current on empty DB = %q, %v", rev, err)
		}
		if err := m.Upgrade(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if rev, err := m.Current(ctx); err != nil || rev != migrations.Head {
			t.Fatalf("Current = %q, %v; want head", rev, err)
		}
		cols := d.columns(t, "cluster")
		if slices.Contains(cols, "trust_id") || !slices.Contains(cols, "front_proxy_ca_cert_ref") {
			t.Fatalf("cluster columns at head: %v", cols)
		}
		if !slices.Contains(d.columns(t, "nodegroup"), "node_taints") ||
			!slices.Contains(d.columns(t, "cluster_template"), "driver") {
			t.Fatal("head columns missing")
		}
		if err := m.Upgrade(ctx, "head"); err != nil {
			t.Fatalf("second upgrade: %v", err)
		}
		if rev, _ := m.Current(ctx); rev != migrations.Head {
			t.Fatalf("after no-op upgrade: %q", rev)
		}
	})
}

func TestUpgradeStepwiseFollowsMagnumChain(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d *testDB) {
		ctx := context.Background()
		m := d.migrator(t)
		if err := m.Upgrade(ctx, migrations.Base); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(d.columns(t, "cluster"), "trustee_password") ||
			slices.Contains(d.columns(t, "cluster_template"), "driver") {
			t.Fatal("15.0.1 schema expected at 7da8489d6a68")
		}
		if err := m.Upgrade(ctx, migrations.Rev2026_1); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(d.columns(t, "cluster_template"), "driver") ||
			!slices.Contains(d.columns(t, "cluster"), "trust_id") {
			t.Fatal("c0f832afc4fd adds driver and keeps trust columns")
		}
		if err := m.Upgrade(ctx, migrations.RevDropTrust); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(d.columns(t, "cluster"), "trust_id") || slices.Contains(d.columns(t, "nodegroup"), "node_labels") {
			t.Fatal("d7e6a4d39fe4 drops trust columns only")
		}
		if err := m.Upgrade(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if rev, _ := m.Current(ctx); rev != migrations.Head {
			t.Fatalf("Current = %q", rev)
		}
		// Downgrade targets are refused.
		if err := m.Upgrade(ctx, migrations.Base); !errors.Is(err, migrations.ErrUnknownRevision) {
			t.Fatalf("upgrade to an older revision: %v", err)
		}
	})
}

func TestUpgradeRefusesUnknownRevisionAndChangesNothing(t *testing.T) {
	for _, rev := range []string{"abcdef123456", "f1d8b0ab8b8d"} {
		t.Run(rev, func(t *testing.T) {
			forEachDialect(t, func(t *testing.T, d *testDB) {
				ctx := context.Background()
				for _, q := range []string{
					"CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)",
					"INSERT INTO alembic_version VALUES ('" + rev + "')",
					"CREATE TABLE cluster (id INTEGER PRIMARY KEY, trust_id VARCHAR(255))",
				} {
					if _, err := d.sql.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				m := d.migrator(t)
				err := m.Upgrade(ctx, "")
				if !errors.Is(err, migrations.ErrUnknownRevision) {
					t.Fatalf("Upgrade = %v, want ErrUnknownRevision", err)
				}
				if !strings.Contains(err.Error(), rev) {
					t.Errorf("error %q does not name the revision", err)
				}
				if got, _ := m.Current(ctx); got != rev {
					t.Fatalf("revision changed to %q", got)
				}
				if cols := d.columns(t, "cluster"); !slices.Equal(cols, []string{"id", "trust_id"}) {
					t.Fatalf("cluster changed: %v", cols)
				}
			})
		})
	}
}

func TestUpgradeRefusesTablesWithoutRevision(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d *testDB) {
		if _, err := d.sql.Exec("CREATE TABLE cluster (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		err := d.migrator(t).Upgrade(context.Background(), "")
		if !errors.Is(err, migrations.ErrUnknownRevision) {
			t.Fatalf("Upgrade = %v", err)
		}
		if slices.Contains(d.columns(t, "cluster"), "uuid") {
			t.Fatal("table was changed")
		}
	})
}

func TestMySQLSchemaMatchesMagnumDumps(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		target, file string
	}{
		{migrations.Base, "magnum-15.0.1-7da8489d6a68.mysql.sql"},
		{migrations.Head, "magnum-master-b3e1cf4a2d5e.mysql.sql"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			d := open(t, migrations.MySQL)
			if err := d.migrator(t).Upgrade(ctx, tc.target); err != nil {
				t.Fatal(err)
			}
			sameTables(t, "upgrade to "+tc.target, mysqldump(t, d.name), reference(t, tc.file))
		})
	}
}

// TestMySQLSchemaMatchesPythonMagnumDBManage runs Debian's python3-magnum
// magnum-db-manage (15.0.1) on one database and ours on another, compares
// the dumps, then upgrades the Python-made database to head with ours.
func TestMySQLSchemaMatchesPythonMagnumDBManage(t *testing.T) {
	const pyTool = "/usr/bin/magnum-db-manage"
	if _, err := os.Stat(pyTool); err != nil {
		t.Fatalf("the Python reference %s is required (apt-get install -y python3-magnum python3-pymysql): %v", pyTool, err)
	}
	ctx := context.Background()
	py := open(t, migrations.MySQL)
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[database]\nconnection = %s\n", py.url)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, pyTool, "--config-file", conf, "upgrade").CombinedOutput()
	if err != nil {
		t.Fatalf("python magnum-db-manage upgrade: %v\n%s", err, out)
	}
	if rev, err := py.migrator(t).Current(ctx); err != nil || rev != migrations.Base {
		t.Fatalf("python left revision %q, %v", rev, err)
	}
	ours := open(t, migrations.MySQL)
	if err := ours.migrator(t).Upgrade(ctx, migrations.Base); err != nil {
		t.Fatal(err)
	}
	sameTables(t, "python vs ours at "+migrations.Base, mysqldump(t, ours.name), mysqldump(t, py.name))

	// Ours continues the database Python made.
	if err := py.migrator(t).Upgrade(ctx, ""); err != nil {
		t.Fatal(err)
	}
	sameTables(t, "python DB upgraded to head", mysqldump(t, py.name), reference(t, "magnum-master-b3e1cf4a2d5e.mysql.sql"))
	// The conductor's store opens the upgraded database and works on it.
	store, err := db.Open(ctx, db.Options{Connection: py.url}, nil)
	if err != nil {
		t.Fatalf("store on the python-made, Go-upgraded database: %v", err)
	}
	defer store.Close()
	c := &objects.Cluster{Name: objects.Str("after-upgrade"), Status: objects.CreateInProgress}
	if err := store.CreateCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	ng := &objects.NodeGroup{Name: "w", ClusterID: *c.UUID, ProjectID: "p", Role: "worker",
		NodeLabels: map[string]string{"a": "b"}, NodeTaints: []map[string]any{{"key": "k", "effect": "NoSchedule"}}}
	if err := store.CreateNodeGroup(ctx, ng); err != nil {
		t.Fatal(err)
	}
	if got, err := store.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID); err != nil || got.NodeLabels["a"] != "b" ||
		len(got.NodeTaints) != 1 {
		t.Fatalf("nodegroup on upgraded DB: %+v, %v", got, err)
	}
	out, err = exec.CommandContext(ctx, pyTool, "--config-file", conf, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("python magnum-db-manage version: %v\n%s", err, out)
	}
	// 15.0.1 does not know the newer head, but reads the revision we wrote.
	if !strings.Contains(string(out), "Current DB revision is "+migrations.Head) {
		t.Fatalf("python version output: %s", out)
	}
}
