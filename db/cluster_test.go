package db_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

func TestClusterCreateGetDefaults(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c1", "p1", objects.CreateInProgress)
		c.Labels = map[string]string{"k": "v"}
		// Unset, as in a primitive that leaves it out: false written in Go
		// would be stored as false.
		objects.Unset(c, "floating_ip_enabled")
		must(t, s.CreateCluster(ctx, c))
		if c.ID == 0 || c.UUID == nil || len(*c.UUID) != 36 {
			t.Fatalf("create did not fill id/uuid: %d %v", c.ID, c.UUID)
		}
		recent(t, "created_at", c.CreatedAt)
		if !c.FloatingIPEnabled || c.MasterLBEnabled {
			t.Fatalf("model defaults not applied: fip=%v lb=%v", c.FloatingIPEnabled, c.MasterLBEnabled)
		}
		if len(objects.Changes(c)) != 0 {
			t.Fatalf("changes after create: %v", objects.Changes(c))
		}
		for _, get := range []func() (*objects.Cluster, error){
			func() (*objects.Cluster, error) { return s.GetClusterByID(ctx, c.ID) },
			func() (*objects.Cluster, error) { return s.GetClusterByUUID(ctx, *c.UUID) },
			func() (*objects.Cluster, error) { return s.GetClusterByName(ctx, "c1") },
		} {
			got, err := get()
			must(t, err)
			if got.ID != c.ID || *got.UUID != *c.UUID || got.Status != objects.CreateInProgress ||
				got.Labels["k"] != "v" || !got.FloatingIPEnabled || got.HealthStatus != "" {
				t.Fatalf("got %+v", got)
			}
			if len(objects.Changes(got)) != 0 {
				t.Fatalf("loaded object has changes %v", objects.Changes(got))
			}
		}
		dup := cluster("c1b", "p1", objects.CreateInProgress)
		dup.UUID = c.UUID
		e := wantExc(t, s.CreateCluster(ctx, dup), exception.ClassClusterAlreadyExists)
		if e.Message != "A cluster with UUID "+*c.UUID+" already exists." {
			t.Fatalf("message %q", e.Message)
		}
		_, err := s.GetClusterByUUID(ctx, "00000000-0000-0000-0000-000000000000")
		wantExc(t, err, exception.ClassClusterNotFound)
		_, err = s.GetClusterByID(ctx, 999999)
		wantExc(t, err, exception.ClassClusterNotFound)
	})
}

func TestClusterByNameConflict(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		must(t, s.CreateCluster(ctx, cluster("same", "p1", objects.CreateComplete)))
		must(t, s.CreateCluster(ctx, cluster("same", "p2", objects.CreateComplete)))
		_, err := s.GetClusterByName(ctx, "same")
		e := wantExc(t, err, exception.ClassConflict)
		if e.Message != "Multiple clusters exist with same name. Please use the cluster uuid instead." {
			t.Fatalf("message %q", e.Message)
		}
		// Tenant-scoped: each project sees only its own.
		got, err := s.GetClusterByName(projectCtx("p2"), "same")
		must(t, err)
		if objects.Deref(got.ProjectID) != "p2" {
			t.Fatalf("got project %v", objects.Deref(got.ProjectID))
		}
		_, err = s.GetClusterByName(ctx, "missing")
		e = wantExc(t, err, exception.ClassClusterNotFound)
		if e.Message != "Cluster missing could not be found." {
			t.Fatalf("message %q", e.Message)
		}
	})
}

func TestClusterTenantFilter(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		a := cluster("a", "p1", objects.CreateComplete)
		b := cluster("b", "p2", objects.CreateComplete)
		must(t, s.CreateCluster(ctx, a))
		must(t, s.CreateCluster(ctx, b))
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want []string
		}{
			{"admin all tenants", adminCtx(), []string{"a", "b"}},
			{"no request context is admin", context.Background(), []string{"a", "b"}},
			{"project p1", projectCtx("p1"), []string{"a"}},
			{"user of p2 without project", userCtx("user-p2"), []string{"b"}},
			{"admin without all_tenants is scoped", withProject(true, "p2"), []string{"b"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, err := s.ListClusters(tc.ctx, db.ListOpts{}, db.ClusterFilters{})
				must(t, err)
				got := names(list, func(c *objects.Cluster) string { return *c.Name })
				if !slices.Equal(got, tc.want) {
					t.Fatalf("list = %v, want %v", got, tc.want)
				}
				n, err := s.CountClusters(tc.ctx, db.ClusterFilters{})
				must(t, err)
				if n != int64(len(tc.want)) {
					t.Fatalf("count = %d", n)
				}
			})
		}
		_, err := s.GetClusterByUUID(projectCtx("p1"), *b.UUID)
		wantExc(t, err, exception.ClassClusterNotFound)
	})
}

