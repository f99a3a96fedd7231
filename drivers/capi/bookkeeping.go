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
// object (uid) and generation an apply by this driver produced, until the
// informer cache has caught up with it. The driver keeps one for the
// Cluster and one for the add-ons' ClusterResourceSet. A record is dropped
// once the cache shows that generation, when the cache shows another
// object under the name (ours was deleted and replaced), when the driver
// asks for the cluster's deletion or sees it gone (forget), and when the
// cache has not shown the object at all for markAbsentFor: a record never
// outlives its cluster, and never holds a cluster pending for ever.
type writtenGenerations struct {
	mu sync.Mutex
	m  map[string]writtenMark
}

type writtenMark struct {
	uid        string
	generation int64
	at         time.Time
}

// markAbsentFor is how long an object this driver wrote may be missing
// from the informer cache before the record of the write is dropped: far
// longer than a watch event takes to arrive while the management cluster
// answers (and while it does not, nothing is observed).
const markAbsentFor = 10 * time.Minute

// note records the object (uid) and generation an apply of r's object
// produced at now.
func (w *writtenGenerations) note(r ref, uid string, generation int64, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]writtenMark{}
	}
	w.m[r.String()] = writtenMark{uid: uid, generation: generation, at: now}
}

// behind reports whether the cached object of r (uid and generation; ""
// and 0 when the cache has none) is older than what this driver last
// wrote: what the cache shows then still describes the spec before our
// change, and judging an upgrade, a resize or the add-ons by it would call
// them done before Cluster API has seen the change.
func (w *writtenGenerations) behind(r ref, uid string, generation int64, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := r.String()
	want, ok := w.m[key]
	if !ok {
		return false
	}
	switch {
	case uid == "" && now.Sub(want.at) < markAbsentFor:
		return true // not in the cache yet
	case uid == "" || uid != want.uid || generation >= want.generation:
		delete(w.m, key)
		return false
	}
	return true
}

// forget drops the record of r (its cluster is being deleted, or gone).
func (w *writtenGenerations) forget(r ref) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, r.String())
}

// size is the number of records held.
func (w *writtenGenerations) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
