package statusmachine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// row returns a cluster as loaded from the database, created at t0.
func row(status string) *objects.Cluster {
	c := &objects.Cluster{
		UUID: objects.Str("c1"), Name: objects.Str("k8s"), Status: status, StatusReason: objects.Str("before"),
		StackID: objects.Str("stack-1"), ClusterTemplateID: objects.Str("tmpl-new"),
		Labels:        map[string]string{"kube_tag": "v1.34.1", "other": "x"},
		CreateTimeout: objects.Int(60), CreatedAt: ptr(t0),
	}
	objects.ResetChanges(c)
	return c
}

// ngRow returns a nodegroup as loaded from the database.
func ngRow(uuid, role, status string, count int64) *objects.NodeGroup {
	ng := &objects.NodeGroup{
		UUID: uuid, Name: "ng-" + uuid, ClusterID: "c1", Role: role, Status: status, NodeCount: count,
		IsDefault: role == objects.RoleMaster || uuid == "w", StackID: objects.Str("stack-1"), CreatedAt: ptr(t0),
	}
	objects.ResetChanges(ng)
	return ng
}

func ptr[T any](v T) *T { return &v }

func defaultNGs(status string) []*objects.NodeGroup {
	return []*objects.NodeGroup{ngRow("m", objects.RoleMaster, status, 1), ngRow("w", objects.RoleWorker, status, 2)}
}

// everyNG reports phase for every nodegroup of ngs.
func everyNG(ngs []*objects.NodeGroup, phase drivers.Phase) map[string]drivers.NodeGroupObservation {
	out := map[string]drivers.NodeGroupObservation{}
	for _, ng := range ngs {
		out[ng.UUID] = drivers.NodeGroupObservation{Phase: phase}
	}
	return out
}

func decide(c *objects.Cluster, ngs []*objects.NodeGroup, o drivers.Observation, fresh bool, now time.Time) sm.Decision {
	return sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Observation: o, Fresh: fresh, Now: now,
		Timeouts: sm.Timeouts{Create: 60 * time.Minute, Update: 30 * time.Minute, Delete: 20 * time.Minute}})
}

func event(d sm.Decision) string {
	if d.Event == nil {
		return ""
	}
	return d.Event.Action + "/" + d.Event.Outcome
}

func ngStatus(d sm.Decision, read []*objects.NodeGroup, uuid string) string {
	for _, ng := range d.NodeGroups {
		if ng.UUID == uuid {
			return ng.Status
		}
	}
	for _, ng := range d.Destroy {
		if ng.UUID == uuid {
			return "destroyed"
		}
	}
	for _, ng := range read {
		if ng.UUID == uuid {
			return ng.Status
		}
	}
	return "missing"
}