func TestClusterListFiltersAndCounts(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		mk := func(name, status string, masters, workers []int64) *objects.Cluster {
			c := cluster(name, "p1", status)
			must(t, s.CreateCluster(ctx, c))
			for i, n := range masters {
				must(t, s.CreateNodeGroup(ctx, nodegroup(c, name+"-m"+string(rune('0'+i)), "master", n)))
			}
			for i, n := range workers {
				must(t, s.CreateNodeGroup(ctx, nodegroup(c, name+"-w"+string(rune('0'+i)), "worker", n)))
			}
			return c
		}
		mk("x", objects.CreateInProgress, []int64{1}, []int64{2, 1})
		mk("y", objects.UpdateInProgress, []int64{3}, []int64{3})
		z := mk("z", objects.CreateComplete, []int64{1}, []int64{1})
		z.StackID = objects.Str("stack-z")
		must(t, s.SaveCluster(ctx, z))
		for _, tc := range []struct {
			name string
			f    db.ClusterFilters
			want []string
		}{
			{"status in", db.ClusterFilters{Status: []string{objects.CreateInProgress, objects.UpdateInProgress}}, []string{"x", "y"}},
			{"empty status list matches nothing", db.ClusterFilters{Status: []string{}}, nil},
			{"node_count sums workers", db.ClusterFilters{NodeCount: objects.Int(3)}, []string{"x", "y"}},
			{"master_count", db.ClusterFilters{MasterCount: objects.Int(1)}, []string{"x", "z"}},
			{"both counts", db.ClusterFilters{NodeCount: objects.Int(3), MasterCount: objects.Int(3)}, []string{"y"}},
			{"name", db.ClusterFilters{Name: objects.Str("y")}, []string{"y"}},
			{"stack_id", db.ClusterFilters{StackID: objects.Str("stack-z")}, []string{"z"}},
			{"project and template", db.ClusterFilters{ProjectID: objects.Str("p1"), ClusterTemplateID: objects.Str("ct-p1")}, []string{"x", "y", "z"}},
			{"user", db.ClusterFilters{UserID: objects.Str("nobody")}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, err := s.ListClusters(ctx, db.ListOpts{}, tc.f)
				must(t, err)
				got := names(list, func(c *objects.Cluster) string { return *c.Name })
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Fatalf("list = %v, want %v", got, tc.want)
				}
				n, err := s.CountClusters(ctx, tc.f)
				must(t, err)
				if n != int64(len(tc.want)) {
					t.Fatalf("count = %d, want %d", n, len(tc.want))
				}
			})
		}
		clusters, nodes, err := s.ClusterStats(ctx, "p1")
		must(t, err)
		if clusters != 3 || nodes != 1+2+1+3+3+1+1 {
			t.Fatalf("stats = %d, %d", clusters, nodes)
		}
		clusters, nodes, err = s.ClusterStats(ctx, "nobody")
		must(t, err)
		if clusters != 0 || nodes != 0 {
			t.Fatalf("stats for empty project = %d, %d", clusters, nodes)
		}
	})
}

func TestClusterPagination(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		// Names chosen so that sorting by name differs from id order, with
		// a tie broken by id.
		for _, n := range []string{"d", "b", "a", "c", "b"} {
			must(t, s.CreateCluster(ctx, cluster(n, "p1", objects.CreateComplete)))
		}
		all, err := s.ListClusters(ctx, db.ListOpts{SortKey: "name"}, db.ClusterFilters{})
		must(t, err)
		if got := names(all, func(c *objects.Cluster) string { return *c.Name }); !slices.Equal(got, []string{"a", "b", "b", "c", "d"}) {
			t.Fatalf("sorted by name: %v", got)
		}
		if all[1].ID > all[2].ID {
			t.Fatal("ties are not ordered by id")
		}
		// Walk pages of 2 using the marker, ascending and descending.
		for _, dir := range []string{"asc", "desc"} {
			var walked []int64
			marker := ""
			for range 10 {
				page, err := s.ListClusters(ctx, db.ListOpts{Limit: 2, Marker: marker, SortKey: "name", SortDir: dir}, db.ClusterFilters{})
				must(t, err)
				if len(page) == 0 {
					break
				}
				for _, c := range page {
					walked = append(walked, c.ID)
				}
				marker = *page[len(page)-1].UUID
			}
			want := make([]int64, len(all))
			for i, c := range all {
				want[i] = c.ID
			}
			if dir == "desc" {
				slices.Reverse(want)
			}
			if !slices.Equal(walked, want) {
				t.Fatalf("%s pages walked %v, want %v", dir, walked, want)
			}
		}
		_, err = s.ListClusters(ctx, db.ListOpts{SortKey: "bogus"}, db.ClusterFilters{})
		e := wantExc(t, err, exception.ClassInvalidParameterValue)
		if e.Message != `The sort_key value "bogus" is an invalid field for sorting` {
			t.Fatalf("message %q", e.Message)
		}
		_, err = s.ListClusters(ctx, db.ListOpts{SortDir: "sideways"}, db.ClusterFilters{})
		if e := (*exception.Error)(nil); !errors.As(err, &e) || e.Class != "ValueError" || e.Module != exception.ModuleBuiltins {
			t.Fatalf("bad sort dir: %v", err)
		}
		_, err = s.ListClusters(ctx, db.ListOpts{Marker: "00000000-0000-0000-0000-000000000000"}, db.ClusterFilters{})
		wantExc(t, err, exception.ClassClusterNotFound)
	})
}

