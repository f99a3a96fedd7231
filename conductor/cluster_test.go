package conductor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
)

func intp(i int) *int { return &i }

// Summary row cluster_create.

func TestClusterCreateInsertsClusterNodegroupsCertsAndStartsDriver(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	got, err := e.h.ClusterCreate(e.ctx, c, 3, 2, intp(60))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != objects.CreateInProgress {
		t.Errorf("returned status %s", got.Status)
	}
	e.wantStatus(*c.UUID, objects.CreateInProgress, "")
	row := e.cluster(*c.UUID)
	if objects.Deref(row.CACertRef) != "ca-1" || objects.Deref(row.MagnumCertRef) != "client-1" ||
		objects.Deref(row.EtcdCACertRef) != "etcd-1" || objects.Deref(row.FrontProxyCACertRef) != "fp-1" {
		t.Errorf("certificate refs not recorded: %v %v %v %v", row.CACertRef, row.MagnumCertRef, row.EtcdCACertRef, row.FrontProxyCACertRef)
	}
	wantStack := "stack-" + *c.UUID
	if objects.Deref(row.StackID) != wantStack {
		t.Errorf("stack_id %v", row.StackID)
	}
	master, worker := e.nodegroup(c, "default-master"), e.nodegroup(c, "default-worker")
	for _, ng := range []*objects.NodeGroup{master, worker} {
		if ng.Status != objects.CreateInProgress || !ng.IsDefault || objects.Deref(ng.StackID) != wantStack ||
			objects.Deref(ng.ImageID) != "fedora-coreos" || ng.Labels["min_node_count"] != "1" ||
			ng.DockerVolumeSize == nil || *ng.DockerVolumeSize != 10 || ng.ProjectID != testProject {
			t.Errorf("nodegroup %s: %+v", ng.Name, ng)
		}
	}
	if master.NodeCount != 3 || master.Role != objects.RoleMaster || objects.Deref(master.FlavorID) != "m1.medium" || master.MinNodeCount != 0 {
		t.Errorf("master nodegroup %+v", master)
	}
	if worker.NodeCount != 2 || worker.Role != objects.RoleWorker || objects.Deref(worker.FlavorID) != "m1.small" || worker.MinNodeCount != 1 {
		t.Errorf("worker nodegroup %+v", worker)
	}
	notes := e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS")
	if len(notes) == 1 && (notes[0].Content["node_count"] != 2.0 || notes[0].Content["master_count"] != 3.0) {
		t.Errorf("pending notification counts: %v", notes[0].Content)
	}
	if calls := e.drv.Calls(); !slices.Equal(calls, []string{"create_cluster"}) {
		t.Errorf("driver calls %v", calls)
	}
}

func TestClusterCreateWithZeroWorkersStoresZero(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 0, intp(60)); err != nil {
		t.Fatal(err)
	}
	if w := e.nodegroup(c, "default-worker"); w.NodeCount != 0 {
		t.Fatalf("default-worker node_count = %d, want 0 as sent", w.NodeCount)
	}
}

