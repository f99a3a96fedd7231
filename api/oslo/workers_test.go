package oslo

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
)

func idleWorkers(p *workerPool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// waitIdle waits until n workers are idle (they park themselves after
// their request, on their own goroutine).
func waitIdle(t *testing.T, p *workerPool, n int) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() bool { return idleWorkers(p) == n }, "waiting for %d idle workers", n)
}

func TestWorkerPoolReusesIdleWorkersAndRetiresThem(t *testing.T) {
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	p := &workerPool{}
	task := func(b string) func() {
		return func() {
			if b == "block" {
				<-release
			}
			mu.Lock()
			got = append(got, b)
			mu.Unlock()
		}
	}

	// Sequential requests reuse one worker.
	for _, b := range []string{"a", "b", "c"} {
		p.run(task(b))
		waitIdle(t, p, 1)
	}
	// Concurrent ones need more: two blocked requests, then a third.
	p.run(task("block"))
	p.run(task("block"))
	waitIdle(t, p, 0)
	p.run(task("d"))
	waitIdle(t, p, 1)
	close(release)
	waitIdle(t, p, 3)
	mu.Lock()
	if len(got) != 6 {
		t.Fatalf("served %v", got)
	}
	mu.Unlock()

	// Workers idle since before the cutoff are retired; recent ones stay.
	p.reap(time.Now().Add(-time.Hour))
	if n := idleWorkers(p); n != 3 {
		t.Fatalf("reaping nothing left %d idle", n)
	}
	p.reap(time.Now().Add(time.Second))
	if n := idleWorkers(p); n != 0 {
		t.Fatalf("reaping all left %d idle", n)
	}
}

func TestWorkerPoolStopsIdlingWhenClosed(t *testing.T) {
	release := make(chan struct{})
	served := make(chan struct{}, 1)
	p := &workerPool{}
	p.run(func() { <-release; served <- struct{}{} }) // busy while the pool closes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.reapIdle(ctx); close(done) }()
	cancel()
	<-done
	close(release)
	<-served
	// The worker exits after its request: one that parked itself in the
	// closed pool would never be retired, and live would not drop to 0.
	exited := make(chan struct{})
	go func() { p.live.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker did not exit after its request in a closed pool: %d idle", idleWorkers(p))
	}
	if n := idleWorkers(p); n != 0 {
		t.Fatalf("a worker parked itself in a closed pool: %d idle", n)
	}
}
