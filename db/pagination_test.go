package db_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

// pager lists one kind of resource and names each item and its marker.
type pager struct {
	kind   string
	create func(t *testing.T, ctx context.Context, s *db.Store, i int)
	list   func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error)
}

// TestPaginationEveryList walks every list with limit and marker in both
// directions and checks the pages join up to the full sorted list.
func TestPaginationEveryList(t *testing.T) {
	order := []int{3, 1, 4, 0, 2, 1}
	pagers := []pager{
		{"cluster templates (public union)", func(t *testing.T, ctx context.Context, s *db.Store, i int) {
			// Half of them belong to another project but are public.
			p := "p1"
			if i%2 == 0 {
				p = "p2"
			}
			must(t, s.CreateClusterTemplate(ctx, template(fmt.Sprint("t", order[i]), p, p == "p2", false)))
		}, func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error) {
			l, err := s.ListClusterTemplates(projectCtx("p1"), o, db.ClusterTemplateFilters{})
			return names(l, func(x *objects.ClusterTemplate) string { return *x.Name }),
				names(l, func(x *objects.ClusterTemplate) string { return *x.UUID }), err
		}},
		{"nodegroups", func(t *testing.T, ctx context.Context, s *db.Store, i int) {
			c, err := s.GetClusterByName(ctx, "host")
			must(t, err)
			// node_count 0 on a new object is "unset" (NULL, read as 1), so
			// shift the values up by one.
			must(t, s.CreateNodeGroup(ctx, nodegroup(c, fmt.Sprint("ng", i), "worker", int64(order[i]+1))))
		}, func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error) {
			c, err := s.GetClusterByName(ctx, "host")
			if err != nil {
				return nil, nil, err
			}
			l, err := s.ListNodeGroups(ctx, *c.UUID, o, db.NodeGroupFilters{})
			return names(l, func(x *objects.NodeGroup) string { return strconv.FormatInt(x.NodeCount, 10) }),
				names(l, func(x *objects.NodeGroup) string { return x.UUID }), err
		}},
		{"x509keypairs", func(t *testing.T, ctx context.Context, s *db.Store, i int) {
			must(t, s.CreateX509KeyPair(ctx, &objects.X509KeyPair{Certificate: objects.Str(fmt.Sprint("c", order[i]))}))
		}, func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error) {
			l, err := s.ListX509KeyPairs(ctx, o, db.X509KeyPairFilters{})
			return names(l, func(x *objects.X509KeyPair) string { return *x.Certificate }),
				names(l, func(x *objects.X509KeyPair) string { return *x.UUID }), err
		}},
		{"federations", func(t *testing.T, ctx context.Context, s *db.Store, i int) {
			must(t, s.CreateFederation(ctx, &objects.Federation{Name: objects.Str(fmt.Sprint("f", order[i]))}))
		}, func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error) {
			l, err := s.ListFederations(ctx, o, db.FederationFilters{})
			return names(l, func(x *objects.Federation) string { return *x.Name }),
				names(l, func(x *objects.Federation) string { return *x.UUID }), err
		}},
		{"quotas (id marker)", func(t *testing.T, ctx context.Context, s *db.Store, i int) {
			must(t, s.CreateQuota(ctx, &objects.Quota{ProjectID: fmt.Sprint("p", i), Resource: "Cluster", HardLimit: int64(order[i])}))
		}, func(ctx context.Context, s *db.Store, o db.ListOpts) ([]string, []string, error) {
			l, err := s.ListQuotas(ctx, o, db.QuotaFilters{})
			return names(l, func(x *objects.Quota) string { return strconv.FormatInt(x.HardLimit, 10) }),
				names(l, func(x *objects.Quota) string { return strconv.FormatInt(x.ID, 10) }), err
		}},
	}
	sortKeys := map[string]string{
		"cluster templates (public union)": "name", "nodegroups": "node_count", "x509keypairs": "certificate",
		"federations": "name", "quotas (id marker)": "hard_limit",
	}
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		must(t, s.CreateCluster(ctx, cluster("host", "p1", objects.CreateComplete)))
		for _, p := range pagers {
			t.Run(p.kind, func(t *testing.T) {
				for i := range order {
					p.create(t, ctx, s, i)
				}
				for _, dir := range []string{"asc", "desc"} {
					full, _, err := p.list(ctx, s, db.ListOpts{SortKey: sortKeys[p.kind], SortDir: dir})
					must(t, err)
					if len(full) != len(order) {
						t.Fatalf("full list %v", full)
					}
					sorted := slices.Clone(full)
					slices.Sort(sorted)
					if dir == "desc" {
						slices.Reverse(sorted)
					}
					if !slices.Equal(full, sorted) {
						t.Fatalf("%s list not sorted: %v", dir, full)
					}
					var walked []string
					marker := ""
					for range len(order) + 1 {
						page, markers, err := p.list(ctx, s, db.ListOpts{Limit: 4, Marker: marker, SortKey: sortKeys[p.kind], SortDir: dir})
						must(t, err)
						if len(page) == 0 {
							break
						}
						if len(page) > 4 {
							t.Fatalf("page of %d", len(page))
						}
						walked = append(walked, page...)
						marker = markers[len(markers)-1]
					}
					if !slices.Equal(walked, full) {
						t.Fatalf("%s: pages %v, full %v", dir, walked, full)
					}
				}
			})
		}
	})
}