func TestClusterCreateDuplicateChangesNothing(t *testing.T) {
	e := newEnv(t)
	existing := e.seed(e.ct, objects.CreateComplete, 1)
	dup := e.newCluster(e.ct)
	dup.UUID = existing.UUID
	_, err := e.h.ClusterCreate(e.ctx, dup, 1, 1, nil)
	wantClass(t, err, "ClusterAlreadyExists", "")
	e.wantStatus(*existing.UUID, objects.CreateComplete, "seeded")
	e.wantNotes()
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestClusterCreateMissingTemplateEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	c.ClusterTemplateID = objects.Str(newUUID())
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	wantClass(t, err, "ClusterTemplateNotFound", "")
	e.wantStatus(*c.UUID, objects.CreateFailed, err.Error())
	e.wantNotes("ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}

func TestClusterCreateDuplicateNodegroupEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	c := e.newCluster(e.ct)
	// A leftover nodegroup row already holds the master's name.
	if err := e.store.CreateNodeGroup(e.ctx, &objects.NodeGroup{ClusterID: *c.UUID, ProjectID: testProject,
		Name: "default-master", Role: objects.RoleMaster, NodeCount: 1, Status: objects.CreateComplete}); err != nil {
		t.Fatal(err)
	}
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	wantClass(t, err, "NodeGroupAlreadyExists", "")
	e.wantStatus(*c.UUID, objects.CreateFailed, err.Error())
	e.wantNotes("ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}

func TestClusterCreateCertificateFailureEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	e.certs.failGen = exception.ClassCertificatesToClusterFailed.New(map[string]any{"cluster_uuid": "x"})
	c := e.newCluster(e.ct)
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	wantClass(t, err, "CertificatesToClusterFailed", "Failed to create certificates for Cluster: x")
	e.wantStatus(*c.UUID, objects.CreateFailed, "Failed to create certificates for Cluster: x")
	e.wantNotes("ERROR magnum.cluster.create/failure status=CREATE_FAILED")
	e.wantNGStatus(c, "default-worker", objects.CreateInProgress, "", 1)
}

func TestClusterCreateDriverFailureEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["create_cluster"] = errors.New("backend said no")
	c := e.newCluster(e.ct)
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	if err == nil || err.Error() != "backend said no" {
		t.Fatalf("error %v", err)
	}
	e.wantStatus(*c.UUID, objects.CreateFailed, "backend said no")
	notes := e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
	if len(notes) == 2 && notes[1].Reason != "backend said no" {
		t.Errorf("failure reason %v", notes[1].Reason)
	}
}

func TestClusterCreateUnknownDriverEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	ct := e.template("nobody-serves-this")
	c := e.newCluster(ct)
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	wantClass(t, err, "ClusterTypeNotSupported", "")
	e.wantStatus(*c.UUID, objects.CreateFailed, "*")
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}

func TestClusterCreateDriverPanicEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	e.drv.panics["create_cluster"] = true
	c := e.newCluster(e.ct)
	_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
	if err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.CreateFailed, "driver create_cluster failed: boom in create_cluster")
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}