// TestEveryStatusAndPhase: every cluster status against every phase, the
// nodegroups reporting the cluster's phase (the same operation).
func TestEveryStatusAndPhase(t *testing.T) {
	type want struct {
		status, reason, event string
		ngs                   string // the two nodegroups' status after the decision
		deleted               bool
	}
	inProgress := map[string]map[drivers.Phase]want{
		objects.CreateInProgress: {
			drivers.PhasePending:    {objects.CreateInProgress, "working", "", "CREATE_IN_PROGRESS", false},
			drivers.PhaseInProgress: {objects.CreateInProgress, "working", "", "CREATE_IN_PROGRESS", false},
			drivers.PhaseReady:      {objects.CreateComplete, "working", "create/success", "CREATE_COMPLETE", false},
			drivers.PhaseFailed:     {objects.CreateFailed, "working", "create/failure", "CREATE_FAILED", false},
			drivers.PhaseGone:       {objects.CreateFailed, "working", "create/failure", "CREATE_FAILED", false},
		},
		objects.UpdateInProgress: {
			drivers.PhasePending:    {objects.UpdateInProgress, "working", "", "UPDATE_IN_PROGRESS", false},
			drivers.PhaseInProgress: {objects.UpdateInProgress, "working", "", "UPDATE_IN_PROGRESS", false},
			drivers.PhaseReady:      {objects.UpdateComplete, "working", "update/success", "UPDATE_COMPLETE", false},
			drivers.PhaseFailed:     {objects.UpdateFailed, "working", "update/failure", "UPDATE_FAILED", false},
			drivers.PhaseGone:       {objects.UpdateFailed, "working", "update/failure", "UPDATE_FAILED", false},
		},
		objects.RollbackInProgress: {
			drivers.PhasePending:    {objects.RollbackInProgress, "working", "", "ROLLBACK_IN_PROGRESS", false},
			drivers.PhaseInProgress: {objects.RollbackInProgress, "working", "", "ROLLBACK_IN_PROGRESS", false},
			drivers.PhaseReady:      {objects.RollbackComplete, "working", "update/success", "ROLLBACK_COMPLETE", false},
			drivers.PhaseFailed:     {objects.RollbackFailed, "working", "update/failure", "ROLLBACK_FAILED", false},
			drivers.PhaseGone:       {objects.RollbackFailed, "working", "update/failure", "ROLLBACK_FAILED", false},
		},
		// A cluster being deleted takes its nodegroups with it: their
		// rows stay as they are until the cluster's row goes.
		objects.DeleteInProgress: {
			drivers.PhasePending:    {objects.DeleteInProgress, "working", "", "DELETE_IN_PROGRESS", false},
			drivers.PhaseInProgress: {objects.DeleteInProgress, "working", "", "DELETE_IN_PROGRESS", false},
			drivers.PhaseReady:      {objects.DeleteInProgress, "working", "", "DELETE_IN_PROGRESS", false},
			drivers.PhaseFailed:     {objects.DeleteFailed, "working", "delete/failure", "DELETE_IN_PROGRESS", false},
			drivers.PhaseGone:       {objects.DeleteComplete, "working", "delete/success", "DELETE_IN_PROGRESS", true},
		},
	}
	phases := []drivers.Phase{drivers.PhasePending, drivers.PhaseInProgress, drivers.PhaseReady, drivers.PhaseFailed, drivers.PhaseGone}
	for _, status := range objects.ClusterStatuses {
		for _, phase := range append(phases, "") {
			t.Run(fmt.Sprintf("%s/%s", status, phase), func(t *testing.T) {
				c, ngs := row(status), defaultNGs(status)
				d := decide(c, ngs, drivers.Observation{Phase: phase, Reason: "working", NodeGroups: everyNG(ngs, phase)},
					false, t0.Add(time.Minute))
				w, judged := inProgress[status][phase]
				if phase == "" {
					w, judged = inProgress[status][drivers.PhasePending] // "" reads as pending
				}
				switch {
				case status == objects.DeleteComplete:
					if !d.Deleted || d.Event != nil || d.Skip != "" || len(objects.Changes(d.Cluster)) != 0 {
						t.Fatalf("a DELETE_COMPLETE leftover is finished without a notification: %+v", d)
					}
					return
				case !judged:
					if d.Skip == "" || d.Cluster != nil || d.Event != nil || d.Changed() {
						t.Fatalf("settled status %s must be left as it is: %+v", status, d)
					}
					return
				}
				if d.Skip != "" || d.NeedFresh {
					t.Fatalf("not judged: %+v", d)
				}
				if d.Cluster.Status != w.status || objects.Deref(d.Cluster.StatusReason) != w.reason {
					t.Errorf("cluster %s %q, want %s %q", d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), w.status, w.reason)
				}
				if got := event(d); got != w.event {
					t.Errorf("event %q, want %q", got, w.event)
				}
				for _, uuid := range []string{"m", "w"} {
					if got := ngStatus(d, ngs, uuid); got != w.ngs {
						t.Errorf("nodegroup %s %s, want %s", uuid, got, w.ngs)
					}
				}
				if d.Deleted != w.deleted {
					t.Errorf("deleted %v, want %v", d.Deleted, w.deleted)
				}
				if c.Status != status || objects.Deref(c.StatusReason) != "before" || len(objects.Changes(c)) != 0 {
					t.Error("Decide modified its input")
				}
			})
		}
	}
}

// TestCreateWithoutStackIDIsNotJudged: the create handler has not handed
// the cluster to its driver; even a Ready observation does not complete it.
func TestCreateWithoutStackIDIsNotJudged(t *testing.T) {
	c := row(objects.CreateInProgress)
	c.StackID = nil
	objects.ResetChanges(c)
	ngs := defaultNGs(objects.CreateInProgress)
	d := decide(c, ngs, drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: everyNG(ngs, drivers.PhaseReady)},
		true, t0.Add(2*time.Hour))
	if d.Skip == "" || d.Cluster != nil || d.Changed() || d.Interrupted != "" {
		t.Fatalf("%+v", d)
	}
	d = sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Now: t0.Add(11 * time.Minute),
		Timeouts: sm.Timeouts{Resume: 10 * time.Minute, ResumeAttempts: 3}})
	if d.Interrupted == "" || d.Resume == nil || d.Skip != "" || d.Cluster != nil {
		t.Fatalf("a create not handed over within the bound is resumed: %+v", d)
	}
	d = sm.Decide(sm.Input{Cluster: c, NodeGroups: ngs, Now: t0.Add(9 * time.Minute),
		Timeouts: sm.Timeouts{Resume: 10 * time.Minute, ResumeAttempts: 3}})
	if d.Interrupted != "" || d.Resume != nil || d.Skip == "" {
		t.Fatalf("within the bound it is only skipped: %+v", d)
	}
}

