package db

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// ClusterFilters are the filters of get_cluster_list / get_cluster_count_all.
// Nil fields do not filter. Status is an IN list (an empty non-nil list
// matches nothing). NodeCount and MasterCount match the SUM of node_count
// over the cluster's worker / master nodegroups.
type ClusterFilters struct {
	ClusterTemplateID *string
	Name              *string
	StackID           *string
	APIAddress        *string
	ProjectID         *string
	UserID            *string
	Status            []string
	NodeCount         *int64
	MasterCount       *int64
}

func (s *Store) clusterFilters(w *where, f ClusterFilters) {
	for _, kv := range []struct {
		col string
		v   *string
	}{{"cluster_template_id", f.ClusterTemplateID}, {"name", f.Name}, {"stack_id", f.StackID},
		{"api_address", f.APIAddress}, {"project_id", f.ProjectID}, {"user_id", f.UserID}} {
		if kv.v != nil {
			w.add(s.q(kv.col)+" = ?", *kv.v)
		}
	}
	if f.Status != nil {
		w.in(s.q("status"), f.Status)
	}
	nodeCount := func(n int64, master bool) {
		op := "<>"
		if master {
			op = "="
		}
		w.add(s.q("uuid")+" IN (SELECT "+s.q("cluster_id")+" FROM "+s.q("nodegroup")+" WHERE "+s.q("role")+" "+op+
			" 'master' GROUP BY "+s.q("cluster_id")+" HAVING SUM("+s.q("node_count")+") = ?)", n)
	}
	if f.NodeCount != nil {
		nodeCount(*f.NodeCount, false)
	}
	if f.MasterCount != nil {
		nodeCount(*f.MasterCount, true)
	}
}

func clusterPage() page {
	return page{table: "cluster", columns: clusterColumns(), markerCol: "uuid",
		notFound: func(m string) error { return exception.ClusterNotFound(m) }}
}

// CreateCluster inserts c (create_cluster): a uuid4 when it has none, the
// set fields, model defaults for the rest. It fills ID, UUID, CreatedAt
// and the defaults into c and resets its changes. A duplicate uuid is
// ClusterAlreadyExists.
func (s *Store) CreateCluster(ctx context.Context, c *objects.Cluster) error {
	if c.UUID == nil || *c.UUID == "" {
		c.UUID = objects.Str(uuid.NewString())
	}
	cols := addColumn(setColumns(c, clusterColumns()), "uuid", "created_at", "floating_ip_enabled", "master_lb_enabled")
	// Magnum's ORM binds every column on insert and its JSON type writes
	// None as {} / []: an unset JSON column is stored as {}, not NULL.
	cols = addColumn(cols, "labels", "health_status_reason")
	row := clusterToRow(c)
	row.ID = 0
	if !objects.IsSet(c, "floating_ip_enabled") {
		row.FloatingIPEnabled = boolPtr(true)
	}
	if !objects.IsSet(c, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create cluster", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassClusterAlreadyExists.New(map[string]any{"uuid": *c.UUID})
		}
		return err
	}
	keepLabels, keepReason := !objects.IsSet(c, "labels"), !objects.IsSet(c, "health_status_reason")
	if err := s.reloadCluster(ctx, c, row.ID); err != nil {
		return err
	}
	// Like Magnum's create, the returned object keeps None for JSON fields
	// it did not set, although the row stores {} (a later read returns {}).
	if keepLabels {
		c.Labels = nil
	}
	if keepReason {
		c.HealthStatusReason = nil
	}
	objects.ResetChanges(c)
	return nil
}

// reloadCluster refreshes c from row id, keeping its template and version.
func (s *Store) reloadCluster(ctx context.Context, c *objects.Cluster, id int64) error {
	w := &where{}
	w.add(s.q("id")+" = ?", id)
	r, err := getOne[clusterRow](ctx, s, w, func() error { return exception.ClusterNotFound(id) }, nil)
	if err != nil {
		return s.wrap("reload cluster", err)
	}
	fresh := r.toObject()
	ct, v := c.ClusterTemplate, c.ReceivedVersion()
	*c = *fresh
	c.ClusterTemplate = ct
	c.SetReceivedVersion(v)
	objects.ResetChanges(c)
	return nil
}

func (s *Store) getCluster(ctx context.Context, col string, v any, ident any, multiple bool) (*objects.Cluster, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	w.add(s.q(col)+" = ?", v)
	var mult func() error
	if multiple {
		mult = func() error {
			return exception.Conflict("Multiple clusters exist with same name. Please use the cluster uuid instead.")
		}
	}
	r, err := getOne[clusterRow](ctx, s, w, func() error { return exception.ClusterNotFound(ident) }, mult)
	if err != nil {
		return nil, s.wrap("get cluster", err)
	}
	c := r.toObject()
	resetLoaded(c)
	return c, nil
}

// GetClusterByID is get_cluster_by_id (tenant-filtered).
func (s *Store) GetClusterByID(ctx context.Context, id int64) (*objects.Cluster, error) {
	return s.getCluster(ctx, "id", id, id, false)
}

