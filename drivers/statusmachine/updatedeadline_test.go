package statusmachine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// decideWith is decide with the given timeouts.
func decideWith(tm sm.Timeouts, c *objects.Cluster, ngs []*objects.NodeGroup, o drivers.Observation, fresh bool, now time.Time) sm.Decision {
	return sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: o, Fresh: fresh, Now: now, Timeouts: tm})
}

// stuckResize is a resize of the default worker to 3 that the back end holds
// (Request) but does not converge: the MachineDeployment stays at 1 of 3.
func stuckResize(started time.Time) ([]*objects.NodeGroup, drivers.Observation) {
	three := 3
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateComplete, 1),
		ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 3)}
	return ngs, drivers.Observation{Phase: drivers.PhaseReady, Started: started,
		Request: &drivers.BackendRequest{Exists: true, TemplateID: "tmpl-new", NodeGroups: map[string]drivers.NodeGroupRequestState{
			"m": {NodeCount: ptr(1)}, "w": {NodeCount: &three}}},
		NodeGroups: map[string]drivers.NodeGroupObservation{
			"m": {Phase: drivers.PhaseReady},
			"w": {Phase: drivers.PhaseInProgress, Reason: "MachineDeployment md-w: 1 of 3 replicas ready"}}}
}

// TestUpdateDeadline: an update the back end holds but does not converge
// fails on its deadline, counted from Observation.Started, and only on a
// fresh observation; the reason names what did not converge.
func TestUpdateDeadline(t *testing.T) {
	started := t0.Add(5 * time.Hour)
	for _, tc := range []struct {
		name     string
		tm       sm.Timeouts
		row      func() *objects.Cluster
		now      time.Time
		timedOut bool
	}{
		{"Update: before", sm.Timeouts{Update: 30 * time.Minute}, clusterUpdating, started.Add(29 * time.Minute), false},
		{"Update: after", sm.Timeouts{Update: 30 * time.Minute}, clusterUpdating, started.Add(31 * time.Minute), true},
		{"Update 0: none", sm.Timeouts{Create: time.Hour}, clusterUpdating, started.Add(48 * time.Hour), false},
		// Heat: the stack's timeout, the cluster's create_timeout (60 min
		// in row), not Timeouts.Create nor Update.
		{"as create: before the cluster's create_timeout", sm.Timeouts{Create: 10 * time.Minute, Update: 5 * time.Minute, UpdateAsCreate: true},
			clusterUpdating, started.Add(59 * time.Minute), false},
		{"as create: after the cluster's create_timeout", sm.Timeouts{Create: 10 * time.Minute, UpdateAsCreate: true},
			clusterUpdating, started.Add(61 * time.Minute), true},
		// Without create_timeout: Timeouts.Create.
		{"as create: before Create", sm.Timeouts{Create: 90 * time.Minute, UpdateAsCreate: true}, withoutCreateTimeout,
			started.Add(89 * time.Minute), false},
		{"as create: after Create", sm.Timeouts{Create: 90 * time.Minute, UpdateAsCreate: true}, withoutCreateTimeout,
			started.Add(91 * time.Minute), true},
		{"as create, Create 0: none", sm.Timeouts{UpdateAsCreate: true}, withoutCreateTimeout, started.Add(48 * time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ngs, obs := stuckResize(started)
			cached := decideWith(tc.tm, tc.row(), ngs, obs, false, tc.now)
			fresh := decideWith(tc.tm, tc.row(), ngs, obs, true, tc.now)
			if !tc.timedOut {
				if cached.NeedFresh || fresh.NeedFresh || len(fresh.TimedOut) > 0 || fresh.Cluster.Status != objects.UpdateInProgress ||
					ngStatus(fresh, ngs, "w") != objects.UpdateInProgress {
					t.Fatalf("no deadline passed, yet: cached %+v fresh %+v", cached, fresh)
				}
				return
			}
			if !cached.NeedFresh || cached.Changed() {
				t.Fatalf("on a cached observation the decision must only ask for a fresh one: %+v", cached)
			}
			const ngReason = "timed out: MachineDeployment md-w: 1 of 3 replicas ready"
			if fresh.NeedFresh || fresh.Cluster.Status != objects.UpdateFailed ||
				objects.Deref(fresh.Cluster.StatusReason) != "nodegroup ng-w failed: "+ngReason {
				t.Fatalf("fresh: %s %q", fresh.Cluster.Status, objects.Deref(fresh.Cluster.StatusReason))
			}
			if fresh.Event == nil || event(fresh) != "update/failure" {
				t.Errorf("event %q, want update/failure", event(fresh))
			}
			var w *objects.NodeGroup
			for _, ng := range fresh.NodeGroups {
				if ng.UUID == "w" {
					w = ng
				}
			}
			if w == nil || w.Status != objects.UpdateFailed || objects.Deref(w.StatusReason) != ngReason {
				t.Fatalf("nodegroup w: %+v", w)
			}
			if strings.Join(fresh.TimedOut, ",") != "nodegroup ng-w" {
				t.Errorf("timed out %v", fresh.TimedOut)
			}
		})
	}
}

func clusterUpdating() *objects.Cluster { return row(objects.UpdateInProgress) }

func withoutCreateTimeout() *objects.Cluster {
	c := row(objects.UpdateInProgress)
	c.CreateTimeout = nil
	objects.ResetChanges(c)
	return c
}

