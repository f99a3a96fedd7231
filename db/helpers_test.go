package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// newStore returns a Store on a fresh database of dialect, upgraded to head.
func newStore(t *testing.T, dialect string) *db.Store {
	t.Helper()
	var url string
	if dialect == "mysql" {
		_, url = dbtest.MySQL(t)
	} else {
		url = dbtest.SQLite(t)
	}
	return dbtest.Migrated(t, url, db.Options{MaxRetries: 0}, nil)
}

// eachDialect runs f against a fresh MariaDB store and a fresh SQLite store.
func eachDialect(t *testing.T, f func(t *testing.T, s *db.Store)) {
	t.Helper()
	for _, d := range []string{"mysql", "sqlite"} {
		t.Run(d, func(t *testing.T) { f(t, newStore(t, d)) })
	}
}

func adminCtx() context.Context {
	return request.With(context.Background(), &request.Context{IsAdmin: true, AllTenants: true})
}

func projectCtx(project string) context.Context {
	return request.With(context.Background(), &request.Context{ProjectID: project, UserID: "user-" + project})
}

func withProject(admin bool, project string) context.Context {
	return request.With(context.Background(), &request.Context{IsAdmin: admin, ProjectID: project})
}

func userCtx(user string) context.Context {
	return request.With(context.Background(), &request.Context{UserID: user})
}

// wantExc fails unless err is the Magnum exception class.
func wantExc(t *testing.T, err error, class exception.Class) *exception.Error {
	t.Helper()
	var e *exception.Error
	if !errors.As(err, &e) || e.Class != class.String() {
		t.Fatalf("error = %v (%T), want %s", err, err, class)
	}
	if !errors.Is(err, class.New(nil)) {
		t.Fatalf("errors.Is(%v, %s) is false", err, class)
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cluster(name, project, status string) *objects.Cluster {
	return &objects.Cluster{
		Name: objects.Str(name), ProjectID: objects.Str(project), UserID: objects.Str("user-" + project),
		Status: status, ClusterTemplateID: objects.Str("ct-" + project),
	}
}

func nodegroup(c *objects.Cluster, name, role string, count int64) *objects.NodeGroup {
	return &objects.NodeGroup{
		Name: name, ClusterID: *c.UUID, ProjectID: objects.Deref(c.ProjectID), Role: role, NodeCount: count,
		IsDefault: true,
	}
}

func recent(t *testing.T, what string, ts *time.Time) {
	t.Helper()
	if ts == nil {
		t.Fatalf("%s is nil", what)
	}
	if d := time.Since(*ts); d < -2*time.Second || d > time.Minute {
		t.Fatalf("%s = %v, not now (UTC)", what, ts)
	}
	if ts.Location() != time.UTC {
		t.Fatalf("%s not in UTC: %v", what, ts.Location())
	}
}

func names[T any](items []*T, name func(*T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}