func TestClusterCreateHungDriverEndsCreateFailedAtDeadline(t *testing.T) {
	e := newEnv(t)
	e.drv.hang["create_cluster"] = true
	c := e.newCluster(e.ct)
	ctx, cancel := context.WithTimeout(e.ctx, time.Second) // the driver hangs; the database work before it must fit on a loaded machine
	defer cancel()
	_, err := e.h.ClusterCreate(ctx, c, 1, 1, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
	e.wantStatus(*c.UUID, objects.CreateFailed, err.Error())
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
	// The certificates generated before the driver call are on the failed
	// row, so that deleting the cluster deletes them.
	got, gerr := e.store.GetClusterByUUID(e.ctx, *c.UUID)
	if gerr != nil {
		t.Fatal(gerr)
	}
	refs := refsOf(got).list()
	if len(refs) != 4 || objects.Deref(got.CACertRef) == "" || objects.Deref(got.MagnumCertRef) == "" {
		t.Fatalf("certificate references on the failed row: %v", refs)
	}
}

func TestClusterCreateRejectsMissingCluster(t *testing.T) {
	e := newEnv(t)
	_, err := e.h.ClusterCreate(e.ctx, nil, 1, 1, nil)
	wantClass(t, err, "InvalidParameterValue", "")
	_, err = e.h.ClusterCreate(e.ctx, e.newCluster(e.ct), -1, 1, nil)
	wantClass(t, err, "InvalidParameterValue", "")
	e.wantNotes()
}

// Summary row cluster_update.

func TestClusterUpdateResizesDefaultWorker(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	got, err := e.h.ClusterUpdate(e.ctx, c, 4, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Status != objects.UpdateInProgress {
		t.Fatalf("returned %+v", got)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 4)
	notes := e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE")
	if len(notes) == 1 && notes[0].Content["node_count"] != 1.0 {
		t.Errorf("pending notification node_count %v, want the old count 1", notes[0].Content["node_count"])
	}
	if !slices.Equal(e.drv.Calls(), []string{"update_cluster"}) {
		t.Errorf("driver calls %v", e.drv.Calls())
	}
}

func TestClusterUpdateNothingChangedReturnsNone(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateComplete, 2)
	// magnum-api passes the health fields of the cluster it loaded.
	got, err := e.h.ClusterUpdate(e.ctx, c, 2, c.HealthStatus, c.HealthStatusReason, false)
	if err != nil || got != nil {
		t.Fatalf("got %v, %v; want nil, nil", got, err)
	}
	e.wantStatus(*c.UUID, objects.UpdateComplete, "seeded")
	e.wantNotes()
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestClusterUpdateHealthOnlyIsSavedWithoutDriver(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 2)
	reason := map[string]string{"api": "ok"}
	got, err := e.h.ClusterUpdate(e.ctx, c, 2, objects.Healthy, reason, false)
	if err != nil || got == nil {
		t.Fatalf("got %v, %v", got, err)
	}
	row := e.cluster(*c.UUID)
	if row.HealthStatus != objects.Healthy || row.HealthStatusReason["api"] != "ok" {
		t.Errorf("health not saved: %s %v", row.HealthStatus, row.HealthStatusReason)
	}
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNotes()
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestClusterUpdateRefusedOutsideGuard(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateInProgress, 1)
	_, err := e.h.ClusterUpdate(e.ctx, c, 3, "", nil, false)
	wantClass(t, err, "NotSupported", `Updating a cluster when status is "CREATE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.CreateInProgress, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
	e.wantNotes("ERROR magnum.cluster.update/failure status=CREATE_IN_PROGRESS")
}

func TestClusterUpdateDriverFailureRestoresSize(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["update_cluster"] = errors.New("no capacity")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	_, err := e.h.ClusterUpdate(e.ctx, c, 5, "", nil, false)
	if err == nil || err.Error() != "no capacity" {
		t.Fatalf("error %v", err)
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "no capacity")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
}

func TestClusterUpdateLostRaceReportsCurrentStatus(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	// Another conductor moved the cluster on after the API read it.
	e.setStatus(c, objects.DeleteInProgress)
	_, err := e.h.ClusterUpdate(e.ctx, c, 3, "", nil, false)
	wantClass(t, err, "NotSupported", `Updating a cluster when status is "DELETE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
	e.wantNotes("ERROR magnum.cluster.update/failure status=DELETE_IN_PROGRESS")
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestClusterUpdateConcurrentOnlyOneWins(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	const n = 4
	errs := make(chan error, n)
	for i := range n {
		cp := e.cluster(*c.UUID)
		go func() {
			_, err := e.h.ClusterUpdate(e.ctx, cp, 2+i, "", nil, false)
			errs <- err
		}()
	}
	var ok, refused int
	for range n {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case errors.Is(err, exception.ClassNotSupported.New(nil)):
			refused++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 || refused != n-1 {
		t.Errorf("%d updates won, %d refused; want 1 and %d", ok, refused, n-1)
	}
	if calls := e.drv.Calls(); len(calls) != 1 {
		t.Errorf("driver called %d times", len(calls))
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
}

// Summary row cluster_delete.

func TestClusterDeleteCallsPreDeleteThenDelete(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	if !slices.Equal(e.drv.Calls(), []string{"pre_delete_cluster", "delete_cluster"}) {
		t.Errorf("driver calls %v", e.drv.Calls())
	}
	e.wantNotes("INFO magnum.cluster.delete/pending status=CREATE_COMPLETE")
}

func TestClusterDeleteDriverFailureEndsDeleteFailedAndCanRetry(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["delete_cluster"] = errors.New("stuck volume")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	err := e.h.ClusterDelete(e.ctx, *c.UUID)
	if err == nil || err.Error() != "stuck volume" {
		t.Fatalf("error %v", err)
	}
	e.wantStatus(*c.UUID, objects.DeleteFailed, "stuck volume")
	// As Magnum, the failure event still shows the status before the delete.
	e.wantNotes("INFO magnum.cluster.delete/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.delete/failure status=CREATE_COMPLETE")

	delete(e.drv.fail, "delete_cluster")
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err != nil {
		t.Fatalf("retry from DELETE_FAILED: %v", err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	e.wantNotes("INFO magnum.cluster.delete/pending status=DELETE_FAILED")
}

func TestClusterDeletePreDeleteFailureEndsDeleteFailed(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["pre_delete_cluster"] = errors.New("load balancer busy")
	c := e.seed(e.ct, objects.UpdateFailed, 1)
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.DeleteFailed, "load balancer busy")
	if !slices.Equal(e.drv.Calls(), []string{"pre_delete_cluster"}) {
		t.Errorf("driver calls %v", e.drv.Calls())
	}
}

func TestClusterDeleteUnknownClusterChangesNothing(t *testing.T) {
	e := newEnv(t)
	err := e.h.ClusterDelete(e.ctx, newUUID())
	wantClass(t, err, "ClusterNotFound", "")
	e.wantNotes()
}

func TestClusterDeleteWhileDeletingIsRefused(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.DeleteInProgress, 1)
	err := e.h.ClusterDelete(e.ctx, *c.UUID)
	wantClass(t, err, "NotSupported", `Deleting a cluster when status is "DELETE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "seeded")
	e.wantNotes("ERROR magnum.cluster.delete/failure status=DELETE_IN_PROGRESS")
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestClusterDeleteHungDriverEndsDeleteFailed(t *testing.T) {
	e := newEnv(t)
	e.drv.hang["delete_cluster"] = true
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ctx, cancel := context.WithTimeout(e.ctx, time.Second) // the driver hangs; the database work before it must fit on a loaded machine
	defer cancel()
	err := e.h.ClusterDelete(ctx, *c.UUID)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	e.wantStatus(*c.UUID, objects.DeleteFailed, err.Error())
}

// Summary row cluster_resize.

func TestClusterResizeSetsNodegroupSizeAndStatus(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	got, err := e.h.ClusterResize(e.ctx, c, 5, []string{"n1"}, ng)
	if err != nil || got == nil {
		t.Fatalf("%v %v", got, err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 5)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE")
}

func TestClusterResizeAllowedAfterUpdateFailed(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateFailed, 2)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterResize(e.ctx, c, 3, nil, ng); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 3)
}

func TestClusterResizeRefusedOutsideGuard(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.DeleteFailed, 2)
	ng := e.nodegroup(c, "default-worker")
	_, err := e.h.ClusterResize(e.ctx, c, 3, nil, ng)
	wantClass(t, err, "NotSupported", `Resizing a cluster when status is "DELETE_FAILED" is not supported.`)
	e.wantStatus(*c.UUID, objects.DeleteFailed, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 2)
	e.wantNotes("ERROR magnum.cluster.update/failure status=DELETE_FAILED")
}

func TestClusterResizeDriverFailureRestoresSize(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["resize_cluster"] = errors.New("quota exceeded")
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterResize(e.ctx, c, 9, nil, ng); err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "quota exceeded")
	e.wantNGStatus(c, "default-worker", objects.UpdateFailed, "quota exceeded", 2)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
}

func TestClusterResizeOfNodegroupBeingDeletedIsRefused(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	row := e.nodegroup(c, "default-worker")
	row.Status = objects.DeleteInProgress
	if err := e.store.SaveNodeGroup(e.ctx, row); err != nil {
		t.Fatal(err)
	}
	_, err := e.h.ClusterResize(e.ctx, c, 3, nil, ng)
	wantClass(t, err, "NotSupported", `Resizing a nodegroup when status is "DELETE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.DeleteInProgress, "", 2)
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

// Summary row cluster_upgrade.

func TestClusterUpgradeMovesClusterAndNodegroupToUpdateInProgress(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	newCT := e.template("test-os")
	got, err := e.h.ClusterUpgrade(e.ctx, c, newCT, 1, ng, false)
	if err != nil || got == nil {
		t.Fatalf("%v %v", got, err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 2)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE")
}

func TestClusterUpgradeRefusedOutsideGuard(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.UpdateFailed, 2)
	ng := e.nodegroup(c, "default-worker")
	_, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, ng, false)
	wantClass(t, err, "NotSupported", `Upgrading a cluster when status is "UPDATE_FAILED" is not supported.`)
	e.wantStatus(*c.UUID, objects.UpdateFailed, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 2)
	e.wantNotes("ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
}

func TestClusterUpgradeNotSupportedFromDriverChangesNoStatus(t *testing.T) {
	e := newEnv(t)
	notSupported := exception.NotSupportedMessage("Upgrading to v9 is not supported by this driver.")
	e.drv.fail["upgrade_cluster"] = notSupported
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	_, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, ng, false)
	if err != notSupported { //nolint:errorlint // the same error value, not wrapped, is what the test asserts
		t.Fatalf("error %v, want the driver's NotSupported untouched", err)
	}
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 2)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.update/failure status=CREATE_COMPLETE")
}

func TestClusterUpgradeDriverFailureSetsUpdateFailedOnBoth(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["upgrade_cluster"] = errors.New("image missing")
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, ng, false); err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "image missing")
	e.wantNGStatus(c, "default-worker", objects.UpdateFailed, "image missing", 2)
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"ERROR magnum.cluster.update/failure status=UPDATE_FAILED")
}

func TestClusterUpgradeDriverPanicSetsUpdateFailed(t *testing.T) {
	e := newEnv(t)
	e.drv.panics["upgrade_cluster"] = true
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, ng, false); err == nil {
		t.Fatal("no error")
	}
	e.wantStatus(*c.UUID, objects.UpdateFailed, "driver upgrade_cluster failed: boom in upgrade_cluster")
	e.wantNGStatus(c, "default-worker", objects.UpdateFailed, "*", 2)
}

func TestHandlersRejectObjectsWithoutUUID(t *testing.T) {
	e := newEnv(t)
	c := &objects.Cluster{Status: objects.CreateComplete}
	if _, err := e.h.ClusterUpdate(e.ctx, c, 1, "", nil, false); err == nil {
		t.Error("update accepted a cluster without uuid")
	}
	if _, err := e.h.ClusterResize(e.ctx, c, 1, nil, &objects.NodeGroup{UUID: "x"}); err == nil {
		t.Error("resize accepted a cluster without uuid")
	}
	if _, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, nil, false); err == nil {
		t.Error("upgrade accepted a nil nodegroup")
	}
	if _, err := e.h.RotateCACertificate(e.ctx, nil); err == nil {
		t.Error("rotate accepted a nil cluster")
	}
	e.wantNotes()
}

