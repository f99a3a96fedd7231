package db_test

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
)

func TestX509KeyPairCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		k := &objects.X509KeyPair{Certificate: objects.Str("CERT"), PrivateKey: objects.Str("KEY"),
			ProjectID: objects.Str("p1"), UserID: objects.Str("u1")}
		must(t, s.CreateX509KeyPair(ctx, k))
		if k.ID == 0 || k.UUID == nil {
			t.Fatal("id/uuid not set")
		}
		dup := &objects.X509KeyPair{UUID: k.UUID}
		wantExc(t, s.CreateX509KeyPair(ctx, dup), exception.ClassX509KeyPairAlreadyExists)
		got, err := s.GetX509KeyPairByUUID(ctx, *k.UUID)
		must(t, err)
		if objects.Deref(got.PrivateKey) != "KEY" {
			t.Fatalf("got %+v", got)
		}
		_, err = s.GetX509KeyPairByID(projectCtx("p2"), k.ID)
		wantExc(t, err, exception.ClassX509KeyPairNotFound)
		if _, err := s.GetX509KeyPairByID(projectCtx("p1"), k.ID); err != nil {
			t.Fatal(err)
		}
		must(t, s.CreateX509KeyPair(ctx, &objects.X509KeyPair{ProjectID: objects.Str("p2"), UserID: objects.Str("u2")}))
		l, err := s.ListX509KeyPairs(ctx, db.ListOpts{}, db.X509KeyPairFilters{UserID: objects.Str("u2")})
		must(t, err)
		if len(l) != 1 || objects.Deref(l[0].ProjectID) != "p2" {
			t.Fatalf("list %v", l)
		}
		got.Intermediates = objects.Str("INT")
		must(t, s.SaveX509KeyPair(ctx, got))
		again, err := s.GetX509KeyPairByUUID(ctx, *k.UUID)
		must(t, err)
		if objects.Deref(again.Intermediates) != "INT" || objects.Deref(again.Certificate) != "CERT" {
			t.Fatalf("after save %+v", again)
		}
		must(t, s.DestroyX509KeyPair(ctx, *k.UUID))
		e := wantExc(t, s.DestroyX509KeyPair(ctx, *k.UUID), exception.ClassX509KeyPairNotFound)
		if e.Message != *k.UUID {
			t.Fatalf("message %q (Magnum passes the id positionally)", e.Message)
		}
	})
}

func TestMagnumServiceHeartbeat(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		got, err := s.GetMagnumServiceByHostAndBinary(ctx, "h1", "magnum-conductor")
		if err != nil || got != nil {
			t.Fatalf("absent service = %v, %v; want nil, nil", got, err)
		}
		first, err := s.ReportServiceUp(ctx, "h1", "magnum-conductor")
		must(t, err)
		if first.ReportCount != 1 || first.Disabled || first.ForcedDown {
			t.Fatalf("first report %+v", first)
		}
		recent(t, "last_seen_up", first.LastSeenUp)
		recent(t, "created_at", first.CreatedAt)
		// Concurrent reporters never lose an increment.
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, err := s.ReportServiceUp(ctx, "h1", "magnum-conductor"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, err = s.GetMagnumServiceByHostAndBinary(ctx, "h1", "magnum-conductor")
		must(t, err)
		if got.ReportCount != 21 || got.ID != first.ID {
			t.Fatalf("after 21 reports: %+v", got)
		}
		// An unset [DEFAULT]host is a NULL host row.
		nh, err := s.ReportServiceUp(ctx, "", "magnum-conductor")
		must(t, err)
		nh2, err := s.ReportServiceUp(ctx, "", "magnum-conductor")
		must(t, err)
		if nh.Host != nil || nh2.ID != nh.ID || nh2.ReportCount != 2 {
			t.Fatalf("null-host row: %+v %+v", nh, nh2)
		}
	})
}