// TestClusterReadyWaitsForNodeGroups: the cluster completes only when no
// nodegroup is still in progress; a nodegroup not reported stays in
// progress.
func TestClusterReadyWaitsForNodeGroups(t *testing.T) {
	for name, tc := range map[string]struct {
		ngs        map[string]drivers.NodeGroupObservation
		wantStatus string
		wantReason string
	}{
		"all ready": {map[string]drivers.NodeGroupObservation{"m": {Phase: drivers.PhaseReady}, "w": {Phase: drivers.PhaseReady}},
			objects.CreateComplete, ""},
		"worker in progress": {map[string]drivers.NodeGroupObservation{"m": {Phase: drivers.PhaseReady},
			"w": {Phase: drivers.PhaseInProgress, Reason: "1/2 machines"}}, objects.CreateInProgress, "waiting for nodegroups: ng-w"},
		"worker pending": {map[string]drivers.NodeGroupObservation{"m": {Phase: drivers.PhaseReady}, "w": {Phase: drivers.PhasePending}},
			objects.CreateInProgress, "waiting for nodegroups: ng-w"},
		"worker not reported": {map[string]drivers.NodeGroupObservation{"m": {Phase: drivers.PhaseReady}},
			objects.CreateInProgress, "waiting for nodegroups: ng-w"},
		"worker failed": {map[string]drivers.NodeGroupObservation{"m": {Phase: drivers.PhaseReady},
			"w": {Phase: drivers.PhaseFailed, Reason: "quota exceeded"}}, objects.CreateFailed, "nodegroup ng-w failed: quota exceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			ngs := defaultNGs(objects.CreateInProgress)
			d := decide(row(objects.CreateInProgress), ngs, drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: tc.ngs},
				false, t0.Add(time.Minute))
			if d.Cluster.Status != tc.wantStatus || objects.Deref(d.Cluster.StatusReason) != tc.wantReason {
				t.Fatalf("cluster %s %q, want %s %q", d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), tc.wantStatus, tc.wantReason)
			}
		})
	}
}

// TestNodeGroupFailureFailsTheOperation: a nodegroup failing while the
// cluster's own phase is still in progress, or even pending, fails the
// operation, with the nodegroup's reason.
func TestNodeGroupFailureFailsTheOperation(t *testing.T) {
	for _, clusterPhase := range []drivers.Phase{drivers.PhasePending, drivers.PhaseInProgress, drivers.PhaseReady} {
		ngs := defaultNGs(objects.UpdateInProgress)
		d := decide(row(objects.UpdateInProgress), ngs, drivers.Observation{Phase: clusterPhase, NodeGroups: map[string]drivers.NodeGroupObservation{
			"m": {Phase: drivers.PhaseInProgress}, "w": {Phase: drivers.PhaseFailed, Reason: "MachineDeployment failed"}}},
			false, t0.Add(time.Minute))
		if d.Cluster.Status != objects.UpdateFailed || objects.Deref(d.Cluster.StatusReason) != "nodegroup ng-w failed: MachineDeployment failed" ||
			event(d) != "update/failure" {
			t.Errorf("%s: cluster %s %q %s", clusterPhase, d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), event(d))
		}
		if ngStatus(d, ngs, "w") != objects.UpdateFailed || ngStatus(d, ngs, "m") != objects.UpdateInProgress {
			t.Errorf("%s: nodegroups w %s m %s", clusterPhase, ngStatus(d, ngs, "w"), ngStatus(d, ngs, "m"))
		}
	}
}

// TestSettledNodeGroupsKeepStatusAndReason: a nodegroup that is not in
// progress keeps its status and reason whatever is reported; its reported
// fields are stored.
func TestSettledNodeGroupsKeepStatusAndReason(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateFailed, 1), ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 2)}
	ngs[0].StatusReason = objects.Str("old failure")
	objects.ResetChanges(ngs[0])
	d := decide(row(objects.UpdateInProgress), ngs, drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: map[string]drivers.NodeGroupObservation{
		"m": {Phase: drivers.PhaseReady, Reason: "fine now", NodeAddresses: []string{"10.0.0.1"}, Version: "v1.34.1"},
		"w": {Phase: drivers.PhaseReady}}}, false, t0.Add(time.Minute))
	// The master failed before this update: it neither holds the update
	// nor fails it again.
	if d.Cluster.Status != objects.UpdateComplete {
		t.Fatalf("cluster %s", d.Cluster.Status)
	}
	var m *objects.NodeGroup
	for _, ng := range d.NodeGroups {
		if ng.UUID == "m" {
			m = ng
		}
	}
	if m == nil || m.Status != objects.UpdateFailed || objects.Deref(m.StatusReason) != "old failure" ||
		!slices.Equal(m.NodeAddresses, []string{"10.0.0.1"}) || objects.Deref(m.Version) != "v1.34.1" {
		t.Fatalf("settled nodegroup %+v", m)
	}
}

