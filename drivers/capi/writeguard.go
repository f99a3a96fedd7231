package capi

import (
	"context"
	"sync"
)

// writeGuard makes the two writes Observe does (sizeAutoscaled, cleanup)
// happen once when the conductor observes the same cluster from several
// goroutines (a periodic sync beside a status request): a write runs
// under its key's lock, waiting at most until the caller's ctx ends, and
// remembers what it wrote until the informer cache shows it, so a caller
// that read the cache before the write landed does not repeat it.
type writeGuard struct {
	mu    sync.Mutex
	locks map[string]*keyLock
	// wrote holds, per key, what the last successful write wrote.
	wrote map[string]string
}

// keyLock is one key's lock and how many callers hold or wait for it (the
// entry goes when none does).
type keyLock struct {
	ch    chan struct{}
	users int
}

// lock takes key's lock, or returns ctx's error once ctx ends first.
func (g *writeGuard) lock(ctx context.Context, key string) (unlock func(), err error) {
	g.mu.Lock()
	if g.locks == nil {
		g.locks = map[string]*keyLock{}
	}
	l, ok := g.locks[key]
	if !ok {
		l = &keyLock{ch: make(chan struct{}, 1)}
		g.locks[key] = l
	}
	l.users++
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if l.users--; l.users == 0 {
			delete(g.locks, key)
		}
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// written reports whether the last write under key wrote value.
func (g *writeGuard) written(key, value string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.wrote[key]
	return ok && v == value
}

// note records that a write under key wrote value.
func (g *writeGuard) note(key, value string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wrote == nil {
		g.wrote = map[string]string{}
	}
	g.wrote[key] = value
}

// forget drops what was written under key, once the cache shows it (or it
// no longer matters), so the guard holds only writes the cache has not
// seen yet.
func (g *writeGuard) forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wrote, key)
}
