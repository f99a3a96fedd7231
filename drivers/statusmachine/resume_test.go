package statusmachine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

var resumeTimeouts = sm.Timeouts{Create: 60 * time.Minute, Resume: 5 * time.Minute, ResumeAttempts: 2}

// claimed is row(status) last written (claimed) at t0+1h.
func claimed(status string) *objects.Cluster {
	c := row(status)
	c.CreatedAt, c.UpdatedAt = ptr(t0.Add(time.Hour)), ptr(t0.Add(time.Hour))
	objects.ResetChanges(c)
	return c
}

// newNG is a nodegroup added at the claim (t0+1h).
func newNG(uuid, status string) *objects.NodeGroup {
	ng := ngRow(uuid, objects.RoleWorker, status, 1)
	ng.CreatedAt = ptr(t0.Add(time.Hour))
	objects.ResetChanges(ng)
	return ng
}

func ops(r *sm.Resume) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, c := range r.Calls {
		s := string(c.Op)
		if c.NodeGroup != "" {
			s += ":" + c.NodeGroup
		}
		if c.FromTemplateID != "" {
			s += "<" + c.FromTemplateID
		}
		out = append(out, s)
	}
	return out
}

// held is a back end that holds the cluster with its nodegroups at the
// counts given.
func held(template string, counts map[string]int) *drivers.BackendRequest {
	r := &drivers.BackendRequest{Exists: true, TemplateID: template, NodeGroups: map[string]drivers.NodeGroupRequestState{}}
	for u, n := range counts {
		r.NodeGroups[u] = drivers.NodeGroupRequestState{NodeCount: ptr(n), Version: "v1.34.1"}
	}
	return r
}

// TestInterruptedOperationsAreResumed: every kind of operation claimed and
// not reached within the bound is resumed with the driver call its change
// stands for, and only on a fresh observation.
func TestInterruptedOperationsAreResumed(t *testing.T) {
	late := t0.Add(time.Hour + 6*time.Minute)
	for _, tc := range []struct {
		name   string
		status string
		ngs    []*objects.NodeGroup
		req    *drivers.BackendRequest
		want   []string
	}{
		{"resize", objects.UpdateInProgress,
			[]*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateComplete, 1), ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 5)},
			held("tmpl-new", map[string]int{"m": 1, "w": 2}), []string{"resize_cluster:w"}},
		{"nodegroup create", objects.UpdateInProgress,
			append(defaultNGs(objects.UpdateComplete), newNG("x", objects.CreateInProgress)),
			held("tmpl-new", map[string]int{"m": 1, "w": 2}), []string{"create_nodegroup:x"}},
		{"nodegroup delete", objects.UpdateInProgress,
			append(defaultNGs(objects.UpdateComplete), newNG("x", objects.DeleteInProgress)),
			held("tmpl-new", map[string]int{"m": 1, "w": 2, "x": 1}), []string{"delete_nodegroup:x"}},
		{"upgrade", objects.UpdateInProgress, func() []*objects.NodeGroup {
			ngs := defaultNGs(objects.UpdateInProgress)
			for _, ng := range ngs {
				ng.Version = objects.Str("v1.35.0")
			}
			return ngs
		}(), held("tmpl-old", map[string]int{"m": 1, "w": 2}), []string{"upgrade_cluster<tmpl-old"}},
		{"upgrade of one nodegroup", objects.UpdateInProgress, func() []*objects.NodeGroup {
			ngs := append(defaultNGs(objects.UpdateComplete), newNG("x", objects.UpdateInProgress))
			ngs[2].Version = objects.Str("v1.35.0")
			return ngs
		}(), held("tmpl-new", map[string]int{"m": 1, "w": 2, "x": 1}), []string{"upgrade_cluster:x"}},
		{"cluster update of the default worker (not claimed)", objects.UpdateInProgress, []*objects.NodeGroup{
			ngRow("m", objects.RoleMaster, objects.CreateComplete, 1), ngRow("w", objects.RoleWorker, objects.CreateComplete, 4)},
			held("tmpl-new", map[string]int{"m": 1, "w": 2}), []string{"update_cluster"}},
		{"nodegroup update (its bounds reported)", objects.UpdateInProgress, func() []*objects.NodeGroup {
			ngs := append(defaultNGs(objects.UpdateComplete), newNG("x", objects.UpdateInProgress))
			ngs[2].MaxNodeCount = ptr(int64(7))
			return ngs
		}(), func() *drivers.BackendRequest {
			r := held("tmpl-new", map[string]int{"m": 1, "w": 2, "x": 1})
			x := r.NodeGroups["x"]
			x.MinNodeCount, x.MaxNodeCount = ptr(int64(0)), ptr(int64(3))
			r.NodeGroups["x"] = x
			return r
		}(), []string{"update_nodegroup:x"}},
		{"nodegroup update (a back end that is behind)", objects.UpdateInProgress,
			append(defaultNGs(objects.UpdateComplete), newNG("x", objects.UpdateInProgress)),
			&drivers.BackendRequest{Exists: true, Behind: true, NodeGroups: map[string]drivers.NodeGroupRequestState{
				"x": {NodeCount: ptr(1)}}}, []string{"update_nodegroup:x"}},
		{"deletion", objects.DeleteInProgress, defaultNGs(objects.UpdateComplete),
			held("tmpl-new", map[string]int{"m": 1, "w": 2}), []string{"delete_cluster"}},
		{"create handed over but never received", objects.CreateInProgress, defaultNGs(objects.CreateInProgress),
			&drivers.BackendRequest{}, []string{"create_cluster"}},
		{"a back end that is behind, without details", objects.UpdateInProgress,
			append(defaultNGs(objects.UpdateComplete), newNG("x", objects.CreateInProgress)),
			&drivers.BackendRequest{Exists: true, Behind: true}, []string{"create_nodegroup:x"}},
		{"an update of the cluster alone", objects.UpdateInProgress, defaultNGs(objects.UpdateComplete),
			&drivers.BackendRequest{Exists: true, Behind: true}, []string{"update_cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := drivers.Observation{Phase: drivers.PhaseReady, Reason: "old news", NodeGroups: everyNG(tc.ngs, drivers.PhaseReady), Request: tc.req}
			in := sm.Input{Cluster: claimed(tc.status), NodeGroups: tc.ngs, Observation: obs, Now: late, Timeouts: resumeTimeouts}
			if d := sm.Decide(in); !d.NeedFresh || d.Changed() || d.Resume != nil {
				t.Fatalf("on a cached observation only a fresh one is asked for: %+v", d)
			}
			in.Fresh = true
			d := sm.Decide(in)
			if d.Resume == nil || d.Interrupted == "" || d.Cluster != nil || d.Changed() {
				t.Fatalf("not resumed: %+v", d)
			}
			if got := ops(d.Resume); !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
			if d.Resume.Attempt != 1 || d.Resume.Of != 2 || sm.Attempts(&d.Resume.Note) != 1 {
				t.Errorf("attempt %d of %d, note %q", d.Resume.Attempt, d.Resume.Of, d.Resume.Note)
			}
			// Within the bound the same is only waited for: pending, the
			// stored reason kept, the back end's old news ignored.
			in.Now, in.Fresh = t0.Add(time.Hour+4*time.Minute), false
			d = sm.Decide(in)
			if d.Resume != nil || d.NeedFresh || d.Cluster.Status != tc.status || objects.Deref(d.Cluster.StatusReason) != "before" {
				t.Fatalf("within the bound: %+v, status %s reason %q", d, d.Cluster.Status, objects.Deref(d.Cluster.StatusReason))
			}
		})
	}
}

