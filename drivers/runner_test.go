package drivers_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/test/harness"
)

// runner is a driver with background work: ready once its Run has seen
// start closed; ran counts Run calls.
type runner struct {
	fakeDriver
	start   chan struct{}
	ready   atomic.Bool
	ran     atomic.Int32
	stopped chan struct{}
	panics  bool
}

func newRunner(name string) *runner {
	return &runner{fakeDriver: fakeDriver{name: name}, start: make(chan struct{}), stopped: make(chan struct{})}
}

func (r *runner) Run(ctx context.Context) error {
	r.ran.Add(1)
	defer close(r.stopped)
	if r.panics {
		panic("boom")
	}
	select {
	case <-r.start:
		r.ready.Store(true)
	case <-ctx.Done():
		return ctx.Err()
	}
	<-ctx.Done()
	return ctx.Err()
}

func (r *runner) Ready() error {
	if r.ready.Load() {
		return nil
	}
	return fmt.Errorf("%s starting: %w", r.name, drivers.ErrNotReady)
}

func TestStartRunnersWaitsForReadyThenServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := &harness.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	a, b := newRunner("a"), newRunner("b")
	plain := &fakeDriver{name: "plain"}
	close(a.start)
	close(b.start)
	wait := drivers.StartRunners(ctx, []drivers.Driver{a, plain, b}, time.Minute, log)
	if a.Ready() != nil || b.Ready() != nil || a.ran.Load() != 1 || b.ran.Load() != 1 {
		t.Fatalf("returned before every runner was ready: %v %v", a.Ready(), b.Ready())
	}
	cancel()
	wait()
	<-a.stopped
	<-b.stopped
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a stop with the conductor is no error:\n%s", logs.String())
	}
}

func TestStartRunnersServesAfterTheWaitWhenOneIsNotReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &harness.SyncBuffer{}
	slow := newRunner("slow")
	drivers.StartRunners(ctx, []drivers.Driver{slow}, 100*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	if err := slow.Ready(); !errors.Is(err, drivers.ErrNotReady) {
		t.Fatalf("ready: %v", err)
	}
	if !strings.Contains(logs.String(), "driver not ready yet; serving anyway") || !strings.Contains(logs.String(), "driver=slow") {
		t.Fatalf("no warning:\n%s", logs.String())
	}
	// It keeps running after the conductor serves.
	select {
	case <-slow.stopped:
		t.Fatal("Run stopped")
	default:
	}
}

func TestStartRunnersSurvivesAPanic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &harness.SyncBuffer{}
	bad := newRunner("bad")
	bad.panics = true
	wait := drivers.StartRunners(ctx, []drivers.Driver{bad}, 50*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	cancel()
	wait()
	if !strings.Contains(logs.String(), "panicked") {
		t.Fatalf("no log of the panic:\n%s", logs.String())
	}
}