func TestMagnumServiceCreateSaveDestroy(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		m := &objects.MagnumService{Host: objects.Str("h"), Binary: objects.Str("magnum-conductor")}
		must(t, s.CreateMagnumService(ctx, m))
		if m.ID == 0 || m.ReportCount != 0 || m.LastSeenUp != nil {
			t.Fatalf("created %+v", m)
		}
		// A duplicate returns the existing row.
		dup := &objects.MagnumService{Host: objects.Str("h"), Binary: objects.Str("magnum-conductor")}
		must(t, s.CreateMagnumService(ctx, dup))
		if dup.ID != m.ID {
			t.Fatalf("duplicate create gave id %d, want %d", dup.ID, m.ID)
		}
		m.ReportCount++
		must(t, s.SaveMagnumService(ctx, m))
		recent(t, "last_seen_up", m.LastSeenUp)
		got, err := s.GetMagnumServiceByHostAndBinary(ctx, "h", "magnum-conductor")
		must(t, err)
		if got.ReportCount != 1 || got.LastSeenUp == nil {
			t.Fatalf("after report_state_up: %+v", got)
		}
		// A save that does not raise report_count leaves last_seen_up alone.
		got.LastSeenUp = nil
		objects.ResetChanges(got, "last_seen_up")
		got.Disabled = true
		must(t, s.SaveMagnumService(ctx, got))
		again, err := s.GetMagnumServiceByHostAndBinary(ctx, "h", "magnum-conductor")
		must(t, err)
		if !again.Disabled || again.LastSeenUp == nil {
			t.Fatalf("after disable: %+v", again)
		}
		must(t, s.CreateMagnumService(ctx, &objects.MagnumService{Host: objects.Str("h2"), Binary: objects.Str("magnum-conductor")}))
		l, err := s.ListMagnumServices(ctx, db.ListOpts{SortKey: "host", SortDir: "desc"})
		must(t, err)
		if got := names(l, func(m *objects.MagnumService) string { return *m.Host }); !slices.Equal(got, []string{"h2", "h"}) {
			t.Fatalf("list %v", got)
		}
		l, err = s.ListMagnumServices(ctx, db.ListOpts{Marker: strconv.FormatInt(m.ID, 10)})
		must(t, err)
		if len(l) != 1 || *l[0].Host != "h2" {
			t.Fatalf("list after marker %v", l)
		}
		must(t, s.DestroyMagnumService(ctx, m.ID))
		wantExc(t, s.DestroyMagnumService(ctx, m.ID), exception.ClassMagnumServiceNotFound)
	})
}

func TestQuotaCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		q := &objects.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 5}
		must(t, s.CreateQuota(ctx, q))
		if q.ID == 0 {
			t.Fatal("id not set")
		}
		e := wantExc(t, s.CreateQuota(ctx, &objects.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 1}), exception.ClassQuotaAlreadyExists)
		if e.Message != "Quota for project p1 already exists for resource Cluster." {
			t.Fatalf("message %q", e.Message)
		}
		got, err := s.GetQuotaByProjectResource(ctx, "p1", "Cluster")
		must(t, err)
		if got.HardLimit != 5 {
			t.Fatalf("got %+v", got)
		}
		_, err = s.GetQuotaByProjectResource(ctx, "p9", "Cluster")
		e = wantExc(t, err, exception.ClassQuotaNotFound)
		if e.Message != "Quota could not be found: project_id p9 resource Cluster." {
			t.Fatalf("message %q", e.Message)
		}
		_, err = s.GetQuotaByID(ctx, 424242)
		wantExc(t, err, exception.ClassQuotaNotFound)
		upd, err := s.UpdateQuota(ctx, "p1", map[string]any{"resource": "Cluster", "hard_limit": 9.0, "project_id": "p1",
			"id": 77, "created_at": "2020-01-01T00:00:00"})
		must(t, err)
		if upd.HardLimit != 9 || upd.UpdatedAt == nil || upd.ID != q.ID {
			t.Fatalf("update %+v", upd)
		}
		_, err = s.UpdateQuota(ctx, "p9", map[string]any{"resource": "Cluster", "hard_limit": 9})
		wantExc(t, err, exception.ClassQuotaNotFound)
		must(t, s.CreateQuota(ctx, &objects.Quota{ProjectID: "p2", Resource: "Cluster", HardLimit: 3}))
		l, err := s.ListQuotasByProject(ctx, "p2")
		must(t, err)
		if len(l) != 1 || l[0].HardLimit != 3 {
			t.Fatalf("by project %v", l)
		}
		l, err = s.ListQuotas(ctx, db.ListOpts{SortKey: "hard_limit", SortDir: "desc"}, db.QuotaFilters{Resource: objects.Str("Cluster")})
		must(t, err)
		if len(l) != 2 || l[0].HardLimit != 9 {
			t.Fatalf("list %v", l)
		}
		must(t, s.DeleteQuota(ctx, "p1", "Cluster"))
		wantExc(t, s.DeleteQuota(ctx, "p1", "Cluster"), exception.ClassQuotaNotFound)
	})
}

func TestFederationCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		f := &objects.Federation{Name: objects.Str("f"), ProjectID: objects.Str("p1"), HostClusterID: objects.Str("h"),
			MemberIDs: []string{"a", "b"}, Status: "CREATE_IN_PROGRESS", Properties: map[string]string{"dns-zone": "x."}}
		must(t, s.CreateFederation(ctx, f))
		if f.ID == 0 || f.UUID == nil {
			t.Fatal("id/uuid not set")
		}
		wantExc(t, s.CreateFederation(ctx, &objects.Federation{UUID: f.UUID}), exception.ClassFederationAlreadyExists)
		for _, get := range []func() (*objects.Federation, error){
			func() (*objects.Federation, error) { return s.GetFederationByID(ctx, f.ID) },
			func() (*objects.Federation, error) { return s.GetFederationByUUID(ctx, *f.UUID) },
			func() (*objects.Federation, error) { return s.GetFederationByName(ctx, "f") },
		} {
			got, err := get()
			must(t, err)
			if !slices.Equal(got.MemberIDs, []string{"a", "b"}) || got.Properties["dns-zone"] != "x." {
				t.Fatalf("got %+v", got)
			}
		}
		must(t, s.CreateFederation(ctx, &objects.Federation{Name: objects.Str("f"), ProjectID: objects.Str("p2")}))
		_, err := s.GetFederationByName(ctx, "f")
		wantExc(t, err, exception.ClassConflict)
		_, err = s.GetFederationByUUID(projectCtx("p2"), *f.UUID)
		wantExc(t, err, exception.ClassFederationNotFound)
		for _, tc := range []struct {
			name string
			f    db.FederationFilters
			want int64
		}{
			{"all", db.FederationFilters{}, 2},
			{"members JSON", db.FederationFilters{MemberIDs: []string{"a", "b"}}, 1},
			{"properties JSON", db.FederationFilters{Properties: map[string]string{"dns-zone": "x."}}, 1},
			{"status", db.FederationFilters{Status: []string{"CREATE_IN_PROGRESS"}}, 1},
			{"hostcluster", db.FederationFilters{HostClusterID: objects.Str("nope")}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n, err := s.CountFederations(ctx, tc.f)
				must(t, err)
				l, err := s.ListFederations(ctx, db.ListOpts{}, tc.f)
				must(t, err)
				if n != tc.want || int64(len(l)) != tc.want {
					t.Fatalf("count %d list %d, want %d", n, len(l), tc.want)
				}
			})
		}
		got, err := s.GetFederationByUUID(ctx, *f.UUID)
		must(t, err)
		got.MemberIDs = append(got.MemberIDs, "c")
		got.Status = "UPDATE_IN_PROGRESS"
		must(t, s.SaveFederation(ctx, got))
		again, err := s.GetFederationByUUID(ctx, *f.UUID)
		must(t, err)
		if len(again.MemberIDs) != 3 || again.Status != "UPDATE_IN_PROGRESS" || again.UpdatedAt == nil {
			t.Fatalf("after save %+v", again)
		}
		must(t, s.DestroyFederation(ctx, *f.UUID))
		wantExc(t, s.DestroyFederation(ctx, *f.UUID), exception.ClassFederationNotFound)
	})
}

// TestJSONColumnsAsMagnumWritesThem checks the text in the JSON columns: what
// Python's json.dumps writes, and "{}" / "[]" for None and for unset
// columns: Magnum's ORM binds every column on insert and its JSON type turns
// None into an empty container (checked against magnum.db.sqlalchemy.models).
func TestJSONColumnsAsMagnumWritesThem(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := adminCtx()
		c := cluster("c", "p1", objects.CreateComplete)
		c.Labels = map[string]string{"b": "é\"", "a": "1"}
		must(t, s.CreateCluster(ctx, c))
		raw := func(col string) *string {
			var v *string
			must(t, s.SQLDB().QueryRow("SELECT "+col+" FROM cluster WHERE id = ?", c.ID).Scan(&v))
			return v
		}
		if v := raw("labels"); v == nil || *v != `{"a": "1", "b": "\u00e9\""}` {
			t.Fatalf("labels text = %v", objects.Deref(v))
		}
		if v := raw("health_status_reason"); v == nil || *v != "{}" {
			t.Fatalf("unset JSON column = %v, want {} as Magnum stores it", v)
		}
		objects.MarkChanged(c, "health_status_reason")
		c.Labels = nil
		must(t, s.SaveCluster(ctx, c))
		if v := raw("labels"); v == nil || *v != "{}" {
			t.Fatalf("labels set to None = %v, want {}", v)
		}
		if v := raw("health_status_reason"); v == nil || *v != "{}" {
			t.Fatalf("health_status_reason set to None = %v, want {}", v)
		}
		// Timestamps are naive UTC with whole seconds.
		var created time.Time
		must(t, s.SQLDB().QueryRow("SELECT created_at FROM cluster WHERE id = ?", c.ID).Scan(&created))
		if created.Nanosecond() != 0 || time.Since(created) > time.Minute || time.Since(created) < -time.Minute {
			t.Fatalf("created_at = %v", created)
		}
	})
}