// TestResumptionsAreCountedThenGivenUp: each resumption is recorded in the
// status_reason; once the attempts are spent the operation fails with a
// reason saying what happened, its nodegroups with it, the node count and
// template the back end holds put back.
func TestResumptionsAreCountedThenGivenUp(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateComplete, 1), ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 5)}
	req := held("tmpl-old", map[string]int{"m": 1, "w": 2})
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: everyNG(ngs, drivers.PhaseReady), Request: req}
	c := claimed(objects.UpdateInProgress)
	late := t0.Add(time.Hour + 6*time.Minute)
	for attempt := 1; attempt <= 2; attempt++ {
		d := sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: late, Timeouts: resumeTimeouts})
		if d.Resume == nil || d.Resume.Attempt != attempt {
			t.Fatalf("attempt %d: %+v", attempt, d)
		}
		// The conductor records the attempt: the bound counts again from
		// it.
		c = objects.Clone(c)
		c.StatusReason = objects.Str(d.Resume.Note)
		c.UpdatedAt = ptr(late)
		objects.ResetChanges(c)
		if d := sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: late.Add(time.Minute),
			Timeouts: resumeTimeouts}); d.Resume != nil || d.Cluster.Status != objects.UpdateInProgress ||
			objects.Deref(d.Cluster.StatusReason) != objects.Deref(c.StatusReason) {
			t.Fatalf("right after attempt %d: %+v", attempt, d)
		}
		late = late.Add(6 * time.Minute)
	}
	d := sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: late, Timeouts: resumeTimeouts})
	if d.Resume != nil || d.Cluster == nil || d.Cluster.Status != objects.UpdateFailed || event(d) != "update/failure" {
		t.Fatalf("attempts spent: %+v", d)
	}
	reason := objects.Deref(d.Cluster.StatusReason)
	for _, want := range []string{"did not reach the driver's back end", "2 resumptions", "rolled back to tmpl-old"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if objects.Deref(d.Cluster.ClusterTemplateID) != "tmpl-old" {
		t.Errorf("template %s", objects.Deref(d.Cluster.ClusterTemplateID))
	}
	if len(d.NodeGroups) != 1 || d.NodeGroups[0].UUID != "w" || d.NodeGroups[0].Status != objects.UpdateFailed || d.NodeGroups[0].NodeCount != 2 {
		t.Fatalf("nodegroups %+v", d.NodeGroups)
	}
}

