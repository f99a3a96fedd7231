package db

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// NodeGroupFilters are the filters of list_cluster_nodegroups. Status is an
// IN list.
type NodeGroupFilters struct {
	Name          *string
	NodeCount     *int64
	NodeAddresses []string
	Role          *string
	IsDefault     *bool
	Status        []string
}

func nodeGroupPage() page {
	return page{table: "nodegroup", columns: nodeGroupColumns(), markerCol: "uuid",
		notFound: func(m string) error { return exception.NodeGroupNotFound(m) }}
}

// CreateNodeGroup is create_nodegroup; a duplicate (uuid, or name in the
// cluster) is NodeGroupAlreadyExists. As with every Create*, only the fields
// set on n (objects.IsSet) are written; the others get the column default or
// NULL, which reads back as the object default, as in Magnum. A NodeCount of
// 0 on a nodegroup built in Go is set (see package objects), so it is
// stored as 0; only an unset one (absent from a received primitive, or
// objects.Unset) reads back as 1.
func (s *Store) CreateNodeGroup(ctx context.Context, n *objects.NodeGroup) error {
	if n.UUID == "" {
		n.UUID = uuid.NewString()
	}
	cols := addColumn(setColumns(n, nodeGroupColumns()), "uuid", "name", "cluster_id", "project_id",
		"created_at", "is_default")
	// JSON columns are stored as {} / [] when unset, as Magnum does.
	cols = addColumn(cols, "labels", "node_addresses", "node_labels", "node_taints")
	row := nodeGroupToRow(n)
	row.ID = 0
	if !objects.IsSet(n, "created_at") {
		row.Created = timePtr(s.now())
	}
	err := s.retry(ctx, "create nodegroup", func() error { return insert(s.ctxDB(ctx), row, cols) })
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassNodeGroupAlreadyExists.New(map[string]any{"cluster_id": n.ClusterID, "name": n.Name})
		}
		return err
	}
	unset := map[string]bool{}
	for _, f := range []string{"labels", "node_addresses", "node_labels", "node_taints"} {
		unset[f] = !objects.IsSet(n, f)
	}
	if err := s.reloadNodeGroup(ctx, n, row.ID); err != nil {
		return err
	}
	// As Magnum's create: None stays None in the returned object.
	if unset["labels"] {
		n.Labels = nil
	}
	if unset["node_addresses"] {
		n.NodeAddresses = nil
	}
	if unset["node_labels"] {
		n.NodeLabels = nil
	}
	if unset["node_taints"] {
		n.NodeTaints = nil
	}
	objects.ResetChanges(n)
	return nil
}

func (s *Store) reloadNodeGroup(ctx context.Context, n *objects.NodeGroup, id int64) error {
	w := &where{}
	w.add(s.q("id")+" = ?", id)
	r, err := getOne[nodeGroupRow](ctx, s, w, func() error { return exception.NodeGroupNotFound(id) }, nil)
	if err != nil {
		return s.wrap("reload nodegroup", err)
	}
	v := n.ReceivedVersion()
	*n = *r.toObject()
	n.SetReceivedVersion(v)
	objects.ResetChanges(n)
	return nil
}

func (s *Store) getNodeGroup(ctx context.Context, clusterUUID, col string, v any, ident any, multiple bool) (*objects.NodeGroup, error) {
	w := &where{}
	s.nodegroupTenantFilter(ctx, w)
	w.add(s.q("cluster_id")+" = ?", clusterUUID)
	w.add(s.q(col)+" = ?", v)
	var mult func() error
	if multiple {
		mult = func() error {
			return exception.Conflict("Multiple nodegroups exist with same name. Please use the nodegroup uuid instead.")
		}
	}
	r, err := getOne[nodeGroupRow](ctx, s, w, func() error { return exception.NodeGroupNotFound(ident) }, mult)
	if err != nil {
		return nil, s.wrap("get nodegroup", err)
	}
	n := r.toObject()
	resetLoaded(n)
	return n, nil
}

// GetNodeGroupByID is get_nodegroup_by_id.
func (s *Store) GetNodeGroupByID(ctx context.Context, clusterUUID string, id int64) (*objects.NodeGroup, error) {
	return s.getNodeGroup(ctx, clusterUUID, "id", id, id, false)
}

// GetNodeGroupByUUID is get_nodegroup_by_uuid.
func (s *Store) GetNodeGroupByUUID(ctx context.Context, clusterUUID, u string) (*objects.NodeGroup, error) {
	return s.getNodeGroup(ctx, clusterUUID, "uuid", u, u, false)
}

