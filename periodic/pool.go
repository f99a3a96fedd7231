package periodic

import (
	"context"
	"sync"
)

// inFlight is the set of clusters a job is working on: per-cluster
// single-flight across overlapping calls of RunOnce.
type inFlight struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (f *inFlight) acquire(uuid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]struct{}{}
	}
	if _, busy := f.m[uuid]; busy {
		return false
	}
	f.m[uuid] = struct{}{}
	return true
}

func (f *inFlight) release(uuid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, uuid)
}

// forEach runs fn for each item with at most workers at once, and returns
// when all have returned or ctx is done and the started ones returned.
func forEach[T any](ctx context.Context, workers int, items []T, fn func(T)) {
	if workers < 1 {
		workers = 1
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func(it T) {
			defer func() { <-sem; wg.Done() }()
			fn(it)
		}(it)
	}
	wg.Wait()
}

// onceMap loads a value per key once per cycle, concurrently safe.
type onceMap[V any] struct {
	mu sync.Mutex
	m  map[string]*onceEntry[V]
}

type onceEntry[V any] struct {
	once sync.Once
	v    V
	err  error
}

func (o *onceMap[V]) get(key string, load func() (V, error)) (V, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*onceEntry[V]{}
	}
	e, ok := o.m[key]
	if !ok {
		e = &onceEntry[V]{}
		o.m[key] = e
	}
	o.mu.Unlock()
	e.once.Do(func() { e.v, e.err = load() })
	return e.v, e.err
}