// TestPendingNeverCompletesOrFails: whatever the nodegroups say, a cluster
// Pending is not judged; its reason changes only when one is given.
func TestPendingNeverCompletesOrFails(t *testing.T) {
	for _, status := range []string{objects.CreateInProgress, objects.UpdateInProgress, objects.DeleteInProgress, objects.RollbackInProgress} {
		for _, reason := range []string{"", "waiting for CAPI to observe the change"} {
			ngs := defaultNGs(objects.CreateComplete)
			d := decide(row(status), ngs, drivers.Observation{Phase: drivers.PhasePending, Reason: reason,
				NodeGroups: everyNG(ngs, drivers.PhaseReady)}, false, t0.Add(time.Minute))
			want := "before"
			if reason != "" {
				want = reason
			}
			if d.Cluster.Status != status || d.Event != nil || objects.Deref(d.Cluster.StatusReason) != want {
				t.Errorf("%s pending %q: %s %q %v", status, reason, d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), d.Event)
			}
		}
	}
	// A nodegroup pending neither completes nor fails either.
	ngs := defaultNGs(objects.UpdateInProgress)
	d := decide(row(objects.UpdateInProgress), ngs, drivers.Observation{Phase: drivers.PhaseReady,
		NodeGroups: everyNG(ngs, drivers.PhasePending)}, false, t0.Add(time.Minute))
	if d.Cluster.Status != objects.UpdateInProgress || len(d.NodeGroups) != 0 {
		t.Fatalf("%s %+v", d.Cluster.Status, d.NodeGroups)
	}
}

// TestDeadlines: a deadline passed asks for a fresh observation first, and
// fails the operation on it; before the deadline nothing fails.
func TestDeadlines(t *testing.T) {
	started := t0.Add(10 * time.Minute)
	for _, tc := range []struct {
		name       string
		status     string
		obs        drivers.Observation
		now        time.Time
		wantStatus string // after a fresh observation; "" = no deadline passed
	}{
		{"create before its deadline", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress}, t0.Add(59 * time.Minute), ""},
		{"create after its deadline", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress}, t0.Add(61 * time.Minute), objects.CreateFailed},
		{"pending create after its deadline", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhasePending}, t0.Add(61 * time.Minute), objects.CreateFailed},
		{"create deadline from Started", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress, Started: started}, t0.Add(61 * time.Minute), ""},
		{"create deadline from Started passed", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress, Started: started}, t0.Add(71 * time.Minute), objects.CreateFailed},
		{"update without Started has none", objects.UpdateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress}, t0.Add(24 * time.Hour), ""},
		{"update after its deadline", objects.UpdateInProgress, drivers.Observation{Phase: drivers.PhaseInProgress, Started: started}, started.Add(31 * time.Minute), objects.UpdateFailed},
		{"delete after its deadline", objects.DeleteInProgress, drivers.Observation{Phase: drivers.PhaseInProgress, Started: started}, started.Add(21 * time.Minute), objects.DeleteFailed},
		{"delete before its deadline", objects.DeleteInProgress, drivers.Observation{Phase: drivers.PhaseInProgress, Started: started}, started.Add(19 * time.Minute), ""},
		{"ready after the deadline completes", objects.CreateInProgress, drivers.Observation{Phase: drivers.PhaseReady}, t0.Add(2 * time.Hour), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ngs := defaultNGs(objects.CreateComplete)
			tc.obs.NodeGroups = everyNG(ngs, drivers.PhaseReady)
			cached := decide(row(tc.status), ngs, tc.obs, false, tc.now)
			fresh := decide(row(tc.status), ngs, tc.obs, true, tc.now)
			if tc.wantStatus == "" {
				if cached.NeedFresh || fresh.NeedFresh || len(fresh.TimedOut) != 0 || strings.HasSuffix(fresh.Cluster.Status, "_FAILED") {
					t.Fatalf("no deadline passed, yet: cached %+v fresh %+v", cached, fresh)
				}
				return
			}
			if !cached.NeedFresh || cached.Cluster != nil || cached.Changed() {
				t.Fatalf("on a cached observation the decision must only ask for a fresh one: %+v", cached)
			}
			if fresh.NeedFresh || fresh.Cluster.Status != tc.wantStatus ||
				!strings.HasPrefix(objects.Deref(fresh.Cluster.StatusReason), "timed out: ") || fresh.Event == nil {
				t.Fatalf("fresh: %+v reason %q", fresh, objects.Deref(fresh.Cluster.StatusReason))
			}
		})
	}
}