// TestInterruptedCreateWithoutStackID: a create never handed over is
// resumed from its last write, then failed; no observation is needed.
func TestInterruptedCreateWithoutStackID(t *testing.T) {
	c := row(objects.CreateInProgress)
	c.StackID, c.StatusReason = nil, nil
	c.UpdatedAt = ptr(t0.Add(4 * time.Minute)) // the certificates' references recorded
	objects.ResetChanges(c)
	d, observe := sm.Triage(c, t0.Add(8*time.Minute), resumeTimeouts)
	if observe || d.Resume != nil || d.Skip == "" {
		t.Fatalf("counted from the last write, the bound has not passed: %+v", d)
	}
	d, observe = sm.Triage(c, t0.Add(10*time.Minute), resumeTimeouts)
	if observe || d.Resume == nil || !slices.Equal(ops(d.Resume), []string{"create_cluster"}) {
		t.Fatalf("%+v", d)
	}
	c.StatusReason = objects.Str(sm.ResumeNote(d.Resume.Calls, 2, 2))
	objects.ResetChanges(c)
	d, _ = sm.Triage(c, t0.Add(10*time.Minute), resumeTimeouts)
	if d.Resume != nil || d.Cluster == nil || d.Cluster.Status != objects.CreateFailed || event(d) != "create/failure" ||
		!strings.Contains(objects.Deref(d.Cluster.StatusReason), "the create was not handed to its driver") {
		t.Fatalf("%+v", d)
	}
	// Without attempts the first interruption fails it.
	c.StatusReason = nil
	objects.ResetChanges(c)
	d, _ = sm.Triage(c, t0.Add(10*time.Minute), sm.Timeouts{Resume: 5 * time.Minute})
	if d.Resume != nil || d.Cluster.Status != objects.CreateFailed {
		t.Fatalf("%+v", d)
	}
}

// TestInterruptedCARotation: a CA rotation's claim is marked in its
// status_reason (the back end's desired state says nothing of
// certificates): the sync leaves it alone within the bound, resumes it past
// it, then fails it once the attempts are spent; without the marker (the
// driver accepted the new CAs) it is judged as usual.
func TestInterruptedCARotation(t *testing.T) {
	c := claimed(objects.UpdateInProgress)
	c.StatusReason = objects.Str(sm.CARotationClaimed)
	objects.ResetChanges(c)
	d, observe := sm.Triage(c, t0.Add(time.Hour+4*time.Minute), resumeTimeouts)
	if observe || d.Skip == "" || d.Changed() {
		t.Fatalf("within the bound: observe %v, %+v", observe, d)
	}
	late := t0.Add(time.Hour + 6*time.Minute)
	for attempt := 1; attempt <= 2; attempt++ {
		d, observe = sm.Triage(c, late, resumeTimeouts)
		if observe || d.Resume == nil || d.Resume.Attempt != attempt ||
			!slices.Equal(ops(d.Resume), []string{"rotate_ca_certificate"}) {
			t.Fatalf("attempt %d: observe %v, %+v", attempt, observe, d)
		}
		c = objects.Clone(c)
		c.StatusReason, c.UpdatedAt = objects.Str(d.Resume.Note+": driver not ready"), ptr(late)
		objects.ResetChanges(c)
		if d, observe := sm.Triage(c, late.Add(time.Minute), resumeTimeouts); observe || d.Skip == "" {
			t.Fatalf("right after attempt %d: observe %v, %+v", attempt, observe, d)
		}
		late = late.Add(6 * time.Minute)
	}
	d, _ = sm.Triage(c, late, resumeTimeouts)
	if d.Resume != nil || d.Cluster == nil || d.Cluster.Status != objects.UpdateFailed || event(d) != "update/failure" ||
		!strings.Contains(objects.Deref(d.Cluster.StatusReason), "the CA rotation was not handed to its driver") {
		t.Fatalf("attempts spent: %+v", d)
	}
	c.StatusReason = nil
	objects.ResetChanges(c)
	if _, observe := sm.Triage(c, late, resumeTimeouts); !observe {
		t.Error("a rotation its driver has is not observed")
	}
}

