package oslo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/brokerctl"
)

// TestLiveBrokerRestart: `rabbitmqctl stop_app` and `start_app` while calls
// are running. The broker comes back without the transient exchanges and
// queues; server and client reconnect with oslo's backoff, redeclare them
// and serve again, without a restart of either.
func TestLiveBrokerRestart(t *testing.T) {
	brokerctl.SkipUnlessEnabled(t)
	_, rec, c, tgt := recoveryEnv(t, 100*time.Millisecond)

	// Callers keep calling through the restart.
	var restarted atomic.Bool
	var okBefore, okAfter, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.Call(userCtx(), tgt, "ping_conductor", nil, CallOptions{Timeout: 3 * time.Second})
				switch {
				case err != nil:
					failed.Add(1)
					time.Sleep(50 * time.Millisecond)
				case restarted.Load():
					okAfter.Add(1)
				default:
					okBefore.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)

	brokerctl.Restart(t)
	restarted.Store(true)
	t.Logf("broker restarted; %d calls answered before, %d failed so far", okBefore.Load(), failed.Load())

	answered := testkit.Poll(90*time.Second, func() bool { return okAfter.Load() >= 50 })
	close(stop)
	wg.Wait()
	if answered != nil {
		t.Fatalf("after the restart only %d calls were answered in 90 s (%d failed)", okAfter.Load(), failed.Load())
	}
	if okBefore.Load() == 0 {
		t.Fatal("no call was answered before the restart: the callers did not run through it")
	}

	// Casts and a fresh call on the recovered connections.
	if err := c.Cast(context.Background(), tgt, "record", map[string]any{"value": 1, "note": "after restart"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "after restart")
	for i := 0; i < 20; i++ {
		if _, err := c.Call(userCtx(), tgt, "ping_conductor", nil, CallOptions{Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("call %d after recovery: %v", i, err)
		}
	}
	t.Logf("%d calls answered before the restart, %d after, %d failed during it", okBefore.Load(), okAfter.Load(), failed.Load())
}
