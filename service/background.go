package service

import (
	"context"
	"slices"
	"sync"
)

// background owns the conductor's long-lived goroutines: each is started
// with Go under a name, and wait returns once every one of them returned,
// or names those still running when its ctx ends. serve starts nothing in
// the background any other way, so that a stop knows what is left.
type background struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]int
}

// Go runs f in a goroutine of its own, named name.
func (b *background) Go(name string, f func()) {
	b.mu.Lock()
	if b.running == nil {
		b.running = map[string]int{}
	}
	b.running[name]++
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			b.mu.Lock()
			b.running[name]--
			if b.running[name] == 0 {
				delete(b.running, name)
			}
			b.mu.Unlock()
		}()
		f()
	}()
}

// wait blocks until every goroutine returned (nil) or ctx ends (the names
// of those still running, sorted).
func (b *background) wait(ctx context.Context) []string {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for n := range b.running {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