// TestReachedOperationsAreNotResumed: a change the back end holds is judged
// as usual however old its claim; so is one from a driver that does not
// report Request.
func TestReachedOperationsAreNotResumed(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateComplete, 1), ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 5)}
	for _, req := range []*drivers.BackendRequest{held("tmpl-new", map[string]int{"m": 1, "w": 5}), nil} {
		obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: everyNG(ngs, drivers.PhaseReady), Request: req}
		d := sm.Decide(sm.Input{Cluster: claimed(objects.UpdateInProgress), NodeGroups: ngs, Observation: obs,
			Now: t0.Add(3 * time.Hour), Timeouts: resumeTimeouts})
		if d.Resume != nil || d.NeedFresh || d.Cluster.Status != objects.UpdateComplete {
			t.Fatalf("request %+v: %+v", req, d)
		}
	}
}

func TestAttempts(t *testing.T) {
	for reason, want := range map[string]int{
		"": 0, "before": 0, "(attempt 2 of 3)": 0,
		sm.ResumeNote([]sm.Call{{Op: sm.OpDeleteCluster}}, 2, 3):                            2,
		sm.ResumeNote([]sm.Call{{Op: sm.OpDeleteCluster}}, 3, 3) + ": driver not ready yet": 3,
	} {
		if got := sm.Attempts(&reason); got != want {
			t.Errorf("%q: %d, want %d", reason, got, want)
		}
	}
	if sm.Attempts(nil) != 0 {
		t.Error("nil reason")
	}
}

// TestUpdateOfASettledWorkerGivenUp: a cluster update that resized the
// default worker without claiming it puts the size back when given up.
func TestUpdateOfASettledWorkerGivenUp(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.CreateComplete, 1), ngRow("w", objects.RoleWorker, objects.CreateComplete, 4)}
	c := claimed(objects.UpdateInProgress)
	c.StatusReason = objects.Str(sm.ResumeNote([]sm.Call{{Op: sm.OpUpdateCluster}}, 2, 2))
	objects.ResetChanges(c)
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: everyNG(ngs, drivers.PhaseReady),
		Request: held("tmpl-new", map[string]int{"m": 1, "w": 2})}
	d := sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: t0.Add(2 * time.Hour), Timeouts: resumeTimeouts})
	if d.Cluster == nil || d.Cluster.Status != objects.UpdateFailed || len(d.NodeGroups) != 1 || d.NodeGroups[0].NodeCount != 2 ||
		d.NodeGroups[0].Status != objects.CreateComplete {
		t.Fatalf("%+v %+v", d, d.NodeGroups)
	}
	// Before the bound it is waited for, never completed.
	d = sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Now: t0.Add(time.Hour + time.Minute), Timeouts: resumeTimeouts})
	if d.Cluster.Status != objects.UpdateInProgress {
		t.Fatalf("completed without the driver: %s", d.Cluster.Status)
	}
}

// TestUpdateOfASettledWorkerWaitsForTheBackEnd: a cluster update that
// resized the default worker without claiming it completes only once the
// back end reports the worker done, though its view of the whole cluster
// says Ready (the Cluster API Cluster's ScalingUp condition lags behind its
// MachineDeployments: the end-to-end test over RPC saw it).
func TestUpdateOfASettledWorkerWaitsForTheBackEnd(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.CreateComplete, 1), ngRow("w", objects.RoleWorker, objects.CreateComplete, 2)}
	c := claimed(objects.UpdateInProgress)
	nodes := everyNG(ngs, drivers.PhaseReady)
	nodes["w"] = drivers.NodeGroupObservation{Phase: drivers.PhaseInProgress, Reason: "1/2 machines up to date and available"}
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: nodes, Request: held("tmpl-new", map[string]int{"m": 1, "w": 2})}
	d := sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: t0.Add(time.Hour + time.Minute), Timeouts: resumeTimeouts})
	if d.Cluster != nil && d.Cluster.Status != objects.UpdateInProgress {
		t.Fatalf("completed while the worker is in progress: %s (%s)", d.Cluster.Status, objects.Deref(d.Cluster.StatusReason))
	}
	// Done, it completes; the worker stays as it was.
	obs.NodeGroups = everyNG(ngs, drivers.PhaseReady)
	d = sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: obs, Fresh: true, Now: t0.Add(time.Hour + time.Minute), Timeouts: resumeTimeouts})
	if d.Cluster == nil || d.Cluster.Status != objects.UpdateComplete {
		t.Fatalf("not completed once the worker is done: %+v", d)
	}
	for _, ng := range d.NodeGroups {
		if ng.UUID == "w" && ng.Status != objects.CreateComplete {
			t.Errorf("worker %s", ng.Status)
		}
	}
}
