package db

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
)

// ListOpts is the pagination of a list call: oslo.db paginate_query with
// sort keys [SortKey, "id"]. Marker is the uuid of the last row of the
// previous page (the id for magnum_service and quotas, which have no uuid).
type ListOpts struct {
	Limit   int
	Marker  string
	SortKey string
	SortDir string
	// ReadOnly loads the objects for a reply only
	// (objects.MarkLoadedReadOnly): no change snapshot is taken, and
	// saving one of them is refused.
	ReadOnly bool
}

// loaded marks a listed object as freshly read from the database.
func (o ListOpts) loaded(obj objects.Object) {
	if o.ReadOnly {
		objects.MarkLoadedReadOnly(obj)
		return
	}
	resetLoaded(obj)
}

// where is a conjunction of SQL conditions with their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// in adds col IN (values); an empty list matches nothing.
func (w *where) in(col string, values []string) {
	if len(values) == 0 {
		w.add("1 = 0")
		return
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	w.add(col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ")+")", args...)
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return "1 = 1"
	}
	return "(" + strings.Join(w.conds, ") AND (") + ")"
}

func (w *where) apply(tx *gorm.DB) *gorm.DB {
	if len(w.conds) == 0 {
		return tx
	}
	return tx.Where(w.sql(), w.args...)
}

// tenantFilter is Magnum's _add_tenant_filters: nothing for an admin with
// all_tenants; project_id when the context has one; user_id otherwise.
// (15.0.1 and 2026.1 also look up Keystone's trustee domain; master, whose
// clusters have no trustees, does not, and neither does this port.)
func (s *Store) tenantFilter(ctx context.Context, w *where) {
	rc := request.From(ctx)
	switch {
	case rc.IsAdmin && rc.AllTenants:
	case rc.ProjectID != "":
		w.add(s.q("project_id")+" = ?", rc.ProjectID)
	case rc.UserID != "":
		w.add(s.q("user_id")+" = ?", rc.UserID)
	default:
		w.add(s.q("user_id") + " IS NULL")
	}
}

// nodegroupTenantFilter: nodegroup queries filter by project unless admin.
func (s *Store) nodegroupTenantFilter(ctx context.Context, w *where) {
	rc := request.From(ctx)
	if !rc.IsAdmin {
		if rc.ProjectID == "" {
			w.add(s.q("project_id") + " IS NULL")
		} else {
			w.add(s.q("project_id")+" = ?", rc.ProjectID)
		}
	}
}

// page describes the table a paginated list reads.
type page struct {
	table   string
	columns []string
	// markerCol is the column a marker names ("uuid", or "id").
	markerCol string
	// notFound builds the error for a marker that matches no row.
	notFound func(marker string) error
}

// paginate applies oslo.db paginate_query to tx (already filtered by base):
// ORDER BY sort_key, id in sort_dir; the marker criteria; LIMIT.
func (s *Store) paginate(ctx context.Context, tx *gorm.DB, p page, base *where, opts ListOpts) (*gorm.DB, error) {
	keys := []string{"id"}
	if opts.SortKey != "" && opts.SortKey != "id" {
		keys = []string{opts.SortKey, "id"}
	}
	for _, k := range keys {
		if !slices.Contains(p.columns, k) {
			return nil, exception.InvalidParameterValue(
				fmt.Sprintf(`The sort_key value "%s" is an invalid field for sorting`, opts.SortKey))
		}
	}
	dir := opts.SortDir
	if dir == "" {
		dir = "asc"
	}
	mainDir, nullDir, _ := strings.Cut(dir, "-")
	if (mainDir != "asc" && mainDir != "desc") || (nullDir != "" && nullDir != "nullsfirst" && nullDir != "nullslast") {
		return nil, exception.Builtin("ValueError",
			"Unknown sort direction, must be one of: asc-nullsfirst, asc-nullslast, desc-nullsfirst, desc-nullslast, asc, desc")
	}
	for _, k := range keys {
		switch nullDir {
		case "nullsfirst":
			tx = tx.Order(s.q(k) + " IS NULL DESC")
		case "nullslast":
			tx = tx.Order(s.q(k) + " IS NOT NULL DESC")
		}
		tx = tx.Order(s.q(k) + " " + strings.ToUpper(mainDir))
	}
	if opts.Marker != "" {
		mw := &where{}
		mw.conds = append(mw.conds, base.conds...)
		mw.args = append(mw.args, base.args...)
		var markerVal any = opts.Marker
		if p.markerCol == "id" {
			id, err := strconv.ParseInt(opts.Marker, 10, 64)
			if err != nil {
				return nil, p.notFound(opts.Marker)
			}
			markerVal = id
		}
		mw.add(s.q(p.markerCol)+" = ?", markerVal)
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = s.q(k)
		}
		var vals []map[string]any
		if err := mw.apply(s.ctxDB(ctx).Table(p.table).Select(strings.Join(quoted, ", "))).Limit(1).
			Find(&vals).Error; err != nil {
			return nil, err
		}
		if len(vals) == 0 {
			return nil, p.notFound(opts.Marker)
		}
		var ors []string
		var args []any
		for i, k := range keys {
			v := vals[0][k]
			if v == nil {
				continue
			}
			var ands []string
			for j := range i {
				if vj := vals[0][keys[j]]; vj != nil {
					ands = append(ands, s.q(keys[j])+" = ?")
					args = append(args, vj)
				}
			}
			var c string
			if mainDir == "desc" {
				c = s.q(k) + " < ?"
				if nullDir == "nullsfirst" {
					c = "(" + c + " OR " + s.q(k) + " IS NULL)"
				}
			} else {
				c = s.q(k) + " > ?"
				if nullDir == "nullslast" {
					c = "(" + c + " OR " + s.q(k) + " IS NULL)"
				}
			}
			args = append(args, v)
			ands = append(ands, c)
			ors = append(ors, "("+strings.Join(ands, " AND ")+")")
		}
		if len(ors) > 0 {
			tx = tx.Where(strings.Join(ors, " OR "), args...)
		}
	}
	if opts.Limit > 0 {
		tx = tx.Limit(opts.Limit)
	}
	return tx, nil
}

// identity is Magnum's add_identity_filter: an int-like value selects by
// id, a uuid-like one by uuid; anything else is InvalidIdentity.
func (s *Store) identity(w *where, value string) error {
	if _, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
		w.add(s.q("id")+" = ?", strings.TrimSpace(value))
		return nil
	}
	if isUUIDLike(value) {
		w.add(s.q("uuid")+" = ?", value)
		return nil
	}
	return exception.ClassInvalidIdentity.New(map[string]any{"identity": value})
}

// isUUIDLike is oslo_utils.uuidutils.is_uuid_like: 32 hex digits, with or
// without dashes and braces, any case.
func isUUIDLike(v string) bool {
	s := strings.ToLower(strings.Trim(strings.ReplaceAll(strings.TrimPrefix(v, "urn:uuid:"), "-", ""), "{}"))
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
