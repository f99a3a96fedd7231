package db

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
)

// ClusterTemplateFilters are the filters of get_cluster_template_list. As
// in Magnum they narrow only the caller's own templates: public templates
// are unioned in regardless.
type ClusterTemplateFilters struct {
	Name              *string
	ImageID           *string
	FlavorID          *string
	MasterFlavorID    *string
	KeypairID         *string
	ExternalNetworkID *string
	DNSNameserver     *string
	ProjectID         *string
	UserID            *string
	Labels            map[string]string
}

func clusterTemplatePage() page {
	return page{table: "cluster_template", columns: clusterTemplateColumns(), markerCol: "uuid",
		notFound: func(m string) error { return exception.ClusterTemplateNotFound(m) }}
}

// ctVisible is the union of get_cluster_template_*: the caller's templates
// (tenant filter plus extra) OR public ones. For list, public hidden ones
// only for admins; for get, every public one.
func (s *Store) ctVisible(ctx context.Context, extra func(*where), list bool) *where {
	own := &where{}
	s.tenantFilter(ctx, own)
	if extra != nil {
		extra(own)
	}
	pub := s.q("public") + " = 1"
	if list {
		pub = "(" + s.q("public") + " = 1 AND " + s.q("hidden") + " = 0)"
		if request.From(ctx).IsAdmin {
			pub = "(" + s.q("public") + " = 1 AND " + s.q("hidden") + " IN (0, 1))"
		}
	}
	w := &where{}
	w.add(own.sql()+" OR "+pub, own.args...)
	return w
}

// CreateClusterTemplate is create_cluster_template.
func (s *Store) CreateClusterTemplate(ctx context.Context, t *objects.ClusterTemplate) error {
	if t.UUID == nil || *t.UUID == "" {
		t.UUID = objects.Str(uuid.NewString())
	}
	cols := addColumn(setColumns(t, clusterTemplateColumns()), "uuid", "created_at", "registry_enabled",
		"tls_disabled", "public", "master_lb_enabled", "floating_ip_enabled", "hidden")
	cols = addColumn(cols, "labels") // stored as {} when unset, as Magnum does
	row := clusterTemplateToRow(t)
	row.ID = 0
	if !objects.IsSet(t, "floating_ip_enabled") {
		row.FloatingIPEnabled = boolPtr(true)
	}
	if !objects.IsSet(t, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create cluster template", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassClusterTemplateAlreadyExists.New(map[string]any{"uuid": *t.UUID})
		}
		return err
	}
	keepLabels := !objects.IsSet(t, "labels")
	if err := s.reloadClusterTemplate(ctx, t, row.ID); err != nil {
		return err
	}
	// As Magnum's create: None stays None in the returned object.
	if keepLabels {
		t.Labels = nil
		objects.ResetChanges(t)
	}
	return nil
}

func (s *Store) reloadClusterTemplate(ctx context.Context, t *objects.ClusterTemplate, id int64) error {
	w := &where{}
	w.add(s.q("id")+" = ?", id)
	r, err := getOne[clusterTemplateRow](ctx, s, w, func() error { return exception.ClusterTemplateNotFound(id) }, nil)
	if err != nil {
		return s.wrap("reload cluster template", err)
	}
	v := t.ReceivedVersion()
	*t = *r.toObject()
	t.SetReceivedVersion(v)
	objects.ResetChanges(t)
	return nil
}

func (s *Store) getClusterTemplate(ctx context.Context, col string, v any, ident any, multiple bool) (*objects.ClusterTemplate, error) {
	w := s.ctVisible(ctx, nil, false)
	w.add(s.q(col)+" = ?", v)
	var mult func() error
	if multiple {
		mult = func() error {
			return exception.Conflict("Multiple ClusterTemplates exist with same name. Please use the ClusterTemplate uuid instead.")
		}
	}
	r, err := getOne[clusterTemplateRow](ctx, s, w, func() error { return exception.ClusterTemplateNotFound(ident) }, mult)
	if err != nil {
		return nil, s.wrap("get cluster template", err)
	}
	t := r.toObject()
	resetLoaded(t)
	return t, nil
}

// GetClusterTemplateByID is get_cluster_template_by_id (own or public).
func (s *Store) GetClusterTemplateByID(ctx context.Context, id int64) (*objects.ClusterTemplate, error) {
	return s.getClusterTemplate(ctx, "id", id, id, false)
}

// GetClusterTemplateByUUID is get_cluster_template_by_uuid (own or public).
func (s *Store) GetClusterTemplateByUUID(ctx context.Context, u string) (*objects.ClusterTemplate, error) {
	return s.getClusterTemplate(ctx, "uuid", u, u, false)
}

// GetClusterTemplateByName is get_cluster_template_by_name (own or public).
func (s *Store) GetClusterTemplateByName(ctx context.Context, name string) (*objects.ClusterTemplate, error) {
	return s.getClusterTemplate(ctx, "name", name, name, true)
}

