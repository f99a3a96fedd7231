package oslo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
)

func TestObserverSeesEveryRequestWithBoundedMethodNames(t *testing.T) {
	d := NewDispatcher()
	if err := d.Handle("ping_conductor", Method(func(ctx context.Context, _ NoArgs) (any, error) { return true, nil })); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("cluster_delete", Method(func(ctx context.Context, a struct {
		UUID string `json:"uuid"`
	}) (any, error) {
		return nil, exception.ClusterNotFound(a.UUID)
	})); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		method string
		err    error
	}
	var got []seen
	d.Observe(func(method string, took time.Duration, err error) {
		if took < 0 {
			t.Errorf("negative duration for %s", method)
		}
		got = append(got, seen{method, err})
	})
	for _, body := range []string{
		`{"method": "ping_conductor", "args": {}}`,
		`{"method": "cluster_delete", "args": {"uuid": "x"}}`,
		`{"method": "no_such_thing_12345", "args": {}}`,
		`{"method": "ping_conductor", "args": {}, "version": "9.0"}`,
		`{"method": "ping_conductor", "args": {"bogus": 1}}`,
	} {
		req, err := DecodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = d.Dispatch(context.Background(), req)
	}
	want := []struct {
		method string
		class  string
	}{
		{"ping_conductor", ""}, {"cluster_delete", "ClusterNotFound"}, {UnknownMethod, "NoSuchMethod"},
		{UnknownMethod, "UnsupportedVersion"}, {"ping_conductor", "TypeError"},
	}
	if len(got) != len(want) {
		t.Fatalf("observed %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].method != w.method {
			t.Errorf("request %d: method %q, want %q", i, got[i].method, w.method)
		}
		var e *exception.Error
		switch {
		case w.class == "" && got[i].err != nil:
			t.Errorf("request %d: unexpected error %v", i, got[i].err)
		case w.class != "" && (!errors.As(got[i].err, &e) || e.Class != w.class):
			t.Errorf("request %d: error %v, want class %s", i, got[i].err, w.class)
		}
	}
}