// GetNodeGroupByName is get_nodegroup_by_name.
func (s *Store) GetNodeGroupByName(ctx context.Context, clusterUUID, name string) (*objects.NodeGroup, error) {
	return s.getNodeGroup(ctx, clusterUUID, "name", name, name, true)
}

// ListNodeGroups is list_cluster_nodegroups.
// ListNodeGroupsOfClusters returns the nodegroups of every cluster in
// clusterUUIDs, by cluster, each cluster's in id order (ListNodeGroups'
// order), in one query per 500 clusters: the periodic status sync loads
// them for every cluster in progress at once instead of one query each.
func (s *Store) ListNodeGroupsOfClusters(ctx context.Context, clusterUUIDs []string) (map[string][]*objects.NodeGroup, error) {
	out := make(map[string][]*objects.NodeGroup, len(clusterUUIDs))
	for chunk := range slices.Chunk(clusterUUIDs, 500) {
		w := &where{}
		s.nodegroupTenantFilter(ctx, w)
		w.in(s.q("cluster_id"), chunk)
		ngs, err := listLoaded(ctx, s, nodeGroupPage(), w, ListOpts{}, (*nodeGroupRow).toObject)
		if err != nil {
			return nil, s.wrap("list nodegroups", err)
		}
		for _, ng := range ngs {
			out[ng.ClusterID] = append(out[ng.ClusterID], ng)
		}
	}
	return out, nil
}

func (s *Store) ListNodeGroups(ctx context.Context, clusterUUID string, opts ListOpts, f NodeGroupFilters) ([]*objects.NodeGroup, error) {
	w := &where{}
	s.nodegroupTenantFilter(ctx, w)
	w.add(s.q("cluster_id")+" = ?", clusterUUID)
	if f.Name != nil {
		w.add(s.q("name")+" = ?", *f.Name)
	}
	if f.NodeCount != nil {
		w.add(s.q("node_count")+" = ?", *f.NodeCount)
	}
	if f.NodeAddresses != nil {
		w.add(s.q("node_addresses")+" = ?", pyJSON(f.NodeAddresses))
	}
	if f.Role != nil {
		w.add(s.q("role")+" = ?", *f.Role)
	}
	if f.IsDefault != nil {
		w.add(s.q("is_default")+" = ?", *f.IsDefault)
	}
	if f.Status != nil {
		w.in(s.q("status"), f.Status)
	}
	out, err := listLoaded(ctx, s, nodeGroupPage(), w, opts, (*nodeGroupRow).toObject)
	if err != nil {
		return nil, s.wrap("list nodegroups", err)
	}
	return out, nil
}

// CountNodeGroups is get_cluster_nodegroup_count.
func (s *Store) CountNodeGroups(ctx context.Context, clusterUUID string) (int64, error) {
	w := &where{}
	s.nodegroupTenantFilter(ctx, w)
	w.add(s.q("cluster_id")+" = ?", clusterUUID)
	n, err := countRows[nodeGroupRow](ctx, s, w)
	return n, s.wrap("count nodegroups", err)
}

// SaveNodeGroup is NodeGroup.save: UPDATE of the changed fields by cluster
// and uuid.
func (s *Store) SaveNodeGroup(ctx context.Context, n *objects.NodeGroup) error {
	return s.saveNodeGroup(ctx, n, nil)
}

// SaveNodeGroupIfStatus is SaveNodeGroup only while the row's status is one
// of allowed; otherwise an error matching ErrStatusChanged.
func (s *Store) SaveNodeGroupIfStatus(ctx context.Context, n *objects.NodeGroup, allowed []string) error {
	if allowed == nil {
		allowed = []string{}
	}
	return s.saveNodeGroup(ctx, n, &NodeGroupCond{Status: allowed})
}