func TestClusterSaveWritesOnlyChanges(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateInProgress)
		must(t, s.CreateCluster(ctx, c))
		// Two copies loaded; each changes a different field.
		a, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		b, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		a.StatusReason = objects.Str("from a")
		must(t, s.SaveCluster(ctx, a))
		recent(t, "updated_at", a.UpdatedAt)
		b.APIAddress = objects.Str("https://10.0.0.1:6443")
		b.Labels = nil // unchanged nil stays unchanged
		must(t, s.SaveCluster(ctx, b))
		got, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		if objects.Deref(got.StatusReason) != "from a" || objects.Deref(got.APIAddress) != "https://10.0.0.1:6443" {
			t.Fatalf("lost update: reason=%v api=%v", objects.Deref(got.StatusReason), objects.Deref(got.APIAddress))
		}
		if len(objects.Changes(b)) != 0 {
			t.Fatal("changes not reset after save")
		}
		// The uuid cannot change.
		got.UUID = objects.Str("11111111-1111-1111-1111-111111111111")
		e := wantExc(t, s.SaveCluster(ctx, got), exception.ClassInvalidParameterValue)
		if e.Message != "Cannot overwrite UUID for an existing Cluster." {
			t.Fatalf("message %q", e.Message)
		}
		// Saving a destroyed cluster is ClusterNotFound.
		must(t, s.DestroyCluster(ctx, *c.UUID))
		a.Status = objects.CreateFailed
		wantExc(t, s.SaveCluster(ctx, a), exception.ClassClusterNotFound)
		wantExc(t, s.DestroyCluster(ctx, *c.UUID), exception.ClassClusterNotFound)
		wantExc(t, s.DestroyCluster(ctx, "not-a-uuid"), exception.ClassInvalidIdentity)
	})
}

func TestClusterSaveIfStatusSerializesConductors(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateComplete)
		must(t, s.CreateCluster(ctx, c))
		allowed := []string{objects.CreateComplete, objects.UpdateComplete, objects.UpdateFailed}
		// Eight "conductors" race to start an update; exactly one wins.
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() {
				mine, err := s.GetClusterByUUID(ctx, *c.UUID)
				if err != nil {
					results[i] = err
					return
				}
				mine.Status = objects.UpdateInProgress
				results[i] = s.SaveClusterIfStatus(ctx, mine, allowed)
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range results {
			switch {
			case err == nil:
				wins++
			case errors.Is(err, db.ErrStatusChanged):
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d conductors won, want 1 (%v)", wins, results)
		}
		got, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		if got.Status != objects.UpdateInProgress {
			t.Fatalf("status %s", got.Status)
		}
		// A stale object changes nothing.
		stale := got
		stale.Status = objects.DeleteInProgress
		stale.StatusReason = objects.Str("stale")
		err = s.SaveClusterIfStatus(ctx, stale, allowed)
		if !errors.Is(err, db.ErrStatusChanged) {
			t.Fatalf("err = %v", err)
		}
		again, err := s.GetClusterByUUID(ctx, *c.UUID)
		must(t, err)
		if again.Status != objects.UpdateInProgress || again.StatusReason != nil {
			t.Fatalf("stale save wrote: %s %v", again.Status, again.StatusReason)
		}
		// Gone → ClusterNotFound, not ErrStatusChanged.
		must(t, s.DestroyCluster(ctx, *c.UUID))
		wantExc(t, s.SaveClusterIfStatus(ctx, again, allowed), exception.ClassClusterNotFound)
	})
}
