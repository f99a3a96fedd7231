package db_test

import (
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

func template(name, project string, public, hidden bool) *objects.ClusterTemplate {
	return &objects.ClusterTemplate{
		Name: objects.Str(name), ProjectID: objects.Str(project), UserID: objects.Str("user-" + project),
		Coe: "kubernetes", ImageID: objects.Str("img"), Public: public, Hidden: hidden,
	}
}

func TestClusterTemplateCreateDefaults(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		ct := template("t", "p1", false, false)
		objects.Unset(ct, "floating_ip_enabled") // false written in Go would be stored as false
		must(t, s.CreateClusterTemplate(ctx, ct))
		if ct.ID == 0 || ct.UUID == nil || !ct.FloatingIPEnabled || ct.Public || ct.TLSDisabled {
			t.Fatalf("defaults: %+v", ct)
		}
		if objects.Deref(ct.ServerType) != "vm" {
			t.Fatalf("server_type = %v, want the column default vm", ct.ServerType)
		}
		dup := template("t2", "p1", false, false)
		dup.UUID = ct.UUID
		wantExc(t, s.CreateClusterTemplate(ctx, dup), exception.ClassClusterTemplateAlreadyExists)
		for _, get := range []func() (*objects.ClusterTemplate, error){
			func() (*objects.ClusterTemplate, error) { return s.GetClusterTemplateByID(ctx, ct.ID) },
			func() (*objects.ClusterTemplate, error) { return s.GetClusterTemplateByUUID(ctx, *ct.UUID) },
			func() (*objects.ClusterTemplate, error) { return s.GetClusterTemplateByName(ctx, "t") },
		} {
			got, err := get()
			must(t, err)
			if got.ID != ct.ID || got.Coe != "kubernetes" {
				t.Fatalf("got %+v", got)
			}
		}
	})
}

func TestClusterTemplatePublicUnion(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		for _, ct := range []*objects.ClusterTemplate{
			template("own", "p1", false, false),
			template("other", "p2", false, false),
			template("pub", "p2", true, false),
			template("pubhidden", "p2", true, true),
		} {
			must(t, s.CreateClusterTemplate(ctx, ct))
		}
		for _, tc := range []struct {
			name string
			ctx  func() []string
			want []string
		}{
			{"tenant sees own and public non-hidden", func() []string {
				l, err := s.ListClusterTemplates(projectCtx("p1"), db.ListOpts{SortKey: "name"}, db.ClusterTemplateFilters{})
				must(t, err)
				return names(l, func(c *objects.ClusterTemplate) string { return *c.Name })
			}, []string{"own", "pub"}},
			{"admin of p1 also sees hidden public", func() []string {
				l, err := s.ListClusterTemplates(withProject(true, "p1"), db.ListOpts{SortKey: "name"}, db.ClusterTemplateFilters{})
				must(t, err)
				return names(l, func(c *objects.ClusterTemplate) string { return *c.Name })
			}, []string{"own", "pub", "pubhidden"}},
			{"filters narrow own templates only, public ones stay", func() []string {
				l, err := s.ListClusterTemplates(projectCtx("p1"), db.ListOpts{SortKey: "name"},
					db.ClusterTemplateFilters{Name: objects.Str("nothing")})
				must(t, err)
				return names(l, func(c *objects.ClusterTemplate) string { return *c.Name })
			}, []string{"pub"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := tc.ctx(); !slices.Equal(got, tc.want) {
					t.Fatalf("list = %v, want %v", got, tc.want)
				}
			})
		}
		// get unions every public template, hidden or not.
		for _, n := range []string{"own", "pub", "pubhidden"} {
			if _, err := s.GetClusterTemplateByName(projectCtx("p1"), n); err != nil {
				t.Fatalf("get %s: %v", n, err)
			}
		}
		_, err := s.GetClusterTemplateByName(projectCtx("p1"), "other")
		e := wantExc(t, err, exception.ClassClusterTemplateNotFound)
		if e.Message != "ClusterTemplate other could not be found." {
			t.Fatalf("message %q", e.Message)
		}
		must(t, s.CreateClusterTemplate(ctx, template("pub", "p3", true, false)))
		_, err = s.GetClusterTemplateByName(projectCtx("p1"), "pub")
		e = wantExc(t, err, exception.ClassConflict)
		if e.Message != "Multiple ClusterTemplates exist with same name. Please use the ClusterTemplate uuid instead." {
			t.Fatalf("message %q", e.Message)
		}
	})
}

func TestClusterTemplateReferencedRules(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		ct := template("t", "p1", false, false)
		must(t, s.CreateClusterTemplate(ctx, ct))
		c := cluster("c", "p1", objects.CreateComplete)
		c.ClusterTemplateID = ct.UUID
		must(t, s.CreateCluster(ctx, c))

		load := func() *objects.ClusterTemplate {
			got, err := s.GetClusterTemplateByUUID(ctx, *ct.UUID)
			must(t, err)
			return got
		}
		for _, tc := range []struct {
			name   string
			change func(*objects.ClusterTemplate)
			ok     bool
		}{
			{"rename", func(t *objects.ClusterTemplate) { t.Name = objects.Str("renamed") }, true},
			{"publish", func(t *objects.ClusterTemplate) { t.Public = true }, true},
			{"hide", func(t *objects.ClusterTemplate) { t.Hidden = true }, true},
			{"tag", func(t *objects.ClusterTemplate) { t.Tags = objects.Str("a,b") }, true},
			{"unpublish", func(t *objects.ClusterTemplate) { t.Public = false }, false},
			{"image", func(t *objects.ClusterTemplate) { t.ImageID = objects.Str("other") }, false},
			{"rename and image", func(t *objects.ClusterTemplate) {
				t.Name = objects.Str("x")
				t.ImageID = objects.Str("y")
			}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obj := load()
				tc.change(obj)
				err := s.SaveClusterTemplate(ctx, obj)
				if tc.ok {
					must(t, err)
					return
				}
				e := wantExc(t, err, exception.ClassClusterTemplateReferenced)
				if e.Message != "ClusterTemplate "+*ct.UUID+" is referenced by one or multiple clusters." {
					t.Fatalf("message %q", e.Message)
				}
			})
		}
		got := load()
		if objects.Deref(got.Name) != "renamed" || !got.Public || !got.Hidden || objects.Deref(got.Tags) != "a,b" ||
			objects.Deref(got.ImageID) != "img" {
			t.Fatalf("after saves: %+v", got)
		}
		wantExc(t, s.DestroyClusterTemplate(ctx, *ct.UUID), exception.ClassClusterTemplateReferenced)
		must(t, s.DestroyCluster(ctx, *c.UUID))
		got.ImageID = objects.Str("free now")
		must(t, s.SaveClusterTemplate(ctx, got))
		got.UUID = objects.Str("22222222-2222-2222-2222-222222222222")
		wantExc(t, s.SaveClusterTemplate(ctx, got), exception.ClassInvalidParameterValue)
		must(t, s.DestroyClusterTemplate(ctx, *ct.UUID))
		wantExc(t, s.DestroyClusterTemplate(ctx, *ct.UUID), exception.ClassClusterTemplateNotFound)
	})
}
