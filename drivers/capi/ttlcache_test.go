package capi

import (
	"testing"
	"time"
)

// The cloud lookups' cache holds at most its size: a full cache drops the
// expired entries first, then the oldest; an expired entry is not served.
func TestTTLCacheIsBounded(t *testing.T) {
	c := newTTLCache[string, int](time.Minute, 3)
	t0 := time.Unix(1_700_000_000, 0)
	c.put("a", 1, t0)
	c.put("b", 2, t0.Add(time.Second))
	c.put("c", 3, t0.Add(2*time.Second))
	if v, ok := c.get("a", t0.Add(30*time.Second)); !ok || v != 1 {
		t.Fatalf("a = %d, %v", v, ok)
	}
	// Full: the oldest (a) goes.
	c.put("d", 4, t0.Add(3*time.Second))
	if _, ok := c.get("a", t0.Add(4*time.Second)); ok || c.len() != 3 {
		t.Fatalf("a still held, or %d entries", c.len())
	}
	// Later, b, c and d have expired: a put drops them all.
	late := t0.Add(2 * time.Minute)
	c.put("e", 5, late)
	if c.len() != 1 {
		t.Fatalf("%d entries after the expired ones were dropped, want 1", c.len())
	}
	if _, ok := c.get("e", late.Add(time.Minute)); ok {
		t.Fatal("an entry served at its ttl")
	}
	if c.len() != 0 {
		t.Fatalf("an expired entry read is still held: %d", c.len())
	}
	// Replacing a key of a full cache evicts nothing.
	for i, k := range []string{"x", "y", "z"} {
		c.put(k, i, late)
	}
	c.put("y", 9, late.Add(time.Second))
	for _, k := range []string{"x", "y", "z"} {
		if _, ok := c.get(k, late.Add(2*time.Second)); !ok {
			t.Errorf("%s evicted by the replacement of y", k)
		}
	}
}

// A record of our last write is dropped once the cache shows it, when the
// cache shows another object under the name, when the object stays absent
// from the cache for markAbsentFor, and by forget: it never holds a
// cluster pending for ever.
func TestWrittenGenerationsNeverOutliveTheirObject(t *testing.T) {
	r := ref{"ns", "c"}
	t0 := time.Unix(1_700_000_000, 0)
	var w writtenGenerations
	w.note(r, "uid-a", 5, t0)
	if !w.behind(r, "uid-a", 4, t0) || !w.behind(r, "", 0, t0.Add(time.Minute)) {
		t.Fatal("an older generation, or no object yet, is not behind our write")
	}
	if w.behind(r, "uid-a", 5, t0) || w.size() != 0 {
		t.Fatalf("caught up: still behind, or %d records", w.size())
	}
	w.note(r, "uid-a", 5, t0)
	if w.behind(r, "uid-b", 1, t0) || w.size() != 0 {
		t.Fatal("a replaced object is held behind the write to the deleted one")
	}
	w.note(r, "uid-a", 5, t0)
	if w.behind(r, "", 0, t0.Add(markAbsentFor)) || w.size() != 0 {
		t.Fatal("an object absent from the cache for markAbsentFor is still awaited")
	}
	w.note(r, "uid-a", 5, t0)
	w.forget(r)
	if w.behind(r, "uid-a", 1, t0) {
		t.Fatal("a forgotten record still holds the cluster")
	}
}
