package db

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// QuotaFilters are the filters of get_quota_list.
type QuotaFilters struct {
	Resource  *string
	ProjectID *string
}

func quotaNotFound(project, resource string) error {
	return exception.ClassQuotaNotFound.New(map[string]any{
		"msg": fmt.Sprintf("project_id %s resource %s.", project, resource)})
}

func quotaPage() page {
	return page{table: "quotas", columns: quotaColumns(), markerCol: "id",
		notFound: func(m string) error {
			return exception.ClassQuotaNotFound.New(map[string]any{"msg": fmt.Sprintf("quota id %s .", m)})
		}}
}

// CreateQuota is create_quota; a duplicate (project, resource) is
// QuotaAlreadyExists.
func (s *Store) CreateQuota(ctx context.Context, q *objects.Quota) error {
	cols := addColumn(setColumns(q, quotaColumns()), "created_at", "project_id", "resource", "hard_limit")
	row := quotaToRow(q)
	row.ID = 0
	if !objects.IsSet(q, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create quota", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassQuotaAlreadyExists.New(map[string]any{"project_id": q.ProjectID, "resource": q.Resource})
		}
		return err
	}
	fresh, err := s.GetQuotaByID(ctx, row.ID)
	if err != nil {
		return err
	}
	v := q.ReceivedVersion()
	*q = *fresh
	q.SetReceivedVersion(v)
	objects.ResetChanges(q)
	return nil
}

// GetQuotaByProjectResource is get_quota_by_project_id_resource.
func (s *Store) GetQuotaByProjectResource(ctx context.Context, project, resource string) (*objects.Quota, error) {
	w := &where{}
	w.add(s.q("project_id")+" = ?", project)
	w.add(s.q("resource")+" = ?", resource)
	r, err := getOne[quotaRow](ctx, s, w, func() error { return quotaNotFound(project, resource) }, nil)
	if err != nil {
		return nil, s.wrap("get quota", err)
	}
	q := r.toObject()
	resetLoaded(q)
	return q, nil
}

// GetQuotaByID is get_quota_by_id.
func (s *Store) GetQuotaByID(ctx context.Context, id int64) (*objects.Quota, error) {
	w := &where{}
	w.add(s.q("id")+" = ?", id)
	r, err := getOne[quotaRow](ctx, s, w, func() error {
		return exception.ClassQuotaNotFound.New(map[string]any{"msg": fmt.Sprintf("quota id %d .", id)})
	}, nil)
	if err != nil {
		return nil, s.wrap("get quota", err)
	}
	q := r.toObject()
	resetLoaded(q)
	return q, nil
}

// ListQuotas is get_quota_list.
func (s *Store) ListQuotas(ctx context.Context, opts ListOpts, f QuotaFilters) ([]*objects.Quota, error) {
	w := &where{}
	if f.Resource != nil {
		w.add(s.q("resource")+" = ?", *f.Resource)
	}
	if f.ProjectID != nil {
		w.add(s.q("project_id")+" = ?", *f.ProjectID)
	}
	out, err := listLoaded(ctx, s, quotaPage(), w, opts, (*quotaRow).toObject)
	if err != nil {
		return nil, s.wrap("list quotas", err)
	}
	return out, nil
}

// ListQuotasByProject is quota_get_all_by_project_id.
func (s *Store) ListQuotasByProject(ctx context.Context, project string) ([]*objects.Quota, error) {
	return s.ListQuotas(ctx, ListOpts{}, QuotaFilters{ProjectID: &project})
}

// UpdateQuota is update_quota(project_id, values): values must name the
// "resource"; the other keys are columns to set (normally hard_limit).
func (s *Store) UpdateQuota(ctx context.Context, project string, values map[string]any) (*objects.Quota, error) {
	res, ok := values["resource"].(string)
	if !ok {
		return nil, exception.InvalidParameterValue("quota update needs a resource")
	}
	// The API sends Quota.as_dict(): only the data columns are written
	// (SQLAlchemy's Model.update ignores unknown keys; timestamps arrive as
	// text and are the store's to set).
	set := map[string]any{}
	for _, k := range []string{"project_id", "resource", "hard_limit"} {
		if v, ok := values[k]; ok {
			set[k] = v
		}
	}
	set["updated_at"] = s.now()
	var id int64
	err := s.retry(ctx, "update quota", func() error {
		return s.ctxDB(ctx).Transaction(func(tx *gorm.DB) error {
			var ids []int64
			if err := s.lockForUpdate(tx.Model(&quotaRow{})).Where(s.q("project_id")+" = ? AND "+s.q("resource")+" = ?",
				project, res).Pluck("id", &ids).Error; err != nil {
				return err
			}
			if len(ids) == 0 {
				return quotaNotFound(project, res)
			}
			id = ids[0]
			return tx.Model(&quotaRow{}).Where(s.q("id")+" = ?", id).Updates(set).Error
		})
	})
	if err != nil {
		return nil, err
	}
	return s.GetQuotaByID(ctx, id)
}

// DeleteQuota is delete_quota.
func (s *Store) DeleteQuota(ctx context.Context, project, resource string) error {
	var n int64
	err := s.retry(ctx, "delete quota", func() error {
		res := s.ctxDB(ctx).Where(s.q("project_id")+" = ? AND "+s.q("resource")+" = ?", project, resource).
			Delete(&quotaRow{})
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return quotaNotFound(project, resource)
	}
	return nil
}
