package capi

import (
	"sync"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// deleteStart is when the current attempt to delete the Cluster r began:
// the latest of its deletionTimestamp, the delete-requested annotation and
// this driver's own record. A delete retried after DELETE_FAILED gets a
// new delete_timeout from it.
func (d *Driver) deleteStart(r ref, cl *clusterv1.Cluster) time.Time {
	start := cl.DeletionTimestamp.Time
	if t, err := time.Parse(time.RFC3339, cl.Annotations[annotationDeleteRequested]); err == nil && t.After(start) {
		start = t
	}
	d.deleteMu.Lock()
	defer d.deleteMu.Unlock()
	if t, ok := d.deleteRequested[r.String()]; ok && t.After(start) {
		start = t
	}
	return start
}

// noteDeleteRequested records when this driver asked for the deletion of
// the Cluster r (a zero time drops the record, once the Cluster is gone).
func (d *Driver) noteDeleteRequested(r ref, at time.Time) {
	d.deleteMu.Lock()
	defer d.deleteMu.Unlock()
	if at.IsZero() {
		delete(d.deleteRequested, r.String())
		return
	}
	if d.deleteRequested == nil {
		d.deleteRequested = map[string]time.Time{}
	}
	d.deleteRequested[r.String()] = at
}

// writtenGenerations records, per object of a cluster (its ref), the
// generation an apply by this driver produced, until the informer cache has
// caught up with it. The driver keeps one for the Cluster and one for the
// add-ons' ClusterResourceSet.
type writtenGenerations struct {
	mu sync.Mutex
	m  map[string]int64
}

// note records the generation an apply of r's object produced.
func (w *writtenGenerations) note(r ref, generation int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]int64{}
	}
	w.m[r.String()] = generation
}

// behind reports whether the cached object of r (at generation, 0 when
// absent) is older than what this driver last wrote: what the cache shows
// then still describes the spec before our change, and judging an upgrade,
// a resize or the add-ons by it would call them done before Cluster API
// has seen the change. Once the cache has caught up the record is dropped.
func (w *writtenGenerations) behind(r ref, generation int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := r.String()
	want, ok := w.m[key]
	if !ok {
		return false
	}
	if generation >= want {
		delete(w.m, key)
		return false
	}
	return true
}
