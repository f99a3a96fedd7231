package conductor

// What the handlers hand to the driver, the scale manager, the statuses
// Magnum accepts besides CREATE/UPDATE_COMPLETE, and the autoscaler's
// stacked resizes.

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

func wantArgs(t *testing.T, method string, got []any, want ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s arguments = %#v, want %#v", method, got, want)
	}
}

func TestDriverGetsTheCallersArguments(t *testing.T) {
	e := newEnv(t)
	sm := testScaleManager{name: "sm-1"}
	e.drv.sm = sm

	c := e.newCluster(e.ct)
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 2, intp(45)); err != nil {
		t.Fatal(err)
	}
	wantArgs(t, "create_cluster", e.drv.lastArgs("create_cluster"), 45)

	c = e.seed(e.ct, objects.CreateComplete, 2)
	if _, err := e.h.ClusterUpdate(e.ctx, c, 3, "", nil, true); err != nil {
		t.Fatal(err)
	}
	wantArgs(t, "update_cluster", e.drv.lastArgs("update_cluster"), sm, true)

	c = e.seed(e.ct, objects.CreateComplete, 4)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.ClusterResize(e.ctx, c, 2, []string{"node-3", "node-4"}, ng); err != nil {
		t.Fatal(err)
	}
	wantArgs(t, "resize_cluster", e.drv.lastArgs("resize_cluster"), sm, 2, []string{"node-3", "node-4"}, ng.UUID, int64(2))

	c = e.seed(e.ct, objects.CreateComplete, 2)
	ng = e.nodegroup(c, "default-worker")
	newCT := e.template("test-os")
	if _, err := e.h.ClusterUpgrade(e.ctx, c, newCT, 3, ng, true); err != nil {
		t.Fatal(err)
	}
	// Magnum's cluster_upgrade passes no scale manager, and asks for none.
	wantArgs(t, "upgrade_cluster", e.drv.lastArgs("upgrade_cluster"), *newCT.UUID, 3, ng.UUID, nil, true)
	if e.drv.smCalls != 2 {
		t.Errorf("scale manager asked %d times, want once per update and resize", e.drv.smCalls)
	}
	// The conductor does not record the new template: the driver does, if
	// it wants to (Magnum's handler leaves cluster_template_id alone).
	if got := objects.Deref(e.cluster(*c.UUID).ClusterTemplateID); got != *e.ct.UUID {
		t.Errorf("cluster_template_id = %s after upgrade, want the old %s", got, *e.ct.UUID)
	}
}

// TestScaleManagerErrorChangesNothing: Magnum asks for the scale manager
// before any status change, so its error reaches the caller with the
// cluster, its nodegroups and the notifications untouched. An upgrade does
// not ask for one, so it goes ahead.
func TestScaleManagerErrorChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.drv.smErr = errors.New("cannot list the cluster's nodes")
	c := e.seed(e.ct, objects.CreateComplete, 2)
	ng := e.nodegroup(c, "default-worker")
	ops := map[string]func() error{
		"update": func() error { _, err := e.h.ClusterUpdate(e.ctx, c, 5, "", nil, false); return err },
		"resize": func() error { _, err := e.h.ClusterResize(e.ctx, c, 5, nil, ng); return err },
	}
	for name, op := range ops {
		if err := op(); err == nil || err.Error() != "cannot list the cluster's nodes" {
			t.Errorf("%s: error = %v, want the scale manager's", name, err)
		}
		e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
		e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 2)
		e.wantNotes()
	}
	if calls := e.drv.Calls(); len(calls) != 0 {
		t.Errorf("driver called: %v", calls)
	}
	if _, err := e.h.ClusterUpgrade(e.ctx, c, e.ct, 1, ng, false); err != nil {
		t.Fatalf("upgrade with a failing scale manager: %v", err)
	}
	if got := e.drv.lastArgs("upgrade_cluster"); got == nil {
		t.Fatal("upgrade_cluster not called")
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
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
		wantArgs(t, "resize_cluster", e.drv.lastArgs("resize_cluster"), nil, n, []string(nil), ng.UUID, int64(n))
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
