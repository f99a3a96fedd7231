package dbtest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/migrations"
)

// Migrated brings the database at url to the schema head with our
// migrations, as `magnum-db-manage upgrade` does, then opens a store on it
// with opts (opts.Connection is url; the schema check runs unless opts skips
// it). The store is closed when the test ends.
func Migrated(t testing.TB, url string, opts db.Options, log *slog.Logger) *db.Store {
	t.Helper()
	ctx := context.Background()
	raw, err := db.Open(ctx, db.Options{Connection: url, SkipSchemaCheck: true}, log)
	if err != nil {
		t.Fatalf("dbtest: open %s: %v", url, err)
	}
	m, err := migrations.New(raw.SQLDB(), raw.Dialect(), "", log)
	if err == nil {
		err = m.Upgrade(ctx, migrations.Head)
	}
	_ = raw.Close()
	if err != nil {
		t.Fatalf("dbtest: migrate to head: %v", err)
	}
	opts.Connection = url
	s, err := db.Open(ctx, opts, log)
	if err != nil {
		t.Fatalf("dbtest: open the migrated database: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// MySQLStore is Migrated on a fresh MariaDB database of the test's own.
func MySQLStore(t testing.TB, opts db.Options, log *slog.Logger) *db.Store {
	t.Helper()
	_, url := MySQL(t)
	return Migrated(t, url, opts, log)
}