func TestFailureLogCarriesRequestIDsAndNoSecrets(t *testing.T) {
	e := newEnv(t)
	var buf bytes.Buffer
	e.h.log = slog.New(slog.NewJSONHandler(&buf, nil))
	rc := *request.From(e.ctx)
	rc.AuthToken, rc.Password = "tok-secret", "pw-secret"
	ctx := request.With(context.Background(), &rc)
	e.drv.fail["update_cluster"] = errors.New("no capacity")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := e.h.ClusterUpdate(ctx, c, 2, "", nil, false); err == nil {
		t.Fatal("no error")
	}
	var found bool
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "cluster update failed" {
			found = true
			if m["request_id"] != rc.RequestID || m["global_request_id"] != "req-global-1" ||
				m["cluster_uuid"] != *c.UUID || m["method"] != "cluster_update" || m["error"] != "no capacity" {
				t.Errorf("log line %v", m)
			}
		}
	}
	if !found {
		t.Errorf("no failure log line in %s", buf.String())
	}
	if bytes.Contains(buf.Bytes(), []byte("secret")) {
		t.Errorf("secret logged: %s", buf.String())
	}
}

func TestDeleteDuringCreateIsNotOverwrittenByCreate(t *testing.T) {
	e := newEnv(t)
	e.drv.hang["create_cluster"] = true
	c := e.newCluster(e.ct)
	done := make(chan error, 1)
	go func() {
		_, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil)
		done <- err
	}()
	<-e.drv.entered // the create is inside the driver
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err != nil {
		t.Fatal(err)
	}
	close(e.drv.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	if row := e.cluster(*c.UUID); objects.Deref(row.StackID) != "stack-"+*c.UUID {
		t.Errorf("the create's driver result was not recorded: stack_id %v", row.StackID)
	}
}

