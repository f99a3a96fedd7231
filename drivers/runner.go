package drivers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// StartRunners starts Run, in its own goroutine, for every driver of ds
// that implements Runner, and returns once all of them are Ready or wait has
// passed, whichever comes first (ctx ending also returns). Run lives as long
// as ctx; a Run that ends before ctx does is logged. A driver that panics in
// Run is logged and not restarted. The returned function waits for every
// Run to return (after ctx ended).
func StartRunners(ctx context.Context, ds []Driver, wait time.Duration, log *slog.Logger) (waitStopped func()) {
	var wg sync.WaitGroup
	var runners []Runner
	var names []string
	for _, d := range ds {
		r, ok := d.(Runner)
		if !ok {
			continue
		}
		runners = append(runners, r)
		names = append(names, d.Name())
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					log.Error("driver background work panicked; the driver stays not ready", "driver", name, "panic", p)
				}
			}()
			err := r.Run(ctx)
			switch {
			case ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())):
				log.Debug("driver background work stopped", "driver", name)
			case err != nil:
				log.Error("driver background work stopped before the conductor", "driver", name, "error", err)
			default:
				log.Warn("driver background work returned before the conductor stopped", "driver", name)
			}
		}(d.Name())
	}
	if len(runners) == 0 {
		return wg.Wait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pending := 0
		for _, r := range runners {
			if r.Ready() != nil {
				pending++
			}
		}
		if pending == 0 {
			return wg.Wait
		}
		select {
		case <-ctx.Done():
			return wg.Wait
		case <-deadline.C:
			for i, r := range runners {
				if err := r.Ready(); err != nil {
					log.Warn("driver not ready yet; serving anyway, its operations fail until it is", "driver", names[i],
						"waited", wait.String(), "error", err)
				}
			}
			return wg.Wait
		case <-tick.C:
		}
	}
}