// TestUpdateDeadlineOfTheClusterAndOfARollback: a cluster update whose
// nodegroups are settled (an upgrade of the control plane, a cluster-wide
// change) and a rollback fail on the deadline with the back end's reason.
func TestUpdateDeadlineOfTheClusterAndOfARollback(t *testing.T) {
	started := t0.Add(5 * time.Hour)
	tm := sm.Timeouts{Update: 30 * time.Minute}
	for status, failed := range map[string]string{objects.UpdateInProgress: objects.UpdateFailed,
		objects.RollbackInProgress: objects.RollbackFailed} {
		ngs := defaultNGs(objects.UpdateComplete)
		obs := drivers.Observation{Phase: drivers.PhaseInProgress, Reason: "ControlPlane rollout: 1 of 3 machines on v1.34.1",
			Started: started, NodeGroups: everyNG(ngs, drivers.PhaseReady)}
		if d := decideWith(tm, row(status), ngs, obs, true, started.Add(29*time.Minute)); d.Cluster.Status != status || len(d.TimedOut) > 0 {
			t.Errorf("%s before its deadline: %s %v", status, d.Cluster.Status, d.TimedOut)
		}
		if d := decideWith(tm, row(status), ngs, obs, false, started.Add(31*time.Minute)); !d.NeedFresh || d.Changed() {
			t.Errorf("%s on a cached observation: %+v", status, d)
		}
		d := decideWith(tm, row(status), ngs, obs, true, started.Add(31*time.Minute))
		if d.Cluster.Status != failed || objects.Deref(d.Cluster.StatusReason) != "timed out: ControlPlane rollout: 1 of 3 machines on v1.34.1" ||
			event(d) != "update/failure" {
			t.Errorf("%s after its deadline: %s %q %s", status, d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), event(d))
		}
		// A back end that says nothing: the reason says so.
		obs.Reason = ""
		d = decideWith(tm, row(status), ngs, obs, true, started.Add(31*time.Minute))
		if objects.Deref(d.Cluster.StatusReason) != "timed out: no progress reported" {
			t.Errorf("%s without a reason: %q", status, objects.Deref(d.Cluster.StatusReason))
		}
	}
}

// TestUpdateDeadlineWaitsForTheChangeToReachTheBackEnd: while the back end's
// desired state does not show the change the rows hold (the claim's driver
// call has not happened yet), the Started it reports is an earlier
// operation's: no update deadline applies, and the change is left to the
// resumption of interrupted operations.
func TestUpdateDeadlineWaitsForTheChangeToReachTheBackEnd(t *testing.T) {
	long := t0.Add(5 * time.Hour) // the previous update's start
	now := long.Add(3 * time.Hour)
	tm := sm.Timeouts{Update: 30 * time.Minute, Resume: 10 * time.Minute, ResumeAttempts: 2}
	ngs, obs := stuckResize(long)
	two := 2
	obs.Request.NodeGroups["w"] = drivers.NodeGroupRequestState{NodeCount: &two} // the back end still holds 2
	c := row(objects.UpdateInProgress)
	c.UpdatedAt = ptr(now.Add(-time.Minute)) // claimed a minute ago
	objects.ResetChanges(c)
	for _, fresh := range []bool{false, true} {
		d := decideWith(tm, c, ngs, obs, fresh, now)
		if d.NeedFresh || len(d.TimedOut) > 0 || d.Cluster.Status != objects.UpdateInProgress || ngStatus(d, ngs, "w") != objects.UpdateInProgress {
			t.Fatalf("fresh %v: a change not reached failed on an earlier operation's start: %+v", fresh, d)
		}
	}
	// Once the back end holds it, its start counts.
	obs.Started = now.Add(-31 * time.Minute)
	obs.Request.NodeGroups["w"] = drivers.NodeGroupRequestState{NodeCount: ptr(3)}
	if d := decideWith(tm, c, ngs, obs, true, now); d.Cluster.Status != objects.UpdateFailed {
		t.Fatalf("reached and past its deadline: %s", d.Cluster.Status)
	}
	// A template change not reached (an upgrade) likewise.
	obs.Started = long
	c2 := objects.Clone(c)
	c2.ClusterTemplateID = objects.Str("tmpl-upgraded")
	objects.ResetChanges(c2)
	if d := decideWith(tm, c2, ngs, obs, true, now); d.Cluster.Status != objects.UpdateInProgress || len(d.TimedOut) > 0 {
		t.Fatalf("an upgrade not reached: %s %v", d.Cluster.Status, d.TimedOut)
	}
}

// TestUpdateTimedOutStaysFailed: a cluster failed on its update deadline is
// settled; a back end that converges later does not change it (as for a
// create that timed out), until a new operation.
func TestUpdateTimedOutStaysFailed(t *testing.T) {
	started := t0.Add(5 * time.Hour)
	ngs, obs := stuckResize(started)
	d := decideWith(sm.Timeouts{Update: 30 * time.Minute}, row(objects.UpdateInProgress), ngs, obs, true, started.Add(31*time.Minute))
	if d.Cluster.Status != objects.UpdateFailed {
		t.Fatal(d.Cluster.Status)
	}
	failed := objects.Clone(d.Cluster)
	objects.ResetChanges(failed)
	var ngsAfter []*objects.NodeGroup
	for _, ng := range ngs {
		if ng.UUID == "w" {
			ng = objects.Clone(ng)
			ng.Status = objects.UpdateFailed
			objects.ResetChanges(ng)
		}
		ngsAfter = append(ngsAfter, ng)
	}
	obs.Phase, obs.NodeGroups = drivers.PhaseReady, everyNG(ngs, drivers.PhaseReady)
	later := decideWith(sm.Timeouts{Update: 30 * time.Minute}, failed, ngsAfter, obs, true, started.Add(2*time.Hour))
	if later.Skip == "" || later.Changed() {
		t.Fatalf("a timed-out update whose back end converged later: %+v", later)
	}
}