type failingNotifier struct{ calls int }

func (f *failingNotifier) Notify(context.Context, string, string, any) error {
	f.calls++
	return errors.New("broker down")
}

func TestNotificationFailureDoesNotFailTheOperation(t *testing.T) {
	e := newEnv(t)
	fn := &failingNotifier{}
	e.h.notify = NewNotifications(fn, e.store, "openstack", discardLog())
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	if fn.calls != 1 {
		t.Errorf("notifier called %d times", fn.calls)
	}
}

// reloadFailingStore loses every conditional update, then cannot read the
// row back: the database went away between the two.
type reloadFailingStore struct {
	*db.Store
	err error
}

func (s reloadFailingStore) SaveClusterIf(context.Context, *objects.Cluster, db.ClusterCond) error {
	return db.ErrStatusChanged
}
func (s reloadFailingStore) SaveNodeGroupIf(context.Context, *objects.NodeGroup, db.NodeGroupCond) error {
	return db.ErrStatusChanged
}
func (s reloadFailingStore) GetClusterByUUID(context.Context, string) (*objects.Cluster, error) {
	return nil, s.err
}
func (s reloadFailingStore) GetNodeGroupByUUID(context.Context, string, string) (*objects.NodeGroup, error) {
	return nil, s.err
}

// TestClaimReportsAFailedReload: a claim that lost its race and then
// cannot reload the row returns the reload's error, not a refusal by an
// "unknown" status that hides the database failure.
func TestClaimReportsAFailedReload(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	dbErr := errors.New("db: get cluster: invalid connection")
	h := *e.h
	h.store = reloadFailingStore{Store: e.store, err: dbErr}
	err := h.inTx(e.ctx, func(ctx context.Context, b *batch) error {
		return h.claimCluster(ctx, b, c, objects.UpdateInProgress, allowUpdateStatus())
	})
	if !errors.Is(err, dbErr) || asRefusal(err) != nil {
		t.Fatalf("cluster claim: %v, want the reload's error", err)
	}
	ng := &objects.NodeGroup{UUID: newUUID(), ClusterID: objects.Deref(c.UUID)}
	err = h.inTx(e.ctx, func(ctx context.Context, b *batch) error {
		return h.claimNodeGroup(ctx, b, ng, objects.UpdateInProgress, allowedNodeGroupStates())
	})
	if !errors.Is(err, dbErr) || asRefusal(err) != nil {
		t.Fatalf("nodegroup claim: %v, want the reload's error", err)
	}
	// A lost claim that reloads is a refusal naming the current status.
	e.setStatus(c, objects.DeleteInProgress)
	err = e.h.inTx(e.ctx, func(ctx context.Context, b *batch) error {
		return e.h.claimCluster(ctx, b, c, objects.UpdateInProgress, allowUpdateStatus())
	})
	if r := asRefusal(err); r == nil || r.status != objects.DeleteInProgress || r.nodegroup {
		t.Fatalf("claim of a cluster being deleted: %v", err)
	}
}

