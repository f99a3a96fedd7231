package db_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

func TestNodeGroupCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateInProgress)
		must(t, s.CreateCluster(ctx, c))
		m := nodegroup(c, "default-master", "master", 3)
		w := nodegroup(c, "default-worker", "worker", 2)
		w.NodeLabels = map[string]string{"tier": "web"}
		w.NodeTaints = []map[string]any{{"key": "k", "value": "v", "effect": "NoSchedule"}}
		w.NodeAddresses = []string{"10.0.0.5"}
		must(t, s.CreateNodeGroup(ctx, m))
		must(t, s.CreateNodeGroup(ctx, w))
		if m.ID == 0 || len(m.UUID) != 36 {
			t.Fatalf("create did not fill id/uuid")
		}
		e := wantExc(t, s.CreateNodeGroup(ctx, nodegroup(c, "default-master", "master", 1)), exception.ClassNodeGroupAlreadyExists)
		if e.Message != "A node group with name default-master already exists in the cluster "+*c.UUID+"." {
			t.Fatalf("message %q", e.Message)
		}
		got, err := s.GetNodeGroupByName(ctx, *c.UUID, "default-worker")
		must(t, err)
		if got.NodeLabels["tier"] != "web" || len(got.NodeTaints) != 1 || got.NodeTaints[0]["effect"] != "NoSchedule" ||
			!slices.Equal(got.NodeAddresses, []string{"10.0.0.5"}) || got.NodeCount != 2 || !got.IsDefault {
			t.Fatalf("got %+v", got)
		}
		if _, err := s.GetNodeGroupByID(ctx, *c.UUID, m.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetNodeGroupByUUID(ctx, *c.UUID, m.UUID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetNodeGroupByUUID(ctx, "other-cluster", m.UUID)
		wantExc(t, err, exception.ClassNodeGroupNotFound)
		// Non-admin contexts only see their project's nodegroups.
		_, err = s.GetNodeGroupByUUID(projectCtx("p2"), *c.UUID, m.UUID)
		wantExc(t, err, exception.ClassNodeGroupNotFound)
		if _, err := s.GetNodeGroupByUUID(projectCtx("p1"), *c.UUID, m.UUID); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			name string
			f    db.NodeGroupFilters
			want []string
		}{
			{"all", db.NodeGroupFilters{}, []string{"default-master", "default-worker"}},
			{"role", db.NodeGroupFilters{Role: objects.Str("master")}, []string{"default-master"}},
			{"node_count", db.NodeGroupFilters{NodeCount: objects.Int(2)}, []string{"default-worker"}},
			{"is_default", db.NodeGroupFilters{IsDefault: new(bool)}, nil},
			{"node_addresses", db.NodeGroupFilters{NodeAddresses: []string{"10.0.0.5"}}, []string{"default-worker"}},
			{"status", db.NodeGroupFilters{Status: []string{objects.CreateComplete}}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l, err := s.ListNodeGroups(ctx, *c.UUID, db.ListOpts{SortKey: "name"}, tc.f)
				must(t, err)
				got := names(l, func(n *objects.NodeGroup) string { return n.Name })
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Fatalf("list = %v, want %v", got, tc.want)
				}
			})
		}
		n, err := s.CountNodeGroups(ctx, *c.UUID)
		must(t, err)
		if n != 2 {
			t.Fatalf("count = %d", n)
		}

		got.NodeCount = 5
		got.NodeTaints = nil
		must(t, s.SaveNodeGroup(ctx, got))
		again, err := s.GetNodeGroupByUUID(ctx, *c.UUID, got.UUID)
		must(t, err)
		if again.NodeCount != 5 || again.NodeTaints == nil || len(again.NodeTaints) != 0 {
			t.Fatalf("after save: count %d taints %#v (None must be written as [])", again.NodeCount, again.NodeTaints)
		}

		upd, err := s.UpdateNodeGroupValues(ctx, *c.UUID, strconv.FormatInt(got.ID, 10),
			map[string]any{"node_count": 7, "labels": map[string]string{"a": "b"}})
		must(t, err)
		if upd.NodeCount != 7 || upd.Labels["a"] != "b" {
			t.Fatalf("update values: %+v", upd)
		}
		_, err = s.UpdateNodeGroupValues(ctx, *c.UUID, "33333333-3333-3333-3333-333333333333", map[string]any{"node_count": 1})
		wantExc(t, err, exception.ClassNodeGroupNotFound)
		// By name, as NodeGroup.get resolves it; unknown keys are ignored.
		upd, err = s.UpdateNodeGroupValues(ctx, *c.UUID, "default-worker",
			map[string]any{"node_count": 8.0, "no_such_column": 1, "created_at": "2020-01-01T00:00:00Z", "node_taints": nil})
		must(t, err)
		if upd.NodeCount != 8 || upd.NodeTaints == nil || len(upd.NodeTaints) != 0 || upd.CreatedAt.Year() == 2020 {
			t.Fatalf("update by name: %+v", upd)
		}
		_, err = s.UpdateNodeGroupValues(projectCtx("p2"), *c.UUID, "default-worker", map[string]any{"node_count": 1})
		wantExc(t, err, exception.ClassNodeGroupNotFound)

		must(t, s.DestroyNodeGroup(ctx, *c.UUID, m.UUID))
		wantExc(t, s.DestroyNodeGroup(ctx, *c.UUID, m.UUID), exception.ClassNodeGroupNotFound)
	})
}