// TestNodeGroupAddedLaterHasItsOwnCreateDeadline: a nodegroup created long
// after its cluster is not failed by the cluster's create deadline.
func TestNodeGroupAddedLaterHasItsOwnCreateDeadline(t *testing.T) {
	late := ngRow("late", objects.RoleWorker, objects.CreateInProgress, 2)
	late.CreatedAt = ptr(t0.Add(48 * time.Hour))
	objects.ResetChanges(late)
	ngs := append(defaultNGs(objects.UpdateComplete), late)
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: map[string]drivers.NodeGroupObservation{
		"m": {Phase: drivers.PhaseReady}, "w": {Phase: drivers.PhaseReady}, "late": {Phase: drivers.PhaseInProgress, Reason: "0/2"}}}
	d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(48*time.Hour+time.Minute))
	if d.NeedFresh || d.Cluster.Status != objects.UpdateInProgress || ngStatus(d, ngs, "late") != objects.CreateInProgress {
		t.Fatalf("%+v", d)
	}
	d = decide(row(objects.UpdateInProgress), ngs, obs, true, t0.Add(49*time.Hour+time.Minute))
	if d.Cluster.Status != objects.UpdateFailed || ngStatus(d, ngs, "late") != objects.CreateFailed ||
		objects.Deref(d.Cluster.StatusReason) != "nodegroup ng-late failed: timed out: 0/2" {
		t.Fatalf("%s %q late %s", d.Cluster.Status, objects.Deref(d.Cluster.StatusReason), ngStatus(d, ngs, "late"))
	}
}

// TestFailedUpgradeRollsBack: UPDATE_FAILED puts back the template and
// kube_tag the back end runs; other failures and other statuses do not.
func TestFailedUpgradeRollsBack(t *testing.T) {
	ngs := defaultNGs(objects.UpdateInProgress)
	obs := drivers.Observation{Phase: drivers.PhaseFailed, Reason: "TopologyReconciled False: version skew",
		AppliedTemplateID: "tmpl-old", AppliedKubeTag: "v1.33.4", NodeGroups: everyNG(ngs, drivers.PhaseInProgress)}
	d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute))
	c := d.Cluster
	if c.Status != objects.UpdateFailed || objects.Deref(c.ClusterTemplateID) != "tmpl-old" || c.Labels["kube_tag"] != "v1.33.4" ||
		c.Labels["other"] != "x" {
		t.Fatalf("%s template %s labels %v", c.Status, objects.Deref(c.ClusterTemplateID), c.Labels)
	}
	if got := objects.Deref(c.StatusReason); got != "TopologyReconciled False: version skew; cluster_template_id rolled back to tmpl-old and kube_tag to v1.33.4" {
		t.Fatalf("reason %q", got)
	}
	// The back end runs the row's template: nothing to roll back.
	obs.AppliedTemplateID, obs.AppliedKubeTag = "tmpl-new", "v1.34.1"
	if d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute)); objects.HasChanged(d.Cluster, "cluster_template_id") ||
		objects.HasChanged(d.Cluster, "labels") {
		t.Fatalf("rolled back to the same template: %v", objects.Changes(d.Cluster))
	}
	// Not reported: nothing to roll back to.
	obs.AppliedTemplateID, obs.AppliedKubeTag = "", ""
	if d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute)); objects.HasChanged(d.Cluster, "cluster_template_id") {
		t.Fatal("rolled back without an applied template")
	}
	// A failed create is not an upgrade.
	obs.AppliedTemplateID = "tmpl-old"
	if d := decide(row(objects.CreateInProgress), ngs, obs, false, t0.Add(time.Minute)); objects.HasChanged(d.Cluster, "cluster_template_id") {
		t.Fatal("a failed create rolled the template back")
	}
	// A rollback without kube_tag keeps the labels.
	obs.AppliedKubeTag = ""
	d = decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute))
	if objects.Deref(d.Cluster.ClusterTemplateID) != "tmpl-old" || objects.HasChanged(d.Cluster, "labels") {
		t.Fatalf("template %s, labels changed %v", objects.Deref(d.Cluster.ClusterTemplateID), objects.HasChanged(d.Cluster, "labels"))
	}
}

