package conductor

// What the handlers hand to the driver and store of its result, the statuses
// Magnum accepts besides CREATE/UPDATE_COMPLETE, and the autoscaler's
// stacked resizes.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

func TestDriverGetsTheCallersArguments(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 2, intp(45)); err != nil {
		t.Fatal(err)
	}
	create := e.drv.lastReq("create_cluster").(drivers.CreateClusterRequest)
	if create.Timeout != 45*time.Minute || objects.Deref(create.Cluster.UUID) != *c.UUID ||
		objects.Deref(create.Template.UUID) != *e.ct.UUID || len(create.NodeGroups) != 2 {
		t.Errorf("create_cluster request %+v", create)
	}

	c = e.seed(e.ct, objects.CreateComplete, 2)
	if _, err := e.h.ClusterUpdate(e.ctx, c, 3, "", nil, true); err != nil {
		t.Fatal(err)
	}
	update := e.drv.lastReq("update_cluster").(drivers.ClusterRequest)
	if w := update.NodeGroupByUUID(e.nodegroup(c, "default-worker").UUID); w == nil || w.NodeCount != 3 ||
		update.Cluster.Status != objects.UpdateInProgress {
		t.Errorf("update_cluster request: worker %+v, cluster %s", w, update.Cluster.Status)
	}

	c = e.seed(e.ct, objects.CreateComplete, 4)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterResize(e.ctx, c, 2, []string{"node-3", "node-4"}, ng); err != nil {
		t.Fatal(err)
	}
	resize := e.drv.lastReq("resize_cluster").(drivers.ResizeRequest)
	if resize.NodeCount != 2 || !slices.Equal(resize.NodesToRemove, []string{"node-3", "node-4"}) ||
		resize.NodeGroup.UUID != ng.UUID || resize.NodeGroup.NodeCount != 2 || resize.NodeGroup.Status != objects.UpdateInProgress ||
		resize.NodeGroupByUUID(ng.UUID).NodeCount != 2 {
		t.Errorf("resize_cluster request %+v", resize)
	}

	c = e.seed(e.ct, objects.CreateComplete, 2)
	ng = e.nodegroup(c, "default-worker")
	newCT := e.template("test-os")
	if _, err := e.h.ClusterUpgrade(e.ctx, c, newCT, 3, ng, true); err != nil {
		t.Fatal(err)
	}
	upgrade := e.drv.lastReq("upgrade_cluster").(drivers.UpgradeRequest)
	if objects.Deref(upgrade.NewTemplate.UUID) != *newCT.UUID || upgrade.MaxBatchSize != 3 || upgrade.NodeGroup.UUID != ng.UUID ||
		objects.Deref(upgrade.Cluster.ClusterTemplateID) != *e.ct.UUID || objects.Deref(upgrade.Template.UUID) != *e.ct.UUID {
		t.Errorf("upgrade_cluster request %+v", upgrade)
	}
}

