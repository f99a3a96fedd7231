package periodic

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Job is one periodic task.
type Job interface {
	// Name is the task name used in logs and metrics (sync_cluster_status,
	// ...).
	Name() string
	// Spacing is the time between the starts of two runs; ≤ 0 disables
	// the job.
	Spacing() time.Duration
	// RunOnce runs one cycle. An error is logged; the job runs again at
	// its next time.
	RunOnce(ctx context.Context) error
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Jitter is the largest random delay added to each spacing, as a
	// fraction of it (oslo.service uses up to 5 %). 0 means 0.05; negative
	// disables jitter.
	Jitter float64
	// Clock defaults to RealClock.
	Clock Clock
	// Seed seeds the jitter; 0 picks a random seed.
	Seed uint64
}

// Runner runs jobs on their spacing. The schedule of each job is a
// robfig/cron ConstantDelaySchedule measured from the start of the previous
// run; the runner keeps its own loop instead of cron.Cron because cron reads
// the wall clock directly and a test must be able to drive time. A run that
// takes longer than the spacing delays the next run (cron's
// DelayIfStillRunning semantics) rather than starting a second one.
type Runner struct {
	log     *slog.Logger
	clock   Clock
	jitter  float64
	metrics *Metrics

	mu   sync.Mutex
	rand *rand.Rand
	jobs []entry
}

type entry struct {
	job        Job
	runAtStart bool
}

// NewRunner returns a Runner. metrics may be nil.
func NewRunner(o RunnerOptions, log *slog.Logger, metrics *Metrics) *Runner {
	r := &Runner{log: log, clock: o.Clock, jitter: o.Jitter, metrics: metrics}
	if r.clock == nil {
		r.clock = RealClock{}
	}
	if r.jitter == 0 {
		r.jitter = 0.05
	}
	if r.jitter < 0 {
		r.jitter = 0
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64() //nolint:gosec // the seed of the periodic jobs' jitter, not a secret
	}
	r.rand = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) //nolint:gosec // the periodic jobs' jitter, not a secret
	return r
}

// Add registers j. Jobs that run at start do their first run one after the
// other in the order they were added (so the heartbeat row exists before
// the first sync shares out clusters); after its first run each job follows
// its own schedule. Add must be called before Run.
func (r *Runner) Add(j Job, runAtStart bool) {
	r.jobs = append(r.jobs, entry{job: j, runAtStart: runAtStart})
}

// Jobs returns the jobs added, in order (disabled ones included).
func (r *Runner) Jobs() []Job {
	out := make([]Job, len(r.jobs))
	for i, e := range r.jobs {
		out[i] = e.job
	}
	return out
}

// Run runs the jobs until ctx is done, then waits for the runs in progress
// to return (they see ctx cancelled).
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	prev := closedChan()
	for _, e := range r.jobs {
		if e.job.Spacing() <= 0 {
			r.log.Info("periodic task disabled", "task", e.job.Name())
			continue
		}
		done := make(chan struct{})
		wg.Add(1)
		go func(e entry, prev <-chan struct{}, done chan struct{}) {
			defer wg.Done()
			r.loop(ctx, e, prev, done)
		}(e, prev, done)
		prev = done
	}
	wg.Wait()
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (r *Runner) loop(ctx context.Context, e entry, prev <-chan struct{}, firstDone chan struct{}) {
	sched := cron.Every(e.job.Spacing())
	var next time.Time
	if e.runAtStart {
		select {
		case <-prev:
		case <-ctx.Done():
			close(firstDone)
			return
		}
		next = r.clock.Now()
	} else {
		close(firstDone)
		firstDone = nil
		next = r.nextAfter(sched, r.clock.Now(), e.job.Spacing())
	}
	for {
		if wait := next.Sub(r.clock.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				if firstDone != nil {
					close(firstDone)
				}
				return
			case <-r.clock.After(wait):
			}
		}
		if ctx.Err() != nil {
			if firstDone != nil {
				close(firstDone)
			}
			return
		}
		started := r.clock.Now()
		r.RunJob(ctx, e.job)
		if firstDone != nil {
			close(firstDone)
			firstDone = nil
		}
		next = r.nextAfter(sched, started, e.job.Spacing())
	}
}

// nextAfter is the schedule's next time after start plus jitter. A run
// that overran its spacing is followed by the next run right away, never
// by two.
func (r *Runner) nextAfter(sched cron.Schedule, start time.Time, spacing time.Duration) time.Time {
	next := sched.Next(start)
	if r.jitter > 0 {
		r.mu.Lock()
		j := time.Duration(r.rand.Float64() * r.jitter * float64(spacing))
		r.mu.Unlock()
		next = next.Add(j)
	}
	return next
}

// RunJob runs one cycle of j now, recording its duration and outcome. A
// panic in the job is logged and counted as an error.
func (r *Runner) RunJob(ctx context.Context, j Job) {
	start := time.Now()
	err := safeRun(ctx, j)
	elapsed := time.Since(start)
	r.metrics.observeCycle(j.Name(), elapsed, err)
	if err != nil {
		r.log.Warn("periodic task failed", "task", j.Name(), "error", err, "duration", elapsed)
		return
	}
	r.log.Debug("periodic task done", "task", j.Name(), "duration", elapsed)
}

func safeRun(ctx context.Context, j Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in %s: %v\n%s", j.Name(), p, debug.Stack())
		}
	}()
	return j.RunOnce(ctx)
}
