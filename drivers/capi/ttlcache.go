package capi

import (
	"sync"
	"time"
)

// ttlCache keeps values for ttl, at most max of them: a put first drops the
// expired entries when the cache is full, then the oldest. It holds what
// the driver looks up in the cloud (flavors, images) per cloud and
// credential, so that a conductor running for months over many projects
// keeps a bounded number of entries. The zero value is not usable: use
// newTTLCache.
type ttlCache[K comparable, V any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	entries map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

func newTTLCache[K comparable, V any](ttl time.Duration, maxEntries int) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, max: maxEntries, entries: map[K]ttlEntry[V]{}}
}

// get returns the value of k if it was put less than ttl before now.
func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && now.Sub(e.at) >= c.ttl {
		delete(c.entries, k)
		ok = false
	}
	return e.v, ok
}

// put stores v for k at now.
func (c *ttlCache[K, V]) put(k K, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		var oldest K
		var oldestAt time.Time
		for key, e := range c.entries {
			if now.Sub(e.at) >= c.ttl {
				delete(c.entries, key)
				continue
			}
			if oldestAt.IsZero() || e.at.Before(oldestAt) {
				oldest, oldestAt = key, e.at
			}
		}
		if len(c.entries) >= c.max {
			delete(c.entries, oldest)
		}
	}
	c.entries[k] = ttlEntry[V]{v, now}
}

// len is the number of entries held, expired ones included.
func (c *ttlCache[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
