package db

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// X509KeyPairFilters are the filters of get_x509keypair_list.
type X509KeyPairFilters struct {
	ProjectID *string
	UserID    *string
}

func x509NotFound(ident any) error {
	return exception.ClassX509KeyPairNotFound.New(map[string]any{"x509keypair": ident})
}

func x509KeyPairPage() page {
	return page{table: "x509keypair", columns: x509KeyPairColumns(), markerCol: "uuid",
		notFound: func(m string) error { return x509NotFound(m) }}
}

// CreateX509KeyPair is create_x509keypair.
func (s *Store) CreateX509KeyPair(ctx context.Context, k *objects.X509KeyPair) error {
	if k.UUID == nil || *k.UUID == "" {
		k.UUID = objects.Str(uuid.NewString())
	}
	cols := addColumn(setColumns(k, x509KeyPairColumns()), "uuid", "created_at")
	row := x509KeyPairToRow(k)
	row.ID = 0
	if !objects.IsSet(k, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create x509keypair", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassX509KeyPairAlreadyExists.New(map[string]any{"uuid": *k.UUID})
		}
		return err
	}
	w := &where{}
	w.add(s.q("id")+" = ?", row.ID)
	r, err := getOne[x509KeyPairRow](ctx, s, w, func() error { return x509NotFound(row.ID) }, nil)
	if err != nil {
		return s.wrap("reload x509keypair", err)
	}
	v := k.ReceivedVersion()
	*k = *r.toObject()
	k.SetReceivedVersion(v)
	objects.ResetChanges(k)
	return nil
}

func (s *Store) getX509KeyPair(ctx context.Context, col string, v any) (*objects.X509KeyPair, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	w.add(s.q(col)+" = ?", v)
	r, err := getOne[x509KeyPairRow](ctx, s, w, func() error { return x509NotFound(v) }, nil)
	if err != nil {
		return nil, s.wrap("get x509keypair", err)
	}
	k := r.toObject()
	resetLoaded(k)
	return k, nil
}

// GetX509KeyPairByID is get_x509keypair_by_id (tenant-filtered).
func (s *Store) GetX509KeyPairByID(ctx context.Context, id int64) (*objects.X509KeyPair, error) {
	return s.getX509KeyPair(ctx, "id", id)
}

// GetX509KeyPairByUUID is get_x509keypair_by_uuid (tenant-filtered).
func (s *Store) GetX509KeyPairByUUID(ctx context.Context, u string) (*objects.X509KeyPair, error) {
	return s.getX509KeyPair(ctx, "uuid", u)
}

// ListX509KeyPairs is get_x509keypair_list.
func (s *Store) ListX509KeyPairs(ctx context.Context, opts ListOpts, f X509KeyPairFilters) ([]*objects.X509KeyPair, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	if f.ProjectID != nil {
		w.add(s.q("project_id")+" = ?", *f.ProjectID)
	}
	if f.UserID != nil {
		w.add(s.q("user_id")+" = ?", *f.UserID)
	}
	out, err := listLoaded(ctx, s, x509KeyPairPage(), w, opts, (*x509KeyPairRow).toObject)
	if err != nil {
		return nil, s.wrap("list x509keypairs", err)
	}
	return out, nil
}

// SaveX509KeyPair is X509KeyPair.save (update_x509keypair by uuid).
func (s *Store) SaveX509KeyPair(ctx context.Context, k *objects.X509KeyPair) error {
	if err := writable(k); err != nil {
		return err
	}
	if slices.Contains(objects.Changes(k), "uuid") {
		return uuidOverwrite("X509KeyPair")
	}
	if k.UUID == nil {
		return x509NotFound(nil)
	}
	cols := changedColumns(k, x509KeyPairColumns())
	if len(cols) == 0 {
		objects.ResetChanges(k)
		return nil
	}
	row := x509KeyPairToRow(k)
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = timePtr(s.now())
		cols = append(cols, "updated_at")
	}
	w := &where{}
	w.add(s.q("uuid")+" = ?", *k.UUID)
	n, err := s.updateRetried(ctx, "save x509keypair", row, w, cols)
	if err != nil {
		return err
	}
	if n == 0 {
		return x509NotFound(*k.UUID)
	}
	k.UpdatedAt = utcPtr(row.Updated)
	objects.ResetChanges(k)
	return nil
}

// DestroyX509KeyPair is destroy_x509keypair (by uuid or id). As in Magnum,
// the not-found error carries the identifier as its message.
func (s *Store) DestroyX509KeyPair(ctx context.Context, ident string) error {
	w := &where{}
	if err := s.identity(w, ident); err != nil {
		return err
	}
	n, err := s.deleteRetried(ctx, "destroy x509keypair", w, &x509KeyPairRow{})
	if err != nil {
		return err
	}
	if n != 1 {
		return exception.ClassX509KeyPairNotFound.WithMessage(ident, nil)
	}
	return nil
}