// TestNodeGroupsAddedAndDeletedDuringAnUpdate: a nodegroup being created
// holds the update until ready; one being deleted is removed once gone,
// holds the update until then, and fails it when its deletion fails.
func TestNodeGroupsAddedAndDeletedDuringAnUpdate(t *testing.T) {
	ngs := append(defaultNGs(objects.UpdateComplete),
		ngRow("new", objects.RoleWorker, objects.CreateInProgress, 2), ngRow("old", objects.RoleWorker, objects.DeleteInProgress, 3))
	obs := func(newPhase, oldPhase drivers.Phase) drivers.Observation {
		return drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: map[string]drivers.NodeGroupObservation{
			"m": {Phase: drivers.PhaseReady}, "w": {Phase: drivers.PhaseReady},
			"new": {Phase: newPhase, NodeAddresses: []string{"10.0.1.1", "10.0.1.2"}}, "old": {Phase: oldPhase, Reason: "draining"}}}
	}
	for _, tc := range []struct {
		newPhase, oldPhase  drivers.Phase
		cluster, newNG, old string
	}{
		{drivers.PhaseInProgress, drivers.PhaseInProgress, objects.UpdateInProgress, objects.CreateInProgress, objects.DeleteInProgress},
		{drivers.PhaseReady, drivers.PhaseInProgress, objects.UpdateInProgress, objects.CreateComplete, objects.DeleteInProgress},
		// Ready is not gone: a nodegroup being deleted waits for gone.
		{drivers.PhaseReady, drivers.PhaseReady, objects.UpdateInProgress, objects.CreateComplete, objects.DeleteInProgress},
		{drivers.PhaseInProgress, drivers.PhaseGone, objects.UpdateInProgress, objects.CreateInProgress, "destroyed"},
		{drivers.PhaseReady, drivers.PhaseGone, objects.UpdateComplete, objects.CreateComplete, "destroyed"},
		{drivers.PhaseReady, drivers.PhaseFailed, objects.UpdateFailed, objects.CreateComplete, objects.DeleteFailed},
		{drivers.PhaseFailed, drivers.PhaseGone, objects.UpdateFailed, objects.CreateFailed, "destroyed"},
	} {
		d := decide(row(objects.UpdateInProgress), ngs, obs(tc.newPhase, tc.oldPhase), false, t0.Add(time.Minute))
		name := fmt.Sprintf("new %s old %s", tc.newPhase, tc.oldPhase)
		if d.Cluster.Status != tc.cluster || ngStatus(d, ngs, "new") != tc.newNG || ngStatus(d, ngs, "old") != tc.old {
			t.Errorf("%s: cluster %s new %s old %s, want %s %s %s", name, d.Cluster.Status, ngStatus(d, ngs, "new"),
				ngStatus(d, ngs, "old"), tc.cluster, tc.newNG, tc.old)
		}
		if tc.old == "destroyed" && slices.ContainsFunc(d.NodeGroups, func(ng *objects.NodeGroup) bool { return ng.UUID == "old" }) {
			t.Errorf("%s: a destroyed nodegroup is also saved", name)
		}
	}
}

// TestAutoscaledNodeCount: a node count the back end reports is stored at
// every decision, whatever the nodegroup's status, except while the
// nodegroup is being deleted.
func TestAutoscaledNodeCount(t *testing.T) {
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.CreateComplete, 1),
		ngRow("w", objects.RoleWorker, objects.UpdateComplete, 2), ngRow("x", objects.RoleWorker, objects.UpdateInProgress, 2),
		ngRow("d", objects.RoleWorker, objects.DeleteInProgress, 2)}
	five := 5
	obs := drivers.Observation{Phase: drivers.PhaseInProgress, NodeGroups: map[string]drivers.NodeGroupObservation{
		"m": {Phase: drivers.PhaseReady}, "w": {Phase: drivers.PhaseReady, NodeCount: &five},
		"x": {Phase: drivers.PhaseInProgress, NodeCount: &five}, "d": {Phase: drivers.PhaseInProgress, NodeCount: &five}}}
	d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute))
	counts := map[string]int64{}
	for _, ng := range d.NodeGroups {
		counts[ng.UUID] = ng.NodeCount
	}
	if counts["w"] != 5 || counts["x"] != 5 || counts["d"] != 0 || counts["m"] != 0 {
		t.Fatalf("saved counts %v (0: not saved)", counts)
	}
}

