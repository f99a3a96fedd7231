// Package load runs one benchmark cell: n callers each calling fn in a loop
// for a fixed duration, and reports the completed calls per second and the
// latency percentiles. Every call gets its own deadline, so a server that
// stops answering ends the cell with errors, not a hang.
package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Result is one cell's outcome.
type Result struct {
	Callers  int     `json:"callers"`
	Calls    int     `json:"calls"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_sec"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	FirstErr string  `json:"first_error,omitempty"`
	// Rounds holds the rate of each round when Combine made the result.
	Rounds []float64 `json:"rounds_per_sec,omitempty"`
}

// Options bound a cell.
type Options struct {
	Callers int
	// Warmup runs (and discards) calls before the measured window.
	Warmup time.Duration
	// Duration is the measured window.
	Duration time.Duration
	// CallTimeout is each call's deadline.
	CallTimeout time.Duration
	// MaxCalls, when > 0, stops the cell after that many measured calls.
	MaxCalls int
}

// Run runs fn from o.Callers goroutines. Only calls that start and end
// inside the measured window count; the window ends early when ctx ends.
func Run(ctx context.Context, o Options, fn func(ctx context.Context) error) Result {
	if o.Callers < 1 {
		o.Callers = 1
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	start := time.Now().Add(o.Warmup)
	end := start.Add(o.Duration)
	runCtx, cancel := context.WithDeadline(ctx, end.Add(o.CallTimeout))
	defer cancel()

	var mu sync.Mutex
	var lat []time.Duration
	res := Result{Callers: o.Callers}
	var wg sync.WaitGroup
	for range o.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			errs := 0
			var firstErr error
			for {
				t0 := time.Now()
				if !t0.Before(end) || runCtx.Err() != nil {
					break
				}
				if o.MaxCalls > 0 {
					mu.Lock()
					full := res.Calls+len(local) >= o.MaxCalls
					mu.Unlock()
					if full {
						break
					}
				}
				cctx, ccancel := context.WithTimeout(runCtx, o.CallTimeout)
				err := fn(cctx)
				ccancel()
				t1 := time.Now()
				if t0.Before(start) {
					continue // warm-up
				}
				if err != nil {
					if errors.Is(err, context.Canceled) && ctx.Err() != nil {
						break
					}
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				if t1.After(end) {
					break
				}
				local = append(local, t1.Sub(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			res.Calls += len(local)
			res.Errors += errs
			if firstErr != nil && res.FirstErr == "" {
				res.FirstErr = fmt.Sprint(firstErr)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if d := o.Duration; elapsed > d {
		elapsed = d
	}
	if elapsed <= 0 {
		elapsed = time.Nanosecond
	}
	res.Seconds = elapsed.Seconds()
	res.PerSec = float64(res.Calls) / res.Seconds
	slices.Sort(lat)
	res.P50ms = ms(percentile(lat, 0.50))
	res.P99ms = ms(percentile(lat, 0.99))
	return res
}

func percentile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Combine merges the rounds of one cell: the median rate and the median
// percentiles of the rounds, with calls and errors summed.
func Combine(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	med := func(get func(Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	out := Result{Callers: rs[0].Callers}
	for _, r := range rs {
		out.Calls += r.Calls
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		out.Rounds = append(out.Rounds, r.PerSec)
		if out.FirstErr == "" {
			out.FirstErr = r.FirstErr
		}
	}
	out.PerSec = med(func(r Result) float64 { return r.PerSec })
	out.P50ms = med(func(r Result) float64 { return r.P50ms })
	out.P99ms = med(func(r Result) float64 { return r.P99ms })
	return out
}