// GetClusterByUUID is get_cluster_by_uuid (tenant-filtered).
func (s *Store) GetClusterByUUID(ctx context.Context, u string) (*objects.Cluster, error) {
	return s.getCluster(ctx, "uuid", u, u, false)
}

// GetClusterByName is get_cluster_by_name (tenant-filtered); several
// matches are a Conflict.
func (s *Store) GetClusterByName(ctx context.Context, name string) (*objects.Cluster, error) {
	return s.getCluster(ctx, "name", name, name, true)
}

// ListClusters is get_cluster_list.
func (s *Store) ListClusters(ctx context.Context, opts ListOpts, f ClusterFilters) ([]*objects.Cluster, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	s.clusterFilters(w, f)
	out, err := listLoaded(ctx, s, clusterPage(), w, opts, (*clusterRow).toObject)
	if err != nil {
		return nil, s.wrap("list clusters", err)
	}
	return out, nil
}

// CountClusters is get_cluster_count_all.
func (s *Store) CountClusters(ctx context.Context, f ClusterFilters) (int64, error) {
	w := &where{}
	s.tenantFilter(ctx, w)
	s.clusterFilters(w, f)
	n, err := countRows[clusterRow](ctx, s, w)
	return n, s.wrap("count clusters", err)
}

// ClusterStats is get_cluster_stats: the number of clusters and the sum of
// node_count over all nodegroups (masters included), for projectID or for
// every project when it is "". No tenant filter, as in Magnum.
func (s *Store) ClusterStats(ctx context.Context, projectID string) (clusters, nodes int64, err error) {
	cw, nw := &where{}, &where{}
	if projectID != "" {
		cw.add(s.q("project_id")+" = ?", projectID)
		nw.add(s.q("project_id")+" = ?", projectID)
	}
	clusters, err = countRows[clusterRow](ctx, s, cw)
	if err != nil {
		return 0, 0, s.wrap("cluster stats", err)
	}
	var sum *int64
	if err := nw.apply(s.ctxDB(ctx).Model(&nodeGroupRow{})).Select("SUM(" + s.q("node_count") + ")").
		Scan(&sum).Error; err != nil {
		return 0, 0, s.wrap("cluster stats", err)
	}
	if sum != nil {
		nodes = *sum
	}
	return clusters, nodes, nil
}

// SaveCluster is Cluster.save: an UPDATE of the changed fields, by uuid,
// with updated_at; then the object's changes are reset. ClusterNotFound
// when the row is gone; InvalidParameterValue when the uuid changed.
func (s *Store) SaveCluster(ctx context.Context, c *objects.Cluster) error {
	return s.saveCluster(ctx, c, nil)
}

// SaveClusterIfStatus is SaveCluster under the condition that the row's
// status is still one of allowed (UPDATE … WHERE uuid = ? AND status IN
// (…)). When it is not, nothing is written and the error matches
// ErrStatusChanged: another conductor changed the cluster first.
func (s *Store) SaveClusterIfStatus(ctx context.Context, c *objects.Cluster, allowed []string) error {
	if allowed == nil {
		allowed = []string{}
	}
	return s.saveCluster(ctx, c, &ClusterCond{Status: allowed})
}

// saveCluster writes c's changes, under cond when it is not nil.
func (s *Store) saveCluster(ctx context.Context, c *objects.Cluster, cond *ClusterCond) error {
	if err := writable(c); err != nil {
		return err
	}
	if slices.Contains(objects.Changes(c), "uuid") {
		return uuidOverwrite("Cluster")
	}
	if c.UUID == nil {
		return exception.ClusterNotFound(nil)
	}
	cols := changedColumns(c, clusterColumns())
	if len(cols) == 0 && cond == nil {
		objects.ResetChanges(c)
		return nil
	}
	now := s.now()
	row := clusterToRow(c)
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = &now
		cols = append(cols, "updated_at")
	}
	w := &where{}
	w.add(s.q("uuid")+" = ?", *c.UUID)
	if cond != nil {
		if err := s.addClusterCond(w, cond); err != nil {
			return err
		}
	}
	n, err := s.updateRetried(ctx, "save cluster", row, w, cols)
	if err != nil {
		return err
	}
	if n == 0 {
		if cond == nil {
			return exception.ClusterNotFound(*c.UUID)
		}
		return s.noRowMatched(ctx, "cluster", *c.UUID, cond.Status, cond.Fields, func() error {
			return exception.ClusterNotFound(*c.UUID)
		})
	}
	c.UpdatedAt = utcPtr(row.Updated)
	objects.ResetChanges(c)
	return nil
}

// DestroyCluster is destroy_cluster: a hard DELETE by uuid (or id);
// ClusterNotFound when no row matches.
func (s *Store) DestroyCluster(ctx context.Context, ident string) error {
	w := &where{}
	if err := s.identity(w, ident); err != nil {
		return err
	}
	n, err := s.deleteRetried(ctx, "destroy cluster", w, &clusterRow{})
	if err != nil {
		return err
	}
	if n == 0 {
		return exception.ClusterNotFound(ident)
	}
	return nil
}