// saveNodeGroup writes n's changes, under cond when it is not nil.
func (s *Store) saveNodeGroup(ctx context.Context, n *objects.NodeGroup, cond *NodeGroupCond) error {
	if err := writable(n); err != nil {
		return err
	}
	cols := changedColumns(n, nodeGroupColumns())
	if len(cols) == 0 && cond == nil {
		objects.ResetChanges(n)
		return nil
	}
	row := nodeGroupToRow(n)
	row.ID = 0
	if !slices.Contains(cols, "updated_at") {
		row.Updated = timePtr(s.now())
		cols = append(cols, "updated_at")
	}
	w := &where{}
	w.add(s.q("uuid")+" = ?", n.UUID)
	w.add(s.q("cluster_id")+" = ?", n.ClusterID)
	if cond != nil {
		if err := s.addNodeGroupCond(w, cond); err != nil {
			return err
		}
	}
	var cnt int64
	err := s.retry(ctx, "save nodegroup", func() error {
		var err error
		cnt, err = updateWhere(s.ctxDB(ctx), row, w, cols)
		return err
	})
	if err != nil {
		if isDuplicate(err) {
			return exception.ClassNodeGroupAlreadyExists.New(map[string]any{"cluster_id": n.ClusterID, "name": n.Name})
		}
		return err
	}
	if cnt == 0 {
		if cond == nil {
			return exception.NodeGroupNotFound(n.UUID)
		}
		return s.noRowMatched(ctx, "nodegroup", n.UUID, cond.Status, cond.Fields, func() error {
			return exception.NodeGroupNotFound(n.UUID)
		})
	}
	n.UpdatedAt = utcPtr(row.Updated)
	objects.ResetChanges(n)
	return nil
}

func nodeGroupNotFound(ident string) error { return exception.NodeGroupNotFound(ident) }

// DestroyNodeGroup is destroy_nodegroup (by uuid or id, within the cluster).
func (s *Store) DestroyNodeGroup(ctx context.Context, clusterUUID, ident string) error {
	w := &where{}
	if err := s.identity(w, ident); err != nil {
		return err
	}
	w.add(s.q("cluster_id")+" = ?", clusterUUID)
	cnt, err := s.deleteRetried(ctx, "destroy nodegroup", w, &nodeGroupRow{})
	if err != nil {
		return err
	}
	if cnt == 0 {
		return exception.NodeGroupNotFound(ident)
	}
	return nil
}

// UpdateNodeGroupValues is NodeGroup.update_nodegroup: the nodegroup is
// found as NodeGroup.get does (an int-like ident by id, a uuid-like one by
// uuid, anything else by name; tenant-filtered), then values (column →
// value, as Python's dict) are written. JSON columns take maps and lists
// (None writes {} or []). Keys that are not columns, and id, created_at
// and updated_at, are ignored as SQLAlchemy's Model.update ignores unknown
// attributes; updated_at is set to now.
func (s *Store) UpdateNodeGroupValues(ctx context.Context, clusterUUID, ident string, values map[string]any) (*objects.NodeGroup, error) {
	var cur *objects.NodeGroup
	var err error
	if id, perr := strconv.ParseInt(strings.TrimSpace(ident), 10, 64); perr == nil {
		cur, err = s.GetNodeGroupByID(ctx, clusterUUID, id)
	} else if isUUIDLike(ident) {
		cur, err = s.GetNodeGroupByUUID(ctx, clusterUUID, ident)
	} else {
		cur, err = s.GetNodeGroupByName(ctx, clusterUUID, ident)
	}
	if err != nil {
		return nil, err
	}
	set := map[string]any{}
	for k, v := range values {
		if !slices.Contains(nodeGroupColumns(), k) || k == "id" || k == "created_at" || k == "updated_at" {
			s.log.DebugContext(ctx, "update_nodegroup: ignoring key", "key", k)
			continue
		}
		switch k {
		case "labels", "node_labels":
			if v == nil {
				v = "{}"
			} else {
				v = pyJSON(v)
			}
		case "node_addresses", "node_taints":
			if v == nil {
				v = "[]"
			} else {
				v = pyJSON(v)
			}
		}
		set[k] = v
	}
	set["updated_at"] = s.now()
	err = s.retry(ctx, "update nodegroup", func() error {
		res := s.ctxDB(ctx).Model(&nodeGroupRow{}).Where(s.q("id")+" = ?", cur.ID).Updates(set)
		if res.Error == nil && res.RowsAffected == 0 {
			return exception.NodeGroupNotFound(ident)
		}
		return res.Error
	})
	if err != nil {
		if isDuplicate(err) {
			return nil, exception.ClassNodeGroupAlreadyExists.New(map[string]any{"cluster_id": clusterUUID, "name": values["name"]})
		}
		return nil, err
	}
	n := &objects.NodeGroup{}
	if err := s.reloadNodeGroup(ctx, n, cur.ID); err != nil {
		return nil, err
	}
	return n, nil
}
