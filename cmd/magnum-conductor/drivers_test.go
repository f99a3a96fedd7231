package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/openstack/magnum-conductor/service"
)

func TestSimulatedDriverFollowsItsOption(t *testing.T) {
	for ini, want := range map[string]bool{"": false, "[simulated_driver]\nenabled = true\n": true} {
		env := service.DriverEnv{Config: loadTestConfig(t, ini), Log: slog.New(slog.DiscardHandler)}
		d, err := simulatedDriver(context.Background(), env)
		if err != nil || (d != nil) != want {
			t.Errorf("%q: %v, %v", ini, d, err)
		}
		if d != nil && d.Name() != "simulated" {
			t.Errorf("name %q", d.Name())
		}
	}
}

func TestCAPIDriverNeedsTheConductorsOwnParts(t *testing.T) {
	env := service.DriverEnv{Config: loadTestConfig(t, "[capi_driver]\nkubeconfig = /nonexistent\n"), Log: slog.New(slog.DiscardHandler)}
	if d, err := capiDriver(context.Background(), env); err == nil || d != nil {
		t.Fatalf("%v, %v", d, err)
	}
}