// TestChangeNotReachedIsPending: a back end whose desired state does not
// show the rows' change yet (a conductor between its claim and the driver
// call) has not taken up the operation: nothing completes on its old,
// converged state.
func TestChangeNotReachedIsPending(t *testing.T) {
	two, three := 2, 3
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.UpdateComplete, 1), ngRow("w", objects.RoleWorker, objects.UpdateInProgress, 3)}
	obs := drivers.Observation{Phase: drivers.PhaseReady, NodeGroups: everyNG(ngs, drivers.PhaseReady),
		Request: &drivers.BackendRequest{Exists: true, TemplateID: "tmpl-new", NodeGroups: map[string]drivers.NodeGroupRequestState{
			"m": {NodeCount: ptr(1)}, "w": {NodeCount: &two}}}}
	d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute))
	if d.Cluster.Status != objects.UpdateInProgress || ngStatus(d, ngs, "w") != objects.UpdateInProgress {
		t.Fatalf("a resize not yet applied completed: %s %s", d.Cluster.Status, ngStatus(d, ngs, "w"))
	}
	obs.Request.NodeGroups["w"] = drivers.NodeGroupRequestState{NodeCount: &three}
	if d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute)); d.Cluster.Status != objects.UpdateComplete {
		t.Fatalf("applied resize: %s", d.Cluster.Status)
	}
	// An upgrade whose template the back end has not taken up.
	obs.Request.TemplateID = "tmpl-old"
	if d := decide(row(objects.UpdateInProgress), ngs, obs, false, t0.Add(time.Minute)); d.Cluster.Status != objects.UpdateInProgress {
		t.Fatalf("an upgrade not yet applied completed: %s", d.Cluster.Status)
	}
	// A deletion the back end has not been asked for does not complete
	// because the back end has nothing... it still exists and is not
	// deleting: pending.
	obs.Request.TemplateID = "tmpl-new"
	obs.Phase = drivers.PhaseGone
	if d := decide(row(objects.DeleteInProgress), ngs, obs, false, t0.Add(time.Minute)); d.Cluster.Status != objects.DeleteInProgress {
		t.Fatalf("a deletion not yet requested completed: %s", d.Cluster.Status)
	}
	obs.Request.Deleting = true
	if d := decide(row(objects.DeleteInProgress), ngs, obs, false, t0.Add(time.Minute)); d.Cluster.Status != objects.DeleteComplete || !d.Deleted {
		t.Fatalf("requested deletion: %s", d.Cluster.Status)
	}
}

// TestReportedFieldsAndStackID: addresses and versions are stored whatever
// the phase; default nodegroups get the cluster's stack_id.
func TestReportedFieldsAndStackID(t *testing.T) {
	ngs := defaultNGs(objects.CreateInProgress)
	ngs[1].StackID = nil
	objects.ResetChanges(ngs[1])
	d := decide(row(objects.CreateInProgress), ngs, drivers.Observation{Phase: drivers.PhasePending,
		APIAddress: "https://10.0.0.5:6443", COEVersion: "v1.34.1", ContainerVersion: "1.7.27"}, false, t0.Add(time.Minute))
	c := d.Cluster
	if objects.Deref(c.APIAddress) != "https://10.0.0.5:6443" || objects.Deref(c.CoeVersion) != "v1.34.1" ||
		objects.Deref(c.ContainerVersion) != "1.7.27" || c.Status != objects.CreateInProgress {
		t.Fatalf("%+v", c)
	}
	if len(d.NodeGroups) != 1 || d.NodeGroups[0].UUID != "w" || objects.Deref(d.NodeGroups[0].StackID) != "stack-1" {
		t.Fatalf("stack_id heal: %+v", d.NodeGroups)
	}
	// Nothing new reported: nothing changes.
	if d := decide(row(objects.CreateInProgress), defaultNGs(objects.CreateInProgress), drivers.Observation{Phase: drivers.PhasePending},
		false, t0.Add(time.Minute)); d.Changed() {
		t.Fatalf("changes from an empty observation: %v %+v", objects.Changes(d.Cluster), d.NodeGroups)
	}
}

func TestStatusToEvent(t *testing.T) {
	for status, want := range map[string]string{
		objects.CreateComplete: "create/success", objects.CreateFailed: "create/failure",
		objects.UpdateComplete: "update/success", objects.UpdateFailed: "update/failure",
		objects.DeleteComplete: "delete/success", objects.DeleteFailed: "delete/failure",
		objects.RollbackComplete: "update/success", objects.RollbackFailed: "update/failure",
		objects.ResumeComplete: "", objects.CreateInProgress: "",
	} {
		a, o, ok := sm.StatusToEvent(status)
		got := ""
		if ok {
			got = a + "/" + o
		}
		if got != want {
			t.Errorf("%s: %q, want %q", status, got, want)
		}
	}
}

