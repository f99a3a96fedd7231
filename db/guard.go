package db

import (
	"context"
	"fmt"
	"strings"

	"github.com/openstack/magnum-conductor/api/objects"
)

// ClusterCond is the condition of SaveClusterIf: the row is written only
// while its status is one of Status (nil: any status) and each field named
// in Fields still holds the value it has in Read (the row as the caller read
// it). Fields are scalar columns (ClusterGuardFields lists the ones the
// conductor's operations write).
type ClusterCond struct {
	Status []string
	Read   *objects.Cluster
	Fields []string
}

// NodeGroupCond is ClusterCond for a nodegroup (NodeGroupGuardFields).
type NodeGroupCond struct {
	Status []string
	Read   *objects.NodeGroup
	Fields []string
}

// ClusterGuardFields are the cluster fields an operation claims or writes
// besides its status: a save conditional on them and on the status loses to
// any operation that started since the row was read.
func ClusterGuardFields() []string {
	return []string{"status", "stack_id", "cluster_template_id", "ca_cert_ref", "magnum_cert_ref"}
}

// NodeGroupGuardFields are ClusterGuardFields for a nodegroup: what a
// resize, an upgrade or a nodegroup update writes.
func NodeGroupGuardFields() []string {
	return []string{"status", "node_count", "min_node_count", "max_node_count", "stack_id", "version", "image_id",
		"flavor_id"}
}

// clusterGuardValue is the database value of a guardable cluster field.
func clusterGuardValue(c *objects.Cluster, field string) (v *string, ok bool) {
	switch field {
	case "status":
		return enumPtr(c.Status), true
	case "stack_id":
		return c.StackID, true
	case "cluster_template_id":
		return c.ClusterTemplateID, true
	case "ca_cert_ref":
		return c.CACertRef, true
	case "magnum_cert_ref":
		return c.MagnumCertRef, true
	case "etcd_ca_cert_ref":
		return c.EtcdCACertRef, true
	case "front_proxy_ca_cert_ref":
		return c.FrontProxyCACertRef, true
	case "api_address":
		return c.APIAddress, true
	case "status_reason":
		// TEXT: compared in full (a resumption's note, see
		// statusmachine.Resume).
		return c.StatusReason, true
	case "name":
		return c.Name, true
	}
	return nil, false
}

// addClusterCond adds cond to w.
func (s *Store) addClusterCond(w *where, cond *ClusterCond) error {
	if cond.Status != nil {
		w.in(s.q("status"), cond.Status)
	}
	if len(cond.Fields) > 0 && cond.Read == nil {
		return fmt.Errorf("db: a conditional save on %v needs the row as read", cond.Fields)
	}
	for _, f := range cond.Fields {
		v, ok := clusterGuardValue(cond.Read, f)
		if !ok {
			return fmt.Errorf("db: cluster field %q cannot guard a save", f)
		}
		s.addEqual(w, f, v)
	}
	return nil
}

// addEqual adds col = v, or col IS NULL for nil.
func (s *Store) addEqual(w *where, col string, v *string) {
	if v == nil {
		w.add(s.q(col) + " IS NULL")
		return
	}
	w.add(s.q(col)+" = ?", *v)
}

// addNodeGroupCond adds cond to w.
func (s *Store) addNodeGroupCond(w *where, cond *NodeGroupCond) error {
	if cond.Status != nil {
		w.in(s.q("status"), cond.Status)
	}
	if len(cond.Fields) > 0 && cond.Read == nil {
		return fmt.Errorf("db: a conditional save on %v needs the row as read", cond.Fields)
	}
	n := cond.Read
	for _, f := range cond.Fields {
		switch f {
		case "status":
			s.addEqual(w, f, enumPtr(n.Status))
		case "stack_id":
			s.addEqual(w, f, n.StackID)
		case "version":
			s.addEqual(w, f, n.Version)
		case "image_id":
			s.addEqual(w, f, n.ImageID)
		case "flavor_id":
			s.addEqual(w, f, n.FlavorID)
		case "name":
			s.addEqual(w, f, &n.Name)
		case "node_count":
			// NULL reads as 1 (the object default).
			s.addCount(w, f, n.NodeCount, 1)
		case "min_node_count":
			s.addCount(w, f, n.MinNodeCount, 0)
		case "max_node_count":
			if n.MaxNodeCount == nil {
				w.add(s.q(f) + " IS NULL")
			} else {
				w.add(s.q(f)+" = ?", *n.MaxNodeCount)
			}
		default:
			return fmt.Errorf("db: nodegroup field %q cannot guard a save", f)
		}
	}
	return nil
}

