// Package migrations holds Magnum's database schema as embedded SQL per
// dialect (MySQL/MariaDB and SQLite), keyed by Magnum's alembic revision ids,
// and upgrades a database the way Magnum's `magnum-db-manage upgrade` does.
//
// The chain starts at 7da8489d6a68 (Magnum 15.0.1): an empty database gets the
// 15.0.1 schema in one step, then the later revisions run exactly as Magnum's
// alembic chain does. A database that Magnum's own alembic left at any
// revision of this chain continues from there; one at an older or unknown
// revision is refused without change. The revision is kept in
// alembic_version(version_num), so the Python and Go tools can take turns.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

//go:embed sql
var files embed.FS

// Revisions of the chain this package knows, oldest first.
const (
	// Base is Magnum 15.0.1's head: "separated CA cert for etcd and front-proxy".
	Base = "7da8489d6a68"
	// Rev2026_1 adds cluster_template.driver (stable/2026.1 head).
	Rev2026_1 = "c0f832afc4fd"
	// RevDropTrust drops cluster.trust_id, trustee_username, trustee_user_id, trustee_password.
	RevDropTrust = "d7e6a4d39fe4"
	// Head adds nodegroup.node_labels and node_taints (master head).
	Head = "b3e1cf4a2d5e"
)

// Dialect names.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// chain is the ordered list of revisions this package can apply.
func chain() []string { return []string{Base, Rev2026_1, RevDropTrust, Head} }

// older are Magnum's alembic revisions before Base, oldest first. A database
// at one of them must first be upgraded with Magnum's own magnum-db-manage.
func older() []string {
	return strings.Fields(`2581ebaf0cb2 3bea56f25597 5793cd26898d 3a938526b35d 35cff7c86221 1afee1db6cd0
2d1354bbf76e 29affeaa2bc2 2ace4006498 456126c6c9e9 4ea34a59a64c e772b2598d9 2d8657c0cdc 4956f03cabad
592131657ca1 3b6c4c42adb4 2b5f24dd95de 59e7664a8ba1 156ceb17fb0a 1c1ff5e56048 53882537ac57 14328d6a57e3
421102d1f2d2 6f21dc998bb 966a99e70ff 6f21dc920bb 5518af8dbc21 4e263f236334 3be65537a94a 1481f5b560dd
1d045384b966 27ad304554e2 5ad410481b88 2ae93c9c6191 33ef79969018 417917e778f5 5977879072a7 40f325033343
adc3b7679ae 57fbdf2327a2 05d3e97de9ee bb42b7cad130 5d4caa6e0a42 ee92b41b8809 049f81f6f584 e647f5931da8
ef08a5e057bd d072f58ab240 a1136d335540 085e601a39f6 68ce16dfd341 e0653b2d5271 1f196a3dabae 859fb45df249
b1f612248cab fcb4efee8f8b fb03fdef8919 720f640f43d1 bc46ba6cf949 aa0cc27839af a0e7c8450ab1 52bcaf58fecb
04c625aa95ba 041d9a0f1159 9a1539f1cd2c cbbc65a86986 87e62e3c7abc ac92cbae311c 461d798132c7 47380964133d
c04e925e65c2 95096e2334ee f1d8b0ab8b8d`)
}

// Revisions returns the revisions this package can apply, oldest first.
func Revisions() []string { return chain() }

// ErrUnknownRevision is matched (errors.Is) by the error for a database or
// a target at a revision this package cannot work from.
var ErrUnknownRevision = errors.New("unknown or unsupported alembic revision")

// Migrator upgrades one database.
type Migrator struct {
	db      *sql.DB
	dialect string
	engine  string
	log     *slog.Logger
}

// New returns a Migrator for db of dialect (MySQL or SQLite). engine is
// [database]mysql_engine ("" means InnoDB); it is ignored for SQLite.
func New(db *sql.DB, dialect, engine string, log *slog.Logger) (*Migrator, error) {
	if dialect != MySQL && dialect != SQLite {
		return nil, fmt.Errorf("migrations: unsupported dialect %q", dialect)
	}
	if engine == "" {
		engine = "InnoDB"
	}
	for _, r := range engine {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return nil, fmt.Errorf("migrations: invalid mysql_engine %q", engine)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Migrator{db: db, dialect: dialect, engine: engine, log: log}, nil
}

// Current returns the database's alembic revision, or "" when it has none
// (no alembic_version table, or an empty one), as `magnum-db-manage version`
// reports None.
func (m *Migrator) Current(ctx context.Context) (string, error) {
	ok, err := m.tableExists(ctx, "alembic_version")
	if err != nil || !ok {
		return "", err
	}
	rows, err := m.db.QueryContext(ctx, "SELECT version_num FROM alembic_version")
	if err != nil {
		return "", fmt.Errorf("migrations: read alembic_version: %w", err)
	}
	defer rows.Close()
	var revs []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return "", fmt.Errorf("migrations: read alembic_version: %w", err)
		}
		revs = append(revs, v)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("migrations: read alembic_version: %w", err)
	}
	switch len(revs) {
	case 0:
		return "", nil
	case 1:
		return revs[0], nil
	default:
		return "", fmt.Errorf("migrations: alembic_version holds several heads %v: %w", revs, ErrUnknownRevision)
	}
}

func (m *Migrator) tableExists(ctx context.Context, name string) (bool, error) {
	var q string
	if m.dialect == MySQL {
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	} else {
		q = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	}
	var n int
	if err := m.db.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
		return false, fmt.Errorf("migrations: look for table %s: %w", name, err)
	}
	return n > 0, nil
}