func TestNodeGroupSaveIfStatus(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateComplete)
		must(t, s.CreateCluster(ctx, c))
		ng := nodegroup(c, "w", "worker", 1)
		ng.Status = objects.CreateComplete
		must(t, s.CreateNodeGroup(ctx, ng))
		a, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)
		b, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)
		allowed := []string{objects.CreateComplete, objects.UpdateComplete}
		a.Status = objects.UpdateInProgress
		must(t, s.SaveNodeGroupIfStatus(ctx, a, allowed))
		b.Status = objects.DeleteInProgress
		if err := s.SaveNodeGroupIfStatus(ctx, b, allowed); !errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("err = %v, want ErrStatusChanged", err)
		}
		got, err := s.GetNodeGroupByUUID(ctx, *c.UUID, ng.UUID)
		must(t, err)
		if got.Status != objects.UpdateInProgress {
			t.Fatalf("status %s", got.Status)
		}
	})
}

// TestNodeGroupZeroCountIsStoredAsZero: a NodeCount of 0 written in Go is
// stored as 0 and reads back as 0, with no marking by hand; only a field
// made unset (objects.Unset, or absent from a received primitive) is left
// NULL and reads as the default 1, as in Magnum. The same holds for a
// cluster's floating_ip_enabled (default true) written as false.
func TestNodeGroupZeroCountIsStoredAsZero(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateComplete)
		c.FloatingIPEnabled = false
		must(t, s.CreateCluster(ctx, c))
		zero := nodegroup(c, "zero", "worker", 0)
		must(t, s.CreateNodeGroup(ctx, zero))
		unset := nodegroup(c, "unset", "worker", 0)
		objects.Unset(unset, "node_count")
		must(t, s.CreateNodeGroup(ctx, unset))

		got, err := s.GetNodeGroupByUUID(ctx, *c.UUID, zero.UUID)
		must(t, err)
		if zero.NodeCount != 0 || got.NodeCount != 0 {
			t.Fatalf("node_count 0 written in Go: created %d, read back %d, want 0", zero.NodeCount, got.NodeCount)
		}
		got, err = s.GetNodeGroupByUUID(ctx, *c.UUID, unset.UUID)
		must(t, err)
		if got.NodeCount != 1 {
			t.Fatalf("unset node_count read back %d, want the default 1", got.NodeCount)
		}
		gc, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		if gc.FloatingIPEnabled {
			t.Fatal("floating_ip_enabled false written in Go read back true")
		}
	})
}

func TestListNodeGroupsOfClusters(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		a := cluster("a", "p1", objects.UpdateInProgress)
		b := cluster("b", "p1", objects.UpdateInProgress)
		other := cluster("other", "p1", objects.CreateComplete)
		for _, c := range []*objects.Cluster{a, b, other} {
			must(t, s.CreateCluster(ctx, c))
			must(t, s.CreateNodeGroup(ctx, nodegroup(c, "default-master", "master", 1)))
			must(t, s.CreateNodeGroup(ctx, nodegroup(c, "default-worker", "worker", 2)))
		}
		must(t, s.CreateNodeGroup(ctx, nodegroup(a, "extra", "worker", 5)))
		// 600 unknown clusters first: the lookup runs in two chunks.
		ids := make([]string, 0, 602)
		for i := range 600 {
			ids = append(ids, "00000000-0000-0000-0000-"+strconv.Itoa(100000000000+i))
		}
		ids = append(ids, *a.UUID, *b.UUID)
		got, err := s.ListNodeGroupsOfClusters(ctx, ids)
		must(t, err)
		if len(got) != 2 {
			t.Fatalf("clusters = %d, want 2 (a, b; not the one not asked for)", len(got))
		}
		for _, tc := range []struct {
			c     *objects.Cluster
			names []string
		}{{a, []string{"default-master", "default-worker", "extra"}}, {b, []string{"default-master", "default-worker"}}} {
			want, err := s.ListNodeGroups(ctx, *tc.c.UUID, db.ListOpts{}, db.NodeGroupFilters{})
			must(t, err)
			ngs := got[*tc.c.UUID]
			var names []string
			for i, ng := range ngs {
				names = append(names, ng.Name)
				if ng.ID != want[i].ID || len(objects.Changes(ng)) != 0 || !objects.IsSet(ng, "node_count") {
					t.Errorf("%s: nodegroup %s differs from ListNodeGroups' or is not as loaded", *tc.c.Name, ng.Name)
				}
			}
			if !slices.Equal(names, tc.names) {
				t.Errorf("%s: %v, want %v", *tc.c.Name, names, tc.names)
			}
		}
		if none, err := s.ListNodeGroupsOfClusters(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("no clusters: %v, %v", none, err)
		}
	})
}