// TestFailedNodegroupMayBeResizedAndUpgraded: Magnum checks only the
// cluster's status, and resizing or upgrading a nodegroup whose creation
// failed is how an operator mends it.
func TestFailedNodegroupMayBeResizedAndUpgraded(t *testing.T) {
	for _, status := range []string{objects.CreateFailed, objects.DeleteFailed, objects.RollbackFailed} {
		t.Run(status, func(t *testing.T) {
			e := newEnv(t)
			c := e.seed(e.ct, objects.CreateComplete, 2)
			row := e.nodegroup(c, "default-worker")
			row.Status = status
			if err := e.store.SaveNodeGroup(e.ctx, row); err != nil {
				t.Fatal(err)
			}
			if _, err := e.h.ClusterResize(e.ctx, c, 3, nil, e.nodegroup(c, "default-worker")); err != nil {
				t.Fatalf("resize: %v", err)
			}
			e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 3)

			c = e.seed(e.ct, objects.CreateComplete, 2)
			row = e.nodegroup(c, "default-worker")
			row.Status = status
			if err := e.store.SaveNodeGroup(e.ctx, row); err != nil {
				t.Fatal(err)
			}
			if _, err := e.h.ClusterUpgrade(e.ctx, c, e.template("test-os"), 1, e.nodegroup(c, "default-worker"), false); err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 2)
		})
	}
}