// TestUpgradeIsRecordedOnceTheDriverAcceptedIt: through a default
// nodegroup, the cluster moves to the new template and kube_tag, and every
// nodegroup gets the new version and image, all in UPDATE_IN_PROGRESS;
// through another nodegroup only that one does.
func TestUpgradeIsRecordedOnceTheDriverAcceptedIt(t *testing.T) {
	e := newEnv(t)
	newCT := e.template("test-os")
	newCT.Labels = map[string]string{"kube_tag": "v1.34.1"}
	newCT.ImageID = objects.Str("image-2")
	if err := e.store.SaveClusterTemplate(e.ctx, newCT); err != nil {
		t.Fatal(err)
	}
	c := e.seed(e.ct, objects.CreateComplete, 2)
	extra := &objects.NodeGroup{ClusterID: *c.UUID, ProjectID: testProject, Name: "extra", Role: objects.RoleWorker, NodeCount: 1,
		Status: objects.CreateComplete, Labels: map[string]string{"kube_tag": "v1.33.1"}}
	if err := e.store.CreateNodeGroup(e.ctx, extra); err != nil {
		t.Fatal(err)
	}
	got, err := e.h.ClusterUpgrade(e.ctx, c, newCT, 1, e.nodegroup(c, "default-master"), false)
	if err != nil {
		t.Fatal(err)
	}
	row := e.cluster(*c.UUID)
	if objects.Deref(row.ClusterTemplateID) != *newCT.UUID || row.Labels["kube_tag"] != "v1.34.1" ||
		row.Labels["min_node_count"] != "1" || row.Status != objects.UpdateInProgress ||
		objects.Deref(got.ClusterTemplateID) != *newCT.UUID {
		t.Fatalf("cluster row: template %s labels %v status %s", objects.Deref(row.ClusterTemplateID), row.Labels, row.Status)
	}
	for _, name := range []string{"default-master", "default-worker", "extra"} {
		ng := e.nodegroup(c, name)
		if objects.Deref(ng.Version) != "v1.34.1" || objects.Deref(ng.ImageID) != "image-2" || ng.Status != objects.UpdateInProgress {
			t.Errorf("nodegroup %s: version %s image %s status %s", name, objects.Deref(ng.Version), objects.Deref(ng.ImageID), ng.Status)
		}
	}
	if l := e.nodegroup(c, "extra").Labels; l["kube_tag"] != "v1.34.1" {
		t.Errorf("extra's kube_tag label %v", l)
	}

	// Through a nodegroup that is not default: that one alone.
	c = e.seed(e.ct, objects.CreateComplete, 2)
	extra = &objects.NodeGroup{ClusterID: *c.UUID, ProjectID: testProject, Name: "extra", Role: objects.RoleWorker, NodeCount: 1,
		Status: objects.CreateComplete}
	if err := e.store.CreateNodeGroup(e.ctx, extra); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.ClusterUpgrade(e.ctx, c, newCT, 1, e.nodegroup(c, "extra"), false); err != nil {
		t.Fatal(err)
	}
	if row := e.cluster(*c.UUID); objects.Deref(row.ClusterTemplateID) != *e.ct.UUID {
		t.Errorf("a nodegroup upgrade moved the cluster's template")
	}
	if ng := e.nodegroup(c, "extra"); objects.Deref(ng.Version) != "v1.34.1" || ng.Status != objects.UpdateInProgress {
		t.Errorf("extra: %s %s", objects.Deref(ng.Version), ng.Status)
	}
	if ng := e.nodegroup(c, "default-worker"); ng.Version != nil || ng.Status != objects.CreateComplete {
		t.Errorf("default-worker moved: %v %s", ng.Version, ng.Status)
	}
	e.notes.take()
}

// TestDriverRequestsAreCopies: whatever a driver writes on the objects of
// its request stays with it; the conductor stores only what Result holds.
func TestDriverRequestsAreCopies(t *testing.T) {
	e := newEnv(t)
	e.drv.scribble = true
	c := e.newCluster(e.ct)
	got, err := e.h.ClusterCreate(e.ctx, c, 1, 2, intp(60))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != objects.CreateInProgress || got.APIAddress != nil {
		t.Errorf("reply %s %v", got.Status, got.APIAddress)
	}
	e.wantStatus(*c.UUID, objects.CreateInProgress, "")
	if row := e.cluster(*c.UUID); row.APIAddress != nil || objects.Deref(row.StackID) != "stack-"+*c.UUID {
		t.Errorf("row api_address %v stack_id %v", row.APIAddress, row.StackID)
	}
	e.wantNGStatus(c, "default-worker", objects.CreateInProgress, "", 2)

	c = e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterResize(e.ctx, c, 3, nil, ng); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 3)
	if ng.NodeCount != 3 {
		t.Errorf("the handler's nodegroup was changed by the driver: %d nodes", ng.NodeCount)
	}
	e.notes.take()
}

// TestObservationInTheResultIsJudgedAtOnce: a back end that finishes inside
// the call says so in its result; the status machine completes the cluster
// and its nodegroups at once, and notifies it (#25).
func TestObservationInTheResultIsJudgedAtOnce(t *testing.T) {
	e := newEnv(t)
	ready := drivers.Observation{Phase: drivers.PhaseReady, APIAddress: "https://10.0.0.1:6443",
		NodeGroups: map[string]drivers.NodeGroupObservation{}}
	e.drv.obs["create_cluster"] = &ready
	c := e.newCluster(e.ct)
	// The nodegroups' uuids are known once inserted: the driver reports
	// every nodegroup of its request.
	e.drv.mu.Lock()
	e.drv.onCall = func(m string) {
		req := e.drv.lastReq(m).(drivers.CreateClusterRequest)
		for _, ng := range req.NodeGroups {
			ready.NodeGroups[ng.UUID] = drivers.NodeGroupObservation{Phase: drivers.PhaseReady, NodeAddresses: []string{"10.0.0.2"}}
		}
	}
	e.drv.mu.Unlock()
	got, err := e.h.ClusterCreate(e.ctx, c, 1, 1, intp(60))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != objects.CreateComplete || objects.Deref(got.APIAddress) != "https://10.0.0.1:6443" {
		t.Fatalf("reply %s %v", got.Status, objects.Deref(got.APIAddress))
	}
	e.wantStatus(*c.UUID, objects.CreateComplete, "")
	for _, name := range []string{"default-master", "default-worker"} {
		if ng := e.nodegroup(c, name); ng.Status != objects.CreateComplete || !slices.Equal(ng.NodeAddresses, []string{"10.0.0.2"}) {
			t.Errorf("%s: %s %v", name, ng.Status, ng.NodeAddresses)
		}
	}
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"INFO magnum.cluster.create/success status=CREATE_COMPLETE")
}