// addCount adds col = v for a column whose NULL reads as def.
func (s *Store) addCount(w *where, col string, v, def int64) {
	if v == def {
		w.add("("+s.q(col)+" = ? OR "+s.q(col)+" IS NULL)", v)
		return
	}
	w.add(s.q(col)+" = ?", v)
}

// SaveClusterIf is SaveCluster under cond. When the row no longer matches
// it, nothing is written and the error matches ErrStatusChanged (another
// operation changed the cluster first); a row that is gone is
// ClusterNotFound.
func (s *Store) SaveClusterIf(ctx context.Context, c *objects.Cluster, cond ClusterCond) error {
	if cond.Status == nil && len(cond.Fields) == 0 {
		return fmt.Errorf("db: SaveClusterIf without a condition")
	}
	return s.saveCluster(ctx, c, &cond)
}

// SaveNodeGroupIf is SaveNodeGroup under cond, as SaveClusterIf.
func (s *Store) SaveNodeGroupIf(ctx context.Context, ng *objects.NodeGroup, cond NodeGroupCond) error {
	if cond.Status == nil && len(cond.Fields) == 0 {
		return fmt.Errorf("db: SaveNodeGroupIf without a condition")
	}
	return s.saveNodeGroup(ctx, ng, &cond)
}

// DestroyNodeGroupIf deletes the nodegroup uuid of clusterUUID while it
// matches cond; otherwise nothing is deleted and the error matches
// ErrStatusChanged (NodeGroupNotFound when it is gone).
func (s *Store) DestroyNodeGroupIf(ctx context.Context, clusterUUID, uuid string, cond NodeGroupCond) error {
	if cond.Status == nil && len(cond.Fields) == 0 {
		return fmt.Errorf("db: DestroyNodeGroupIf without a condition")
	}
	w := &where{}
	w.add(s.q("uuid")+" = ?", uuid)
	w.add(s.q("cluster_id")+" = ?", clusterUUID)
	if err := s.addNodeGroupCond(w, &cond); err != nil {
		return err
	}
	n, err := s.deleteRetried(ctx, "destroy nodegroup", w, &nodeGroupRow{})
	if err != nil {
		return err
	}
	if n == 0 {
		return s.noRowMatched(ctx, "nodegroup", uuid, cond.Status, cond.Fields, func() error {
			return nodeGroupNotFound(uuid)
		})
	}
	return nil
}

// noRowMatched explains a conditional write that matched nothing: the row
// is gone (notFound) or it no longer matches (ErrStatusChanged).
func (s *Store) noRowMatched(ctx context.Context, table, u string, allowed, fields []string, notFound func() error) error {
	var statuses []*string
	if err := s.ctxDB(ctx).Table(table).Where(s.q("uuid")+" = ?", u).Limit(1).
		Pluck("status", &statuses).Error; err != nil {
		return s.wrap("save "+table, err)
	}
	if len(statuses) == 0 {
		return notFound()
	}
	var want []string
	if allowed != nil {
		want = append(want, fmt.Sprintf("status one of %v", allowed))
	}
	if len(fields) > 0 {
		want = append(want, "unchanged "+strings.Join(fields, ", "))
	}
	return fmt.Errorf("%w: %s %s is %s, wanted %s", ErrStatusChanged, table, u, objects.Deref(statuses[0]),
		strings.Join(want, " and "))
}

// ClusterUnchanged reports whether now still holds read's values of the
// ClusterGuardFields: no operation started or handed over since read.
func ClusterUnchanged(read, now *objects.Cluster) bool {
	for _, f := range ClusterGuardFields() {
		a, _ := clusterGuardValue(read, f)
		b, _ := clusterGuardValue(now, f)
		if objects.Deref(a) != objects.Deref(b) || (a == nil) != (b == nil) {
			return false
		}
	}
	return true
}

// NodeGroupUnchanged is ClusterUnchanged for a nodegroup
// (NodeGroupGuardFields).
func NodeGroupUnchanged(read, now *objects.NodeGroup) bool {
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && objects.Deref(a) == objects.Deref(b) }
	eqInt := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return read.UUID == now.UUID && read.Status == now.Status && read.NodeCount == now.NodeCount &&
		read.MinNodeCount == now.MinNodeCount && eqInt(read.MaxNodeCount, now.MaxNodeCount) &&
		eq(read.StackID, now.StackID) && eq(read.Version, now.Version) && eq(read.ImageID, now.ImageID) &&
		eq(read.FlavorID, now.FlavorID)
}