// ListClusterTemplates is get_cluster_template_list.
func (s *Store) ListClusterTemplates(ctx context.Context, opts ListOpts, f ClusterTemplateFilters) ([]*objects.ClusterTemplate, error) {
	w := s.ctVisible(ctx, func(w *where) {
		for _, kv := range []struct {
			col string
			v   *string
		}{{"name", f.Name}, {"image_id", f.ImageID}, {"flavor_id", f.FlavorID},
			{"master_flavor_id", f.MasterFlavorID}, {"keypair_id", f.KeypairID},
			{"external_network_id", f.ExternalNetworkID}, {"dns_nameserver", f.DNSNameserver},
			{"project_id", f.ProjectID}, {"user_id", f.UserID}} {
			if kv.v != nil {
				w.add(s.q(kv.col)+" = ?", *kv.v)
			}
		}
		if f.Labels != nil {
			w.add(s.q("labels")+" = ?", pyJSON(f.Labels))
		}
	}, true)
	out, err := listLoaded(ctx, s, clusterTemplatePage(), w, opts, (*clusterTemplateRow).toObject)
	if err != nil {
		return nil, s.wrap("list cluster templates", err)
	}
	return out, nil
}

func (s *Store) clusterTemplateReferenced(tx *gorm.DB, u string) (bool, error) {
	var n int64
	err := tx.Model(&clusterRow{}).Where(s.q("cluster_template_id")+" = ?", u).Count(&n).Error
	return n != 0, err
}

// isPublishing is _is_publishing_cluster_template.
func isPublishing(t *objects.ClusterTemplate, cols []string) bool {
	if len(cols) != 1 {
		return false
	}
	switch cols[0] {
	case "public":
		return t.Public
	case "hidden":
		return true
	case "tags":
		return t.Tags != nil
	}
	return false
}

// SaveClusterTemplate is ClusterTemplate.save (update_cluster_template): a
// template referenced by a cluster may only be renamed, published, hidden
// or tagged; anything else is ClusterTemplateReferenced.
func (s *Store) SaveClusterTemplate(ctx context.Context, t *objects.ClusterTemplate) error {
	if err := writable(t); err != nil {
		return err
	}
	if slices.Contains(objects.Changes(t), "uuid") {
		return uuidOverwrite("ClusterTemplate")
	}
	if t.UUID == nil {
		return exception.ClusterTemplateNotFound(nil)
	}
	cols := changedColumns(t, clusterTemplateColumns())
	if len(cols) == 0 {
		objects.ResetChanges(t)
		return nil
	}
	row := clusterTemplateToRow(t)
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = timePtr(s.now())
	}
	valueCols := slices.Clone(cols)
	cols = addColumn(cols, "updated_at")
	u := *t.UUID
	err := s.retry(ctx, "save cluster template", func() error {
		return s.ctxDB(ctx).Transaction(func(tx *gorm.DB) error {
			var ids []int64
			if err := s.lockForUpdate(tx.Model(&clusterTemplateRow{})).Where(s.q("uuid")+" = ?", u).
				Pluck("id", &ids).Error; err != nil {
				return err
			}
			if len(ids) == 0 {
				return exception.ClusterTemplateNotFound(u)
			}
			ref, err := s.clusterTemplateReferenced(tx, u)
			if err != nil {
				return err
			}
			if ref && !isPublishing(t, valueCols) && !slices.Equal(valueCols, []string{"name"}) {
				return exception.ClassClusterTemplateReferenced.New(map[string]any{"clustertemplate": u})
			}
			w := &where{}
			w.add(s.q("id")+" = ?", ids[0])
			_, err = updateWhere(tx, row, w, cols)
			return err
		})
	})
	if err != nil {
		return err
	}
	t.UpdatedAt = utcPtr(row.Updated)
	objects.ResetChanges(t)
	return nil
}

// DestroyClusterTemplate is destroy_cluster_template: ClusterTemplateNotFound
// when absent, ClusterTemplateReferenced when a cluster uses it.
func (s *Store) DestroyClusterTemplate(ctx context.Context, ident string) error {
	w := &where{}
	if err := s.identity(w, ident); err != nil {
		return err
	}
	return s.retry(ctx, "destroy cluster template", func() error {
		return s.ctxDB(ctx).Transaction(func(tx *gorm.DB) error {
			var uuids []*string
			if err := s.lockForUpdate(w.apply(tx.Model(&clusterTemplateRow{}))).Pluck("uuid", &uuids).Error; err != nil {
				return err
			}
			if len(uuids) == 0 {
				return exception.ClusterTemplateNotFound(ident)
			}
			ref, err := s.clusterTemplateReferenced(tx, objects.Deref(uuids[0]))
			if err != nil {
				return err
			}
			if ref {
				return exception.ClassClusterTemplateReferenced.New(map[string]any{"clustertemplate": ident})
			}
			return w.apply(tx).Delete(&clusterTemplateRow{}).Error
		})
	})
}
