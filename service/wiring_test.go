package service

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/conductor"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
	"github.com/openstack/magnum-conductor/periodic"
)

// emptyStore is a store on a new SQLite file, enough to build the tasks.
func emptyStore(t *testing.T) *db.Store {
	t.Helper()
	store, err := db.Open(context.Background(), db.Options{
		Connection: "sqlite:///" + filepath.Join(t.TempDir(), "m.sqlite"), SkipSchemaCheck: true,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// TestPeriodicTasksFollowTheConfiguration: the heartbeat always runs (as
// Magnum's create_periodic_tasks starts it unconditionally); the cluster
// tasks follow [DEFAULT]/periodic_enable, sync_cluster_status runs every
// 10 s, and the health task every [kubernetes]/health_polling_interval,
// dropped at 0.
func TestPeriodicTasksFollowTheConfiguration(t *testing.T) {
	store := emptyStore(t)
	for ini, want := range map[string][]string{
		"": {"update_magnum_service 1m0s", "sync_cluster_status 10s", "sync_cluster_health_status 1m0s"},
		"[DEFAULT]\nperiodic_enable = false\nperiodic_interval_max = 30\n": {"update_magnum_service 30s"},
		// Never less often than Magnum's 60 s, or the service would look
		// down (service_down_time 180 s) between two beats.
		"[DEFAULT]\nperiodic_enable = false\nperiodic_interval_max = 300\n": {"update_magnum_service 1m0s"},
		"[kubernetes]\nhealth_polling_interval = 0\n":                       {"update_magnum_service 1m0s", "sync_cluster_status 10s"},
		"[kubernetes]\nhealth_polling_interval = 15\n": {"update_magnum_service 1m0s", "sync_cluster_status 10s",
			"sync_cluster_health_status 15s"},
	} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(ini)}})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := buildPeriodic(cfg, store, nil, nil, nil, nil, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%q: %v", ini, err)
		}
		var got []string
		for _, j := range runner.Jobs() {
			got = append(got, fmt.Sprintf("%s %s", j.Name(), j.Spacing().Round(time.Second)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: tasks %v, want %v", ini, got, want)
		}
	}
}

// TestHealthOptionsReachTheTask: the [kubernetes] health options are the
// task's.
func TestHealthOptionsReachTheTask(t *testing.T) {
	store := emptyStore(t)
	cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[kubernetes]\n" +
		"health_polling_interval = 20\nhealth_poll_workers = 7\nhealth_request_timeout = 4\n" +
		"health_keep_status_on_error = true\n")}})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := buildPeriodic(cfg, store, nil, nil, nil, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range runner.Jobs() {
		h, ok := j.(*periodic.SyncClusterHealth)
		if !ok {
			continue
		}
		o := h.Options()
		if o.Interval != 20*time.Second || o.Workers != 7 || o.PollTimeout != 8*time.Second || !o.KeepOnError {
			t.Fatalf("health options %+v", o)
		}
		return
	}
	t.Fatal("no health task")
}

// TestPingEndpointFollowsTheConfiguration: [DEFAULT] rpc_ping_enabled adds
// oslo's oslo_rpc_server_ping, which answers "pong" whatever it is given;
// without it the method does not exist. Magnum's methods are bound either
// way.
func TestPingEndpointFollowsTheConfiguration(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf",
			Data: []byte(fmt.Sprintf("[DEFAULT]\nrpc_ping_enabled = %v\n", enabled))}})
		if err != nil {
			t.Fatal(err)
		}
		disp, err := buildDispatcher(cfg, emptyStore(t), &conductor.Handlers{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		methods := disp.Methods()
		for _, m := range append(conductor.EndpointMethods(), "object_class_action_versions", "object_backport_versions") {
			if !slices.Contains(methods, m) {
				t.Errorf("rpc_ping_enabled = %v: %s is not bound", enabled, m)
			}
		}
		if slices.Contains(methods, oslo.PingMethod) != enabled {
			t.Fatalf("rpc_ping_enabled = %v: methods %v", enabled, methods)
		}
		if !enabled {
			continue
		}
		for _, args := range []string{`{}`, `{"anything": [1, "x"]}`} {
			req, err := oslo.DecodeRequest([]byte(`{"method": "oslo_rpc_server_ping", "args": ` + args + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := disp.Dispatch(context.Background(), req); err != nil || res != "pong" {
				t.Errorf("ping with %s: %v, %v", args, res, err)
			}
		}
	}
}

// TestInterruptedOperationBound: by default an interrupted operation is
// resumed once the driver-call deadline and one sync interval have passed;
// the options set the bound and the attempts.
func TestInterruptedOperationBound(t *testing.T) {
	for ini, want := range map[string]statusmachine.Timeouts{
		"": {Create: time.Hour, UpdateAsCreate: true, Resume: 310 * time.Second, ResumeAttempts: 3},
		"[conductor]\ndriver_call_timeout = 60\n": {Create: time.Hour, UpdateAsCreate: true, Resume: 70 * time.Second,
			ResumeAttempts: 3},
		"[conductor]\ninterrupted_operation_timeout = 20\ninterrupted_operation_attempts = 0\n": {Create: time.Hour,
			UpdateAsCreate: true, Resume: 20 * time.Second},
	} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(ini)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := statusTimeouts(cfg); got != want {
			t.Errorf("%q: %+v, want %+v", ini, got, want)
		}
	}
}

// TestUpdateTimeout: by default an update is bounded as a Heat stack update
// is (the cluster's create_timeout, else [cluster_heat]/create_timeout:
// UpdateAsCreate); [conductor] update_timeout sets minutes for every
// cluster, or with 0 no deadline.
func TestUpdateTimeout(t *testing.T) {
	for _, tc := range []struct {
		ini            string
		update, create time.Duration
		asCreate       bool
	}{
		{"", 0, time.Hour, true},
		{"[cluster_heat]\ncreate_timeout = 90\n", 0, 90 * time.Minute, true},
		{"[conductor]\nupdate_timeout = -1\n", 0, time.Hour, true},
		{"[conductor]\nupdate_timeout = 45\n", 45 * time.Minute, time.Hour, false},
		{"[conductor]\nupdate_timeout = 0\n", 0, time.Hour, false},
	} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(tc.ini)}})
		if err != nil {
			t.Fatal(err)
		}
		got := statusTimeouts(cfg)
		if got.Update != tc.update || got.UpdateAsCreate != tc.asCreate || got.Create != tc.create {
			t.Errorf("%q: Update %v UpdateAsCreate %v Create %v, want %v %v %v", tc.ini, got.Update, got.UpdateAsCreate,
				got.Create, tc.update, tc.asCreate, tc.create)
		}
	}
	if _, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte("[conductor]\nupdate_timeout = -2\n")}}); err == nil ||
		!strings.Contains(err.Error(), "update_timeout") {
		t.Errorf("update_timeout = -2: %v, want an error naming it", err)
	}
}