func (m *Migrator) userTables(ctx context.Context) ([]string, error) {
	var q string
	if m.dialect == MySQL {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
	} else {
		q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	}
	rows, err := m.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("migrations: list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("migrations: list tables: %w", err)
		}
		if n != "alembic_version" {
			out = append(out, n)
		}
	}
	return out, rows.Err()
}

// Plan returns the revisions an upgrade from current to target applies, in
// order. target "" , "head" or "heads" means Head. It fails with
// ErrUnknownRevision for a current or target revision outside the chain, and
// for a target older than current.
func Plan(current, target string) ([]string, error) {
	if target == "" || target == "head" || target == "heads" {
		target = Head
	}
	ti := slices.Index(chain(), target)
	if ti < 0 {
		if slices.Contains(older(), target) {
			return nil, fmt.Errorf("target revision %s predates %s (Magnum 15.0.1), which is the oldest this tool creates: %w",
				target, Base, ErrUnknownRevision)
		}
		return nil, fmt.Errorf("can't locate revision identified by '%s': %w", target, ErrUnknownRevision)
	}
	ci := -1
	if current != "" {
		ci = slices.Index(chain(), current)
		if ci < 0 {
			if slices.Contains(older(), current) {
				return nil, fmt.Errorf("database is at revision %s, older than %s (Magnum 15.0.1): upgrade it with Magnum's "+
					"magnum-db-manage first: %w", current, Base, ErrUnknownRevision)
			}
			return nil, fmt.Errorf("database is at revision %s, which this magnum-db-manage does not know "+
				"(a newer Magnum?): %w", current, ErrUnknownRevision)
		}
	}
	if ti < ci {
		return nil, fmt.Errorf("destination %s is not a valid upgrade target from current revision %s: %w",
			target, current, ErrUnknownRevision)
	}
	return slices.Clone(chain()[ci+1 : ti+1]), nil
}

// Upgrade brings the database to target ("" or "head" for Head), applying
// each revision after the current one and recording it in alembic_version.
// An up-to-date database is left untouched. A database without
// alembic_version must be empty.
func (m *Migrator) Upgrade(ctx context.Context, target string) error {
	current, err := m.Current(ctx)
	if err != nil {
		return err
	}
	steps, err := Plan(current, target)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if current == "" {
		tables, err := m.userTables(ctx)
		if err != nil {
			return err
		}
		if len(tables) > 0 {
			return fmt.Errorf("migrations: database has tables %v but no alembic revision; refusing to touch it: %w",
				tables, ErrUnknownRevision)
		}
	}
	if len(steps) == 0 {
		m.log.InfoContext(ctx, "database already at target revision", "revision", current)
		return nil
	}
	if current == "" {
		if err := m.createVersionTable(ctx); err != nil {
			return err
		}
	}
	for _, rev := range steps {
		if err := m.apply(ctx, current, rev); err != nil {
			return err
		}
		m.log.InfoContext(ctx, "running upgrade", "from_revision", current, "to_revision", rev)
		current = rev
	}
	return nil
}

// Stamp records rev ("head" for Head) in alembic_version without running
// any migration, as `magnum-db-manage stamp` does.
func (m *Migrator) Stamp(ctx context.Context, rev string) error {
	if rev == "head" || rev == "heads" {
		rev = Head
	}
	if !slices.Contains(chain(), rev) {
		return fmt.Errorf("migrations: can't stamp unknown revision '%s': %w", rev, ErrUnknownRevision)
	}
	if err := m.createVersionTable(ctx); err != nil {
		return err
	}
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrations: stamp: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "DELETE FROM alembic_version"); err != nil {
		return fmt.Errorf("migrations: stamp: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO alembic_version (version_num) VALUES (?)", rev); err != nil {
		return fmt.Errorf("migrations: stamp: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrations: stamp: %w", err)
	}
	m.log.InfoContext(ctx, "stamped database", "revision", rev)
	return nil
}

func (m *Migrator) createVersionTable(ctx context.Context) error {
	// As alembic creates it: no table options, so the database defaults apply.
	q := "CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) NOT NULL, " +
		"CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
	if _, err := m.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("migrations: create alembic_version: %w", err)
	}
	return nil
}

// Statements returns the SQL statements of revision rev for dialect.
func Statements(dialect, rev, engine string) ([]string, error) {
	b, err := files.ReadFile("sql/" + dialect + "/" + rev + ".sql")
	if err != nil {
		return nil, fmt.Errorf("migrations: no SQL for %s revision %s: %w", dialect, rev, err)
	}
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(string(b), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(t, ";") {
			s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			out = append(out, strings.ReplaceAll(s, "{{ENGINE}}", engine))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		return nil, fmt.Errorf("migrations: %s/%s.sql: statement without ';'", dialect, rev)
	}
	return out, nil
}

// apply runs one revision and moves alembic_version from prev to rev. MySQL
// DDL commits implicitly, so a failure in the middle of a revision leaves the
// earlier statements applied (as with alembic); SQLite runs it in one
// transaction.
func (m *Migrator) apply(ctx context.Context, prev, rev string) error {
	stmts, err := Statements(m.dialect, rev, m.engine)
	if err != nil {
		return err
	}
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrations: %s: begin: %w", rev, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("migrations: %s: %w", rev, err)
		}
	}
	var res sql.Result
	if prev == "" {
		res, err = tx.ExecContext(ctx, "INSERT INTO alembic_version (version_num) VALUES (?)", rev)
	} else {
		res, err = tx.ExecContext(ctx, "UPDATE alembic_version SET version_num = ? WHERE version_num = ?", rev, prev)
	}
	if err != nil {
		return fmt.Errorf("migrations: %s: record revision: %w", rev, err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("migrations: %s: alembic_version changed underneath (expected %q)", rev, prev)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrations: %s: commit: %w", rev, err)
	}
	return nil
}
