package db

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// FederationFilters are the filters of get_federation_list. MemberIDs and
// Properties compare the whole JSON value, as Magnum's filter_by does.
type FederationFilters struct {
	Name          *string
	ProjectID     *string
	HostClusterID *string
	MemberIDs     []string
	Properties    map[string]string
	Status        []string
}

func federationNotFound(ident any) error {
	return exception.ClassFederationNotFound.New(map[string]any{"federation": ident})
}

func federationPage() page {
	return page{table: "federation", columns: federationColumns(), markerCol: "uuid",
		notFound: func(m string) error { return federationNotFound(m) }}
}

func (s *Store) federationFilters(w *where, f FederationFilters) {
	for _, kv := range []struct {
		col string
		v   *string
	}{{"name", f.Name}, {"project_id", f.ProjectID}, {"hostcluster_id", f.HostClusterID}} {
		if kv.v != nil {
			w.add(s.q(kv.col)+" = ?", *kv.v)
		}
	}
	if f.MemberIDs != nil {
		w.add(s.q("member_ids")+" = ?", pyJSON(f.MemberIDs))
	}
	if f.Properties != nil {
		w.add(s.q("properties")+" = ?", pyJSON(f.Properties))
	}
	if f.Status != nil {
		w.in(s.q("status"), f.Status)
	}
}

// CreateFederation is create_federation.
func (s *Store) CreateFederation(ctx context.Context, f *objects.Federation) error {
	if f.UUID == nil || *f.UUID == "" {
		f.UUID = objects.Str(uuid.NewString())
	}
	cols := addColumn(setColumns(f, federationColumns()), "uuid", "created_at")
	cols = addColumn(cols, "member_ids", "properties") // stored as [] / {} when unset, as Magnum does
	row := federationToRow(f)
	row.ID = 0
	if !objects.IsSet(f, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create federation", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassFederationAlreadyExists.New(map[string]any{"uuid": *f.UUID})
		}
		return err
	}
	w := &where{}
	w.add(s.q("id")+" = ?", row.ID)
	r, err := getOne[federationRow](ctx, s, w, func() error { return federationNotFound(row.ID) }, nil)
	if err != nil {
		return s.wrap("reload federation", err)
	}
	v := f.ReceivedVersion()
	keepMembers, keepProps := !objects.IsSet(f, "member_ids"), !objects.IsSet(f, "properties")
	*f = *r.toObject()
	f.SetReceivedVersion(v)
	// As Magnum's create: None stays None in the returned object.
	if keepMembers {
		f.MemberIDs = nil
	}
	if keepProps {
		f.Properties = nil
	}
	objects.ResetChanges(f)
	return nil
}

func (s *Store) getFederation(ctx context.Context, col string, v any, multiple bool) (*objects.Federation, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	w.add(s.q(col)+" = ?", v)
	var mult func() error
	if multiple {
		mult = func() error {
			return exception.Conflict("Multiple federations exist with same name. Please use the federation uuid instead.")
		}
	}
	r, err := getOne[federationRow](ctx, s, w, func() error { return federationNotFound(v) }, mult)
	if err != nil {
		return nil, s.wrap("get federation", err)
	}
	f := r.toObject()
	resetLoaded(f)
	return f, nil
}

// GetFederationByID is get_federation_by_id.
func (s *Store) GetFederationByID(ctx context.Context, id int64) (*objects.Federation, error) {
	return s.getFederation(ctx, "id", id, false)
}

// GetFederationByUUID is get_federation_by_uuid.
func (s *Store) GetFederationByUUID(ctx context.Context, u string) (*objects.Federation, error) {
	return s.getFederation(ctx, "uuid", u, false)
}

// GetFederationByName is get_federation_by_name.
func (s *Store) GetFederationByName(ctx context.Context, name string) (*objects.Federation, error) {
	return s.getFederation(ctx, "name", name, true)
}

// ListFederations is get_federation_list.
func (s *Store) ListFederations(ctx context.Context, opts ListOpts, f FederationFilters) ([]*objects.Federation, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	s.federationFilters(w, f)
	out, err := listLoaded(ctx, s, federationPage(), w, opts, (*federationRow).toObject)
	if err != nil {
		return nil, s.wrap("list federations", err)
	}
	return out, nil
}

// CountFederations is Federation.get_count_all.
func (s *Store) CountFederations(ctx context.Context, f FederationFilters) (int64, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	s.federationFilters(w, f)
	n, err := countRows[federationRow](ctx, s, w)
	return n, s.wrap("count federations", err)
}

// SaveFederation is Federation.save (update_federation by uuid).
func (s *Store) SaveFederation(ctx context.Context, f *objects.Federation) error {
	if err := writable(f); err != nil {
		return err
	}
	if slices.Contains(objects.Changes(f), "uuid") {
		return uuidOverwrite("Federation")
	}
	if f.UUID == nil {
		return federationNotFound(nil)
	}
	cols := changedColumns(f, federationColumns())
	if len(cols) == 0 {
		objects.ResetChanges(f)
		return nil
	}
	row := federationToRow(f)
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = timePtr(s.now())
		cols = append(cols, "updated_at")
	}
	w := &where{}
	w.add(s.q("uuid")+" = ?", *f.UUID)
	n, err := s.updateRetried(ctx, "save federation", row, w, cols)
	if err != nil {
		return err
	}
	if n == 0 {
		return federationNotFound(*f.UUID)
	}
	f.UpdatedAt = utcPtr(row.Updated)
	objects.ResetChanges(f)
	return nil
}

// DestroyFederation is destroy_federation (by uuid or id).
func (s *Store) DestroyFederation(ctx context.Context, ident string) error {
	w := &where{}
	if err := s.identity(w, ident); err != nil {
		return err
	}
	n, err := s.deleteRetried(ctx, "destroy federation", w, &federationRow{})
	if err != nil {
		return err
	}
	if n == 0 {
		return federationNotFound(ident)
	}
	return nil
}
