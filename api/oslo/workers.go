package oslo

import (
	"context"
	"sync"
	"time"
)

// workerIdle is how long a worker may stay idle before it exits: under
// load, requests reuse workers (and the stacks they have grown already)
// instead of starting a goroutine each; an idle process keeps none.
const workerIdle = 10 * time.Second

// workerPool hands tasks to idle workers, most recently used first, and
// starts a worker when none is idle (callers bound how many tasks run at
// once: the server's worker slots, the client's calls). Idle workers are
// retired by reap, not by a timer per task.
type workerPool struct {
	mu     sync.Mutex
	idle   []*worker      // most recently used last
	closed bool           // no more idling: workers exit after their request
	live   sync.WaitGroup // workers started and not exited
}

type worker struct {
	in       chan func() // buffered: the hand-over never blocks
	lastUsed time.Time
}

// run runs task on an idle worker or, when none is idle, on a new one.
func (p *workerPool) run(task func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.in <- task
		return
	}
	p.mu.Unlock()
	w := &worker{in: make(chan func(), 1)}
	w.in <- task
	p.live.Add(1)
	go p.loop(w)
}

func (p *workerPool) loop(w *worker) {
	defer p.live.Done()
	for task := range w.in {
		task()
		w.lastUsed = time.Now()
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
	}
}

// reap retires the workers idle since before cutoff (all of them with the
// zero time).
func (p *workerPool) reap(cutoff time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.idle) && (cutoff.IsZero() || p.idle[n].lastUsed.Before(cutoff)) {
		close(p.idle[n].in)
		n++
	}
	p.idle = append(p.idle[:0], p.idle[n:]...)
}

// reapIdle retires idle workers every workerIdle until ctx ends, then all.
func (p *workerPool) reapIdle(ctx context.Context) {
	t := time.NewTicker(workerIdle)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			p.reap(now.Add(-workerIdle))
		case <-ctx.Done():
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			p.reap(time.Time{})
			return
		}
	}
}
