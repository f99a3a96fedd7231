package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite" // the embedded default's driver
)

type scanRow struct {
	ID      int64      `gorm:"column:id;primaryKey"`
	Name    *string    `gorm:"column:name"`
	Labels  jsonDict   `gorm:"column:labels"`
	Created *time.Time `gorm:"column:created_at"`
	Count   *int64     `gorm:"column:count"`
	Enabled *bool      `gorm:"column:enabled"`
	Role    string     `gorm:"column:role"`
	Skipped string     // no such column: never scanned
}

// TestScanAllFillsTaggedFields: every column lands in its tagged field,
// NULLs become nil pointers, columns without a field are dropped, rows kept
// by the caller are not changed by later ones, and the plan is reused.
func TestScanAllFillsTaggedFields(t *testing.T) {
	sdb, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "scan.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(255), labels TEXT, created_at DATETIME, extra TEXT,
			count INTEGER, enabled BOOLEAN, role VARCHAR(10))`,
		`INSERT INTO t VALUES (1, 'a', '{"k": "v"}', '2026-11-30 01:02:03', 'x', 7, 1, 'master'),
			(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(3, '', '{}', NULL, 'y', 0, 0, 'worker')`,
	} {
		if _, err := sdb.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var plans scanPlans
	for range 2 {
		rows, err := sdb.QueryContext(ctx, `SELECT * FROM t ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanAll[scanRow](&plans, rows)
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d rows", len(got))
		}
		a, b, c := got[0], got[1], got[2]
		if a.ID != 1 || a.Name == nil || *a.Name != "a" || a.Labels["k"] != "v" || a.Created == nil ||
			!a.Created.Equal(time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)) || a.Skipped != "" ||
			a.Count == nil || *a.Count != 7 || a.Enabled == nil || !*a.Enabled || a.Role != "master" {
			t.Errorf("row 1 = %+v", a)
		}
		if b.ID != 2 || b.Name != nil || b.Labels != nil || b.Created != nil || b.Count != nil || b.Enabled != nil || b.Role != "" {
			t.Errorf("row 2 = %+v", b)
		}
		// An empty string is not NULL, and the strings of a row kept by the
		// caller stay as they were read when later rows are scanned.
		if c.ID != 3 || c.Name == nil || *c.Name != "" || c.Role != "worker" || c.Count == nil || *c.Count != 0 ||
			c.Enabled == nil || *c.Enabled {
			t.Errorf("row 3 = %+v", c)
		}
	}
	n := 0
	plans.m.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d plans cached, want 1", n)
	}
	if _, err := plans.get(reflect.TypeFor[struct{ X int }](), []string{"x"}); err == nil {
		t.Error("an int field (only int64 is read) was accepted")
	}
	type status string
	if _, err := plans.get(reflect.TypeFor[struct {
		S status `gorm:"column:s"`
	}](), []string{"s"}); err == nil {
		t.Error("a named string type was accepted (it would be read as a plain string)")
	}
}

// TestEveryModelHasAPlan: the plan of every table's row type for the
// columns its queries select is made (a field of a type the scanner cannot
// read fails here, not at the first production query), and every column
// lands in a field.
func TestEveryModelHasAPlan(t *testing.T) {
	var plans scanPlans
	for _, m := range []struct {
		typ  reflect.Type
		cols []string
	}{
		{reflect.TypeFor[clusterRow](), clusterColumns()},
		{reflect.TypeFor[clusterTemplateRow](), clusterTemplateColumns()},
		{reflect.TypeFor[nodeGroupRow](), nodeGroupColumns()},
		{reflect.TypeFor[x509KeyPairRow](), x509KeyPairColumns()},
		{reflect.TypeFor[magnumServiceRow](), magnumServiceColumns()},
		{reflect.TypeFor[quotaRow](), quotaColumns()},
		{reflect.TypeFor[federationRow](), federationColumns()},
	} {
		plan, err := plans.get(m.typ, m.cols)
		if err != nil {
			t.Errorf("%s: %v", m.typ, err)
			continue
		}
		fields := map[int]bool{}
		for i, p := range plan {
			if p.kind == colDiscard {
				t.Errorf("%s: column %s has no field", m.typ, m.cols[i])
			}
			if fields[p.field] {
				t.Errorf("%s: two columns land in field %d", m.typ, p.field)
			}
			fields[p.field] = true
		}
		if len(fields) != m.typ.NumField() {
			t.Errorf("%s: %d of its %d fields are read", m.typ, len(fields), m.typ.NumField())
		}
	}
}

// TestColumnConversionsOfTextValues: what a driver may hand over as text
// (MySQL's text protocol) converts like its native form.
func TestColumnConversionsOfTextValues(t *testing.T) {
	for _, v := range []any{int64(42), []byte("42"), "42"} {
		if n, err := asInt(v); err != nil || n != 42 {
			t.Errorf("asInt(%#v) = %d, %v", v, n, err)
		}
	}
	if _, err := asInt(3.5); err == nil {
		t.Error("a float was taken as an integer")
	}
	want := time.Date(2026, 11, 30, 1, 2, 3, 500000000, time.UTC)
	for _, v := range []any{want, []byte("2026-11-30 01:02:03.5"), "2026-11-30T01:02:03.5Z"} {
		if got, err := asTime(v); err != nil || !got.Equal(want) {
			t.Errorf("asTime(%#v) = %v, %v", v, got, err)
		}
	}
	if _, err := asTime("yesterday"); err == nil {
		t.Error("text that is no time was taken as one")
	}
}

// scanAll collects what scanEach hands over.
func scanAll[R any](plans *scanPlans, rows *sql.Rows) ([]R, error) {
	var out []R
	err := scanEach(plans, rows, func(r *R) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}
