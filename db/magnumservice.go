package db

import (
	"context"
	"slices"

	"gorm.io/gorm"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

func serviceNotFound(id any) error {
	return exception.ClassMagnumServiceNotFound.New(map[string]any{"magnum_service_id": id})
}

func magnumServicePage() page {
	return page{table: "magnum_service", columns: magnumServiceColumns(), markerCol: "id",
		notFound: func(m string) error { return serviceNotFound(m) }}
}

// hostBinary filters on host and binary; an empty host is NULL ([DEFAULT]
// host unset), as filter_by(host=None) does.
func (s *Store) hostBinary(w *where, host, binary string) {
	if host == "" {
		w.add(s.q("host") + " IS NULL")
	} else {
		w.add(s.q("host")+" = ?", host)
	}
	w.add(s.q("binary")+" = ?", binary)
}

// GetMagnumServiceByHostAndBinary is get_magnum_service_by_host_and_binary;
// it returns nil, nil when there is no such row.
func (s *Store) GetMagnumServiceByHostAndBinary(ctx context.Context, host, binary string) (*objects.MagnumService, error) {
	w := &where{}
	s.hostBinary(w, host, binary)
	var rows []magnumServiceRow
	if err := w.apply(s.ctxDB(ctx).Model(&magnumServiceRow{})).Order(s.q("id")).Limit(1).Find(&rows).Error; err != nil {
		return nil, s.wrap("get magnum service", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	m := rows[0].toObject()
	resetLoaded(m)
	return m, nil
}

// CreateMagnumService is create_magnum_service: on a duplicate (host,
// binary) it returns the existing row into m instead of failing.
func (s *Store) CreateMagnumService(ctx context.Context, m *objects.MagnumService) error {
	cols := addColumn(setColumns(m, magnumServiceColumns()), "created_at", "report_count", "disabled", "forced_down")
	row := magnumServiceToRow(m)
	row.ID = 0
	if !objects.IsSet(m, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create magnum service", func() error { return insert(s.ctxDB(ctx), row, cols) })
	w := &where{}
	if err != nil {
		if !isDuplicate(err) {
			return err
		}
		s.log.WarnContext(ctx, "magnum service with same host and binary had been saved into DB",
			"host", objects.Deref(m.Host), "binary", objects.Deref(m.Binary))
		s.hostBinary(w, objects.Deref(m.Host), objects.Deref(m.Binary))
	} else {
		w.add(s.q("id")+" = ?", row.ID)
	}
	r, err := getOne[magnumServiceRow](ctx, s, w, func() error { return serviceNotFound(row.ID) }, nil)
	if err != nil {
		return s.wrap("reload magnum service", err)
	}
	v := m.ReceivedVersion()
	*m = *r.toObject()
	m.SetReceivedVersion(v)
	objects.ResetChanges(m)
	return nil
}

// ListMagnumServices is get_magnum_service_list.
func (s *Store) ListMagnumServices(ctx context.Context, opts ListOpts) ([]*objects.MagnumService, error) {
	w := &where{}
	out, err := listLoaded(ctx, s, magnumServicePage(), w, opts, (*magnumServiceRow).toObject)
	if err != nil {
		return nil, s.wrap("list magnum services", err)
	}
	return out, nil
}

// SaveMagnumService is MagnumService.save (update_magnum_service by id):
// when report_count grows, last_seen_up becomes now.
func (s *Store) SaveMagnumService(ctx context.Context, m *objects.MagnumService) error {
	if err := writable(m); err != nil {
		return err
	}
	cols := changedColumns(m, magnumServiceColumns())
	if len(cols) == 0 {
		objects.ResetChanges(m)
		return nil
	}
	now := s.now()
	row := magnumServiceToRow(m)
	id := row.ID
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = &now
		cols = append(cols, "updated_at")
	}
	err := s.retry(ctx, "save magnum service", func() error {
		return s.ctxDB(ctx).Transaction(func(tx *gorm.DB) error {
			var counts []int64
			if err := s.lockForUpdate(tx.Model(&magnumServiceRow{})).Where(s.q("id")+" = ?", id).
				Pluck("report_count", &counts).Error; err != nil {
				return err
			}
			if len(counts) == 0 {
				return serviceNotFound(id)
			}
			c := cols
			if slices.Contains(c, "report_count") && row.ReportCount > counts[0] {
				row.LastSeenUp = &now
				c = addColumn(slices.Clone(c), "last_seen_up")
			}
			w := &where{}
			w.add(s.q("id")+" = ?", id)
			_, err := updateWhere(tx, row, w, c)
			return err
		})
	})
	if err != nil {
		return err
	}
	m.UpdatedAt = utcPtr(row.Updated)
	m.LastSeenUp = utcPtr(row.LastSeenUp)
	objects.ResetChanges(m)
	return nil
}

// DestroyMagnumService is destroy_magnum_service.
func (s *Store) DestroyMagnumService(ctx context.Context, id int64) error {
	var n int64
	err := s.retry(ctx, "destroy magnum service", func() error {
		res := s.ctxDB(ctx).Where(s.q("id")+" = ?", id).Delete(&magnumServiceRow{})
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return err
	}
	if n != 1 {
		return serviceNotFound(id)
	}
	return nil
}

// ReportServiceUp is the heartbeat (update_magnum_service task with
// report_state_up): report_count = report_count + 1 and last_seen_up =
// updated_at = now, in one UPDATE; when the row does not exist yet it is
// inserted with report_count 1 (Magnum creates it with 0 and saves 1).
// Concurrent reporters never lose an increment.
func (s *Store) ReportServiceUp(ctx context.Context, host, binary string) (*objects.MagnumService, error) {
	w := &where{}
	s.hostBinary(w, host, binary)
	err := s.retry(ctx, "report service up", func() error {
		now := s.now()
		res := w.apply(s.ctxDB(ctx).Model(&magnumServiceRow{})).Updates(map[string]any{
			"report_count": gorm.Expr(s.q("report_count") + " + 1"),
			"last_seen_up": now,
			"updated_at":   now,
		})
		if res.Error != nil || res.RowsAffected > 0 {
			return res.Error
		}
		var hostp *string
		if host != "" {
			hostp = &host
		}
		row := &magnumServiceRow{Created: &now, Updated: &now, ReportCount: 1, Host: hostp, Binary: &binary,
			Disabled: boolPtr(false), LastSeenUp: &now, ForcedDown: boolPtr(false)}
		err := insert(s.ctxDB(ctx), row, []string{"created_at", "updated_at", "report_count", "host", "binary",
			"disabled", "last_seen_up", "forced_down"})
		if err != nil && isDuplicate(err) {
			// Another reporter inserted it first: count this report too.
			return w.apply(s.ctxDB(ctx).Model(&magnumServiceRow{})).Updates(map[string]any{
				"report_count": gorm.Expr(s.q("report_count") + " + 1"),
				"last_seen_up": now,
				"updated_at":   now,
			}).Error
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	m, err := s.GetMagnumServiceByHostAndBinary(ctx, host, binary)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, serviceNotFound(host + "/" + binary)
	}
	return m, nil
}