// TestClusterResizeStacksWhileUpdateInProgress: the autoscaler sends a
// resize while the previous one still runs; Magnum accepts it.
func TestClusterResizeStacksWhileUpdateInProgress(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateInProgress, 2)
	ng := e.nodegroup(c, "default-worker")
	ng.Status = objects.UpdateInProgress
	if err := e.store.SaveNodeGroup(e.ctx, ng); err != nil {
		t.Fatal(err)
	}
	ng = e.nodegroup(c, "default-worker")
	for _, n := range []int{3, 4} {
		if _, err := e.h.ClusterResize(e.ctx, e.cluster(*c.UUID), n, nil, e.nodegroup(c, "default-worker")); err != nil {
			t.Fatalf("resize to %d: %v", n, err)
		}
		e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
		e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", int64(n))
		if r := e.drv.lastReq("resize_cluster").(drivers.ResizeRequest); r.NodeCount != n || r.NodeGroup.UUID != ng.UUID ||
			r.NodeGroup.NodeCount != int64(n) || r.NodesToRemove != nil {
			t.Errorf("resize_cluster request %+v", r)
		}
	}
	if calls := e.drv.Calls(); !slices.Equal(calls, []string{"resize_cluster", "resize_cluster"}) {
		t.Errorf("driver calls %v", calls)
	}
	e.wantNotes("INFO magnum.cluster.update/pending status=UPDATE_IN_PROGRESS",
		"INFO magnum.cluster.update/pending status=UPDATE_IN_PROGRESS")
}

// TestLegacyCompleteStatusesAreAccepted: besides CREATE/UPDATE_COMPLETE,
// Magnum's allow_update_status lists ROLLBACK, RESUME, RESTORE, SNAPSHOT,
// CHECK and ADOPT_COMPLETE for update, upgrade, resize and CA rotation.
func TestLegacyCompleteStatusesAreAccepted(t *testing.T) {
	e := newEnv(t)
	for _, status := range []string{objects.RollbackComplete, objects.ResumeComplete, objects.RestoreComplete,
		objects.SnapshotComplete, objects.CheckComplete, objects.AdoptComplete} {
		ops := map[string]func(c *objects.Cluster) error{
			"update": func(c *objects.Cluster) error {
				_, err := e.h.ClusterUpdate(e.ctx, c, 3, "", nil, false)
				return err
			},
			"resize": func(c *objects.Cluster) error {
				_, err := e.h.ClusterResize(e.ctx, c, 3, nil, e.nodegroup(c, "default-worker"))
				return err
			},
			"upgrade": func(c *objects.Cluster) error {
				_, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, e.nodegroup(c, "default-worker"), false)
				return err
			},
			"rotate_ca_certificate": func(c *objects.Cluster) error {
				_, err := e.h.RotateCACertificate(e.ctx, c)
				return err
			},
		}
		for name, op := range ops {
			c := e.seed(e.ct, status, 2)
			if err := op(c); err != nil {
				t.Errorf("%s in %s: %v", name, status, err)
				continue
			}
			e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
		}
	}
	e.notes.take()
}

// TestClusterCreateUsesTheClustersFlavors: a flavor given for the cluster
// wins over the template's, for each default nodegroup.
func TestClusterCreateUsesTheClustersFlavors(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	c.FlavorID, c.MasterFlavorID = objects.Str("c.large"), objects.Str("c.xlarge")
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 2, intp(60)); err != nil {
		t.Fatal(err)
	}
	if got := objects.Deref(e.nodegroup(c, "default-master").FlavorID); got != "c.xlarge" {
		t.Errorf("default-master flavor %s, want the cluster's master flavor c.xlarge", got)
	}
	if got := objects.Deref(e.nodegroup(c, "default-worker").FlavorID); got != "c.large" {
		t.Errorf("default-worker flavor %s, want the cluster's flavor c.large", got)
	}
}

func TestCredentialRotateDriverErrorLeavesTheStatus(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["rotate_credential"] = errors.New("keystone said no")
	c := e.seed(e.ct, objects.UpdateComplete, 2)
	err := e.h.CredentialRotate(e.ctx, c)
	if err == nil || err.Error() != "keystone said no" {
		t.Fatalf("error = %v, want the driver's", err)
	}
	e.wantStatus(*c.UUID, objects.UpdateComplete, "seeded")
}
