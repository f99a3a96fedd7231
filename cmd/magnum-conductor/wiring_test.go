package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/db"
)

// TestPeriodicTasksFollowTheConfiguration: the heartbeat always runs (as
// Magnum's create_periodic_tasks starts it unconditionally); the cluster
// tasks follow [DEFAULT]/periodic_enable, sync_cluster_status runs every
// 10 s, and the health task every [kubernetes]/health_polling_interval,
// dropped at 0.
func TestPeriodicTasksFollowTheConfiguration(t *testing.T) {
	store, err := db.Open(context.Background(), db.Options{
		Connection: "sqlite:///" + filepath.Join(t.TempDir(), "m.sqlite"), SkipSchemaCheck: true,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for ini, want := range map[string][]string{
		"": {"update_magnum_service 1m0s", "sync_cluster_status 10s", "sync_cluster_health_status 1m0s"},
		"[DEFAULT]\nperiodic_enable = false\nperiodic_interval_max = 30\n": {"update_magnum_service 30s"},
		"[kubernetes]\nhealth_polling_interval = 0\n":                      {"update_magnum_service 1m0s", "sync_cluster_status 10s"},
		"[kubernetes]\nhealth_polling_interval = 15\n": {"update_magnum_service 1m0s", "sync_cluster_status 10s",
			"sync_cluster_health_status 15s"},
	} {
		cfg, err := config.LoadSources([]config.Source{{Name: "t.conf", Data: []byte(ini)}})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := buildPeriodic(cfg, store, nil, nil, nil, nil, slog.New(slog.DiscardHandler))
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
