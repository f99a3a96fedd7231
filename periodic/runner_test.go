package periodic_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/periodic"
)

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// recJob records its runs on a channel and can be made to block.
type recJob struct {
	name    string
	spacing time.Duration
	clock   periodic.Clock
	runs    chan time.Time
	block   chan struct{} // when non-nil, each run waits for a value
	running atomic.Int32
	maxConc atomic.Int32
	fail    bool
}

func (j *recJob) Name() string           { return j.name }
func (j *recJob) Spacing() time.Duration { return j.spacing }
func (j *recJob) RunOnce(ctx context.Context) error {
	n := j.running.Add(1)
	defer j.running.Add(-1)
	for {
		m := j.maxConc.Load()
		if n <= m || j.maxConc.CompareAndSwap(m, n) {
			break
		}
	}
	j.runs <- j.clock.Now()
	if j.block != nil {
		select {
		case <-j.block:
		case <-ctx.Done():
		}
	}
	if j.fail {
		panic("job exploded")
	}
	return nil
}

func startRunner(t *testing.T, r *periodic.Runner) (cancel func()) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	return func() { stop(); <-done }
}

func recv(t *testing.T, ch <-chan time.Time) time.Time {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a run")
		return time.Time{}
	}
}

func noRun(t *testing.T, ch <-chan time.Time) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected run at %v", v)
	default:
	}
}

func waiters(t *testing.T, c *periodic.ManualClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.BlockUntil(ctx, n); err != nil {
		t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

func TestRunnerRunsAtStartThenEverySpacing(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	clk := periodic.NewManualClock(t0)
	j := &recJob{name: "j", spacing: 10 * time.Second, clock: clk, runs: make(chan time.Time, 10)}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: clk, Jitter: -1}, testLog(t), nil)
	r.Add(j, true)
	stop := startRunner(t, r)
	defer stop()
	if got := recv(t, j.runs); !got.Equal(t0) {
		t.Fatalf("first run at %v, want at start %v", got, t0)
	}
	waiters(t, clk, 1)
	clk.Advance(9 * time.Second)
	noRun(t, j.runs)
	waiters(t, clk, 1)
	clk.Advance(time.Second)
	if got := recv(t, j.runs); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("second run at %v", got)
	}
}

func TestRunnerSlowRunDelaysTheNextInsteadOfStacking(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	clk := periodic.NewManualClock(t0)
	j := &recJob{name: "slow", spacing: 10 * time.Second, clock: clk, runs: make(chan time.Time, 10),
		block: make(chan struct{})}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: clk, Jitter: -1}, testLog(t), nil)
	r.Add(j, true)
	stop := startRunner(t, r)
	defer func() { close(j.block); stop() }()
	recv(t, j.runs)
	// The run takes 35 s: three spacings pass while it runs.
	clk.Advance(35 * time.Second)
	noRun(t, j.runs)
	j.block <- struct{}{}
	// Exactly one run follows at once, not three.
	if got := recv(t, j.runs); !got.Equal(t0.Add(35 * time.Second)) {
		t.Fatalf("catch-up run at %v", got)
	}
	j.block <- struct{}{}
	waiters(t, clk, 1)
	noRun(t, j.runs)
	if m := j.maxConc.Load(); m != 1 {
		t.Fatalf("max concurrent runs = %d, want 1", m)
	}
	clk.Advance(10 * time.Second)
	recv(t, j.runs)
}

func TestRunnerStartRunsInOrderAndSurvivesPanics(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	clk := periodic.NewManualClock(t0)
	first := &recJob{name: "heartbeat", spacing: time.Minute, clock: clk, runs: make(chan time.Time, 10),
		block: make(chan struct{})}
	second := &recJob{name: "sync", spacing: 10 * time.Second, clock: clk, runs: make(chan time.Time, 10), fail: true}
	disabled := &recJob{name: "off", spacing: 0, clock: clk, runs: make(chan time.Time, 10)}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: clk, Jitter: -1}, testLog(t), nil)
	r.Add(first, true)
	r.Add(disabled, true)
	r.Add(second, true)
	stop := startRunner(t, r)
	defer func() { close(first.block); stop() }()
	recv(t, first.runs)
	noRun(t, second.runs) // waits for the heartbeat's first run
	first.block <- struct{}{}
	recv(t, second.runs) // panics; the runner goes on
	waiters(t, clk, 2)
	clk.Advance(10 * time.Second)
	recv(t, second.runs)
	noRun(t, disabled.runs)
}

func TestRunnerJitterStaysWithinFivePercent(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	clk := periodic.NewManualClock(t0)
	j := &recJob{name: "j", spacing: 100 * time.Second, clock: clk, runs: make(chan time.Time, 10)}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: clk, Seed: 42}, testLog(t), nil)
	r.Add(j, false)
	stop := startRunner(t, r)
	defer stop()
	waiters(t, clk, 1)
	clk.Advance(99 * time.Second)
	noRun(t, j.runs)
	waiters(t, clk, 1)
	clk.Advance(6 * time.Second)
	got := recv(t, j.runs)
	if d := got.Sub(t0); d < 100*time.Second || d > 105*time.Second {
		t.Fatalf("ran after %v, want within [100s, 105s]", d)
	}
}

func TestRunnerStopsOnCancel(t *testing.T) {
	clk := periodic.NewManualClock(time.Unix(0, 0))
	j := &recJob{name: "j", spacing: time.Second, clock: clk, runs: make(chan time.Time, 10), block: make(chan struct{})}
	r := periodic.NewRunner(periodic.RunnerOptions{Clock: clk}, testLog(t), nil)
	r.Add(j, true)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	recv(t, j.runs)
	cancel() // the blocked run sees ctx done and Run returns
	wg.Wait()
	if errors.Is(ctx.Err(), context.Canceled) && j.running.Load() != 0 {
		t.Fatal("a run is still in progress after Run returned")
	}
}