// Refresh stores on a settled cluster what its back end decided on its
// own, never a status or reason, and leaves nodegroups in progress alone.
func TestRefreshStoresReportedFieldsOfSettledClusters(t *testing.T) {
	seven, three := 7, 3
	c := row(objects.CreateComplete)
	ngs := []*objects.NodeGroup{ngRow("m", objects.RoleMaster, objects.CreateComplete, 1),
		ngRow("w", objects.RoleWorker, objects.UpdateComplete, 2), ngRow("x", objects.RoleWorker, objects.UpdateInProgress, 2)}
	o := drivers.Observation{Phase: drivers.PhaseFailed, Reason: "ignored", APIAddress: "https://192.0.2.9:6443", COEVersion: "v1.34.1",
		NodeGroups: map[string]drivers.NodeGroupObservation{
			"m": {Phase: drivers.PhaseFailed, NodeAddresses: []string{"192.0.2.1"}},
			"w": {Phase: drivers.PhaseInProgress, NodeCount: &seven, Version: "v1.34.1"},
			"x": {Phase: drivers.PhaseReady, NodeCount: &three},
		}}
	d := sm.Refresh(sm.Input{Cluster: c, NodeGroups: ngs, Observation: o, Now: t0})
	if d.Skip != "" || d.Event != nil || d.Cluster.Status != objects.CreateComplete || objects.Deref(d.Cluster.StatusReason) != "before" {
		t.Fatalf("decision %+v (status %s, reason %q): a settled cluster keeps its status and reason", d, d.Cluster.Status, objects.Deref(d.Cluster.StatusReason))
	}
	if objects.Deref(d.Cluster.APIAddress) != "https://192.0.2.9:6443" || objects.Deref(d.Cluster.CoeVersion) != "v1.34.1" {
		t.Errorf("cluster fields not stored: %q %q", objects.Deref(d.Cluster.APIAddress), objects.Deref(d.Cluster.CoeVersion))
	}
	got := map[string]*objects.NodeGroup{}
	for _, ng := range d.NodeGroups {
		got[ng.UUID] = ng
	}
	if m := got["m"]; m == nil || !slices.Equal(m.NodeAddresses, []string{"192.0.2.1"}) || m.Status != objects.CreateComplete {
		t.Errorf("master: %+v", m)
	}
	if w := got["w"]; w == nil || w.NodeCount != 7 || objects.Deref(w.Version) != "v1.34.1" || w.Status != objects.UpdateComplete {
		t.Errorf("worker: %+v, want node_count 7 and its version, status kept", w)
	}
	if x := got["x"]; x != nil {
		t.Errorf("a nodegroup in progress was changed: %+v", x)
	}
	if d := sm.Refresh(sm.Input{Cluster: row(objects.UpdateInProgress), Observation: o}); d.Skip == "" || d.Cluster != nil {
		t.Errorf("a cluster in progress is Decide's: %+v", d)
	}
}

// The health a driver reports with its observation is stored with the
// status (Decide and Refresh alike); none reported, or the same as stored,
// changes nothing.
func TestHealthIsStoredWithTheStatus(t *testing.T) {
	healthy := &drivers.Health{Status: objects.Healthy, Reason: map[string]string{"api": "ok"}}
	d := decide(row(objects.CreateInProgress), defaultNGs(objects.CreateComplete), drivers.Observation{Phase: drivers.PhaseReady,
		Health: healthy}, false, t0.Add(time.Minute))
	if d.Cluster.Status != objects.CreateComplete || d.Cluster.HealthStatus != objects.Healthy || d.Cluster.HealthStatusReason["api"] != "ok" {
		t.Fatalf("decided %s, health %s %v: want CREATE_COMPLETE and HEALTHY from the same observation",
			d.Cluster.Status, d.Cluster.HealthStatus, d.Cluster.HealthStatusReason)
	}
	settled := row(objects.CreateComplete)
	r := sm.Refresh(sm.Input{Cluster: settled, Observation: drivers.Observation{Health: &drivers.Health{Status: objects.Unhealthy}}, Now: t0})
	if r.Cluster.HealthStatus != objects.Unhealthy || r.Cluster.HealthStatusReason == nil || len(r.Cluster.HealthStatusReason) != 0 {
		t.Fatalf("refresh: health %s %v, want UNHEALTHY {}", r.Cluster.HealthStatus, r.Cluster.HealthStatusReason)
	}
	for _, h := range []*drivers.Health{nil, {}} {
		if r := sm.Refresh(sm.Input{Cluster: settled, Observation: drivers.Observation{Health: h}, Now: t0}); r.Changed() {
			t.Errorf("health %v not reported: changed %v", h, objects.Changes(r.Cluster))
		}
	}
	settled.HealthStatus, settled.HealthStatusReason = objects.Healthy, map[string]string{"api": "ok"}
	objects.ResetChanges(settled)
	if r := sm.Refresh(sm.Input{Cluster: settled, Observation: drivers.Observation{Health: healthy}, Now: t0}); r.Changed() {
		t.Errorf("the stored health reported again: changed %v", objects.Changes(r.Cluster))
	}
}
