package db_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// TestReadOnlyListEncodesAsALoadAndRefusesSaves: a list loaded read-only
// (as the indirection API's list remotables do) encodes to the same
// primitives as an ordinary list, and a save of one of its objects is
// refused without writing anything.
func TestReadOnlyListEncodesAsALoadAndRefusesSaves(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		ct := template("ct", "p1", true, false)
		must(t, s.CreateClusterTemplate(ctx, ct))
		for _, name := range []string{"a", "b"} {
			c := cluster(name, "p1", objects.CreateComplete)
			c.Labels = map[string]string{"k": name}
			must(t, s.CreateCluster(ctx, c))
			must(t, s.CreateNodeGroup(ctx, nodegroup(c, "default-worker", objects.RoleWorker, 2)))
		}
		lists := func(opts db.ListOpts) []objects.Object {
			cs, err := s.ListClusters(ctx, opts, db.ClusterFilters{})
			must(t, err)
			cts, err := s.ListClusterTemplates(ctx, opts, db.ClusterTemplateFilters{})
			must(t, err)
			ngs, err := s.ListNodeGroups(ctx, *cs[0].UUID, opts, db.NodeGroupFilters{})
			must(t, err)
			var out []objects.Object
			for _, c := range cs {
				out = append(out, c)
			}
			for _, ct := range cts {
				out = append(out, ct)
			}
			for _, ng := range ngs {
				out = append(out, ng)
			}
			return out
		}
		plain, ro := lists(db.ListOpts{}), lists(db.ListOpts{ReadOnly: true})
		if len(plain) != 4 || len(ro) != len(plain) {
			t.Fatalf("%d objects listed, %d read-only", len(plain), len(ro))
		}
		for i := range plain {
			want, err := objects.AppendPrimitiveJSON(nil, plain[i], objects.EncodeOptions{})
			must(t, err)
			got, err := objects.AppendPrimitiveJSON(nil, ro[i], objects.EncodeOptions{})
			must(t, err)
			if !bytes.Equal(got, want) || !objects.IsReadOnly(ro[i]) || objects.IsReadOnly(plain[i]) {
				t.Errorf("object %d:\n got %s\nwant %s", i, got, want)
			}
		}

		c := ro[0].(*objects.Cluster)
		c.Status = objects.UpdateInProgress
		if err := s.SaveCluster(ctx, c); !errors.Is(err, db.ErrReadOnly) {
			t.Errorf("SaveCluster of a read-only cluster: %v", err)
		}
		if err := s.SaveClusterTemplate(ctx, ro[2].(*objects.ClusterTemplate)); !errors.Is(err, db.ErrReadOnly) {
			t.Errorf("SaveClusterTemplate of a read-only template: %v", err)
		}
		ng := ro[3].(*objects.NodeGroup)
		ng.NodeCount = 7
		if err := s.SaveNodeGroupIfStatus(ctx, ng, nil); !errors.Is(err, db.ErrReadOnly) {
			t.Errorf("SaveNodeGroupIfStatus of a read-only nodegroup: %v", err)
		}
		row, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		if row.Status != objects.CreateComplete {
			t.Errorf("a refused save wrote status %s", row.Status)
		}
		ngRow, err := s.GetNodeGroupByUUID(ctx, ng.ClusterID, ng.UUID)
		must(t, err)
		if ngRow.NodeCount != 2 {
			t.Errorf("a refused save wrote node_count %d", ngRow.NodeCount)
		}
		// Made ordinary again, it saves as usual.
		objects.ResetChanges(c)
		c.Status = objects.UpdateInProgress
		must(t, s.SaveCluster(ctx, c))
	})
}
