package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// setColumns returns the columns of the fields set on o (the values a
// Python create() binds: obj_get_changes of a new object).
func setColumns(o objects.Object, columns []string) []string {
	var out []string
	for _, c := range columns {
		if c == "id" {
			continue
		}
		if objects.IsSet(o, c) {
			out = append(out, c)
		}
	}
	return out
}

// ErrReadOnly is returned for a save of an object loaded read-only: its
// changes cannot be known, so nothing is written.
var ErrReadOnly = errors.New("db: the object was listed read-only, for a reply, and cannot be saved")

// writable refuses objects loaded read-only (ListOpts.ReadOnly).
func writable(o objects.Object) error {
	if objects.IsReadOnly(o) {
		return fmt.Errorf("saving %s: %w", o.ObjName(), ErrReadOnly)
	}
	return nil
}

// changedColumns returns the columns of the fields changed on o
// (obj_get_changes), without id.
func changedColumns(o objects.Object, columns []string) []string {
	var out []string
	for _, f := range objects.Changes(o) {
		if f != "id" && slices.Contains(columns, f) {
			out = append(out, f)
		}
	}
	return out
}

// addColumn appends col to cols when absent.
func addColumn(cols []string, col ...string) []string {
	for _, c := range col {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	return cols
}

// getOne runs a query that must match one row (SQLAlchemy query.one()).
// multiple is nil when the query cannot match several rows by construction.
func getOne[R any](ctx context.Context, s *Store, w *where, notFound, multiple func() error) (*R, error) {
	var rows []R
	err := w.apply(s.ctxDB(ctx).Model(new(R))).Limit(2).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	switch {
	case len(rows) == 0:
		return nil, notFound()
	case len(rows) > 1 && multiple != nil:
		return nil, multiple()
	}
	return &rows[0], nil
}

// listObjects runs a paginated list, turning each row into an object as it
// is read, with no slice of rows in between.
func listObjects[R, O any](ctx context.Context, s *Store, p page, w *where, opts ListOpts, conv func(*R) O) ([]O, error) {
	tx, err := s.paginate(ctx, w.apply(s.ctxDB(ctx).Model(new(R))), p, w, opts)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []O
	err = scanEach(&s.plans, rows, func(r *R) error {
		out = append(out, conv(r))
		return nil
	})
	return out, err
}

// listLoaded is listObjects for the object lists the API reads: each
// object marked loaded as opts says.
func listLoaded[R any, O objects.Object](ctx context.Context, s *Store, p page, w *where, opts ListOpts, conv func(*R) O) ([]O, error) {
	return listObjects(ctx, s, p, w, opts, func(r *R) O {
		o := conv(r)
		opts.loaded(o)
		return o
	})
}

// countRows counts the rows matching w.
func countRows[R any](ctx context.Context, s *Store, w *where) (int64, error) {
	var n int64
	err := w.apply(s.ctxDB(ctx).Model(new(R))).Count(&n).Error
	return n, err
}

// insert writes row with only cols (plus created_at), so that unset
// fields get the column's default, as SQLAlchemy does for values that are
// not bound.
func insert(tx *gorm.DB, row any, cols []string) error {
	return tx.Select(cols).Create(row).Error
}

// updateWhere writes cols of row on the rows matching w, returning the
// number of rows matched.
func updateWhere(tx *gorm.DB, row any, w *where, cols []string) (int64, error) {
	res := w.apply(tx.Model(row)).Select(cols).Updates(row)
	return res.RowsAffected, res.Error
}

// updateRetried writes cols of row on the rows matching w, retrying
// deadlocks as oslo.db does, and returns how many rows matched.
func (s *Store) updateRetried(ctx context.Context, op string, row any, w *where, cols []string) (int64, error) {
	var n int64
	err := s.retry(ctx, op, func() error {
		var err error
		n, err = updateWhere(s.ctxDB(ctx), row, w, cols)
		return err
	})
	return n, err
}

// deleteRetried deletes the rows of model's table matching w, retrying
// deadlocks, and returns how many rows went.
func (s *Store) deleteRetried(ctx context.Context, op string, w *where, model any) (int64, error) {
	var n int64
	err := s.retry(ctx, op, func() error {
		res := w.apply(s.ctxDB(ctx)).Delete(model)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// lockForUpdate adds SELECT … FOR UPDATE on MySQL (SQLite write
// transactions already hold the database lock).
func (s *Store) lockForUpdate(tx *gorm.DB) *gorm.DB {
	if s.dialect == "mysql" {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// uuidOverwrite is the InvalidParameterValue update_* raise when the uuid
// is among the changes.
func uuidOverwrite(kind string) error {
	return exception.InvalidParameterValue("Cannot overwrite UUID for an existing " + kind + ".")
}

// resetLoaded marks a loaded object as freshly read from the database.
func resetLoaded(o objects.Object) { objects.ResetChanges(o) }
