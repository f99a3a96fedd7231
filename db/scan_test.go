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
	Skipped string     // no column tag: never scanned
}

// TestScanAllFillsTaggedFields: every column lands in its tagged field,
// NULLs become nil pointers, columns without a field are dropped, and the
// plan is reused.
func TestScanAllFillsTaggedFields(t *testing.T) {
	sdb, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "scan.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(255), labels TEXT, created_at DATETIME, extra TEXT)`,
		`INSERT INTO t VALUES (1, 'a', '{"k": "v"}', '2026-11-30 01:02:03', 'x'), (2, NULL, NULL, NULL, NULL)`,
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
		if len(got) != 2 {
			t.Fatalf("%d rows", len(got))
		}
		a, b := got[0], got[1]
		if a.ID != 1 || a.Name == nil || *a.Name != "a" || a.Labels["k"] != "v" || a.Created == nil ||
			!a.Created.Equal(time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)) || a.Skipped != "" {
			t.Errorf("row 1 = %+v", a)
		}
		if b.ID != 2 || b.Name != nil || b.Labels != nil || b.Created != nil {
			t.Errorf("row 2 = %+v", b)
		}
	}
	n := 0
	plans.m.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d plans cached, want 1", n)
	}
	if _, err := plans.get(reflect.TypeFor[struct{ X int }](), []string{"x"}); err == nil {
		t.Error("a type without column tags was accepted")
	}
}
