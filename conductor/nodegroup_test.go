package conductor

import (
	"errors"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

// Summary row nodegroup_create / nodegroup_update / nodegroup_delete. No
// notifications for nodegroups.

func (e *env) apiNodeGroup(c *objects.Cluster, name string) *objects.NodeGroup {
	// What magnum-api sends to nodegroup_create: no status, no id.
	return &objects.NodeGroup{
		UUID: newUUID(), Name: name, ClusterID: *c.UUID, ProjectID: testProject,
		Role: "gpu", NodeCount: 2, MinNodeCount: 1, FlavorID: objects.Str("g1.large"),
	}
}

func TestNodeGroupCreateInsertsAndStartsDriver(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "gpus"))
	if err != nil || ng == nil {
		t.Fatalf("%v %v", ng, err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "gpus", objects.CreateInProgress, "", 2)
	if row := e.nodegroup(c, "gpus"); objects.Deref(row.StackID) != "ng-stack" {
		t.Errorf("driver's changes not saved: stack_id %v", row.StackID)
	}
	e.wantNotes()
}

func TestNodeGroupCreateDriverFailure(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["create_nodegroup"] = errors.New("flavor not found")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "gpus")); err == nil {
		t.Fatal("no error")
	}
	e.wantNGStatus(c, "gpus", objects.CreateFailed, "flavor not found", 2)
	e.wantStatus(*c.UUID, objects.UpdateFailed, "flavor not found")
	e.wantNotes()
}

func TestNodeGroupCreateDuplicateNameRestoresCluster(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	_, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "default-worker"))
	wantClass(t, err, "NodeGroupAlreadyExists", "")
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestNodeGroupCreateRefusedWhileClusterIsDeleted(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.DeleteInProgress, 1)
	_, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "gpus"))
	wantClass(t, err, "NotSupported", `nodegroup_create when cluster status is "DELETE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "seeded")
	if _, gerr := e.store.GetNodeGroupByName(e.ctx, *c.UUID, "gpus"); gerr == nil {
		t.Error("nodegroup inserted")
	}
}

func TestNodeGroupUpdateSavesPatchAndCallsDriver(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	ng.MaxNodeCount = objects.Int(7)
	if _, err := e.h.NodeGroupUpdate(e.ctx, c, ng); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 1)
	if row := e.nodegroup(c, "default-worker"); row.MaxNodeCount == nil || *row.MaxNodeCount != 7 {
		t.Errorf("patched max_node_count not saved: %v", row.MaxNodeCount)
	}
	if !slices.Equal(e.drv.Calls(), []string{"update_nodegroup"}) {
		t.Errorf("driver calls %v", e.drv.Calls())
	}
	e.wantNotes()
}

func TestNodeGroupUpdateGuardNamesNodegroupStatus(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	ng.Status = objects.CreateInProgress
	_, err := e.h.NodeGroupUpdate(e.ctx, c, ng)
	wantClass(t, err, "NotSupported", `nodegroup_update when nodegroup status is "CREATE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
}

func TestNodeGroupUpdateLostRaceRestoresCluster(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	row := e.nodegroup(c, "default-worker")
	row.Status = objects.DeleteInProgress
	if err := e.store.SaveNodeGroup(e.ctx, row); err != nil {
		t.Fatal(err)
	}
	_, err := e.h.NodeGroupUpdate(e.ctx, c, ng)
	wantClass(t, err, "NotSupported", `nodegroup_update when nodegroup status is "DELETE_IN_PROGRESS" is not supported.`)
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.DeleteInProgress, "", 1)
	if len(e.drv.Calls()) != 0 {
		t.Errorf("driver called: %v", e.drv.Calls())
	}
}

func TestNodeGroupUpdateDriverFailure(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["update_nodegroup"] = errors.New("bad labels")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	if _, err := e.h.NodeGroupUpdate(e.ctx, c, ng); err == nil {
		t.Fatal("no error")
	}
	e.wantNGStatus(c, "default-worker", objects.UpdateFailed, "bad labels", 1)
	e.wantStatus(*c.UUID, objects.UpdateFailed, "bad labels")
	e.wantNotes()
}

func TestNodeGroupDeleteSavesDeleteInProgress(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "gpus")); err != nil {
		t.Fatal(err)
	}
	e.setStatus(c, objects.UpdateComplete)
	c = e.cluster(*c.UUID)
	ng := e.nodegroup(c, "gpus")
	if err := e.h.NodeGroupDelete(e.ctx, c, ng); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "gpus", objects.DeleteInProgress, "", 2)
	e.wantNotes()
}

func TestNodeGroupDeleteDriverFailure(t *testing.T) {
	e := newEnv(t)
	e.drv.fail["delete_nodegroup"] = errors.New("nodes still draining")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	if err := e.h.NodeGroupDelete(e.ctx, c, ng); err == nil {
		t.Fatal("no error")
	}
	e.wantNGStatus(c, "default-worker", objects.DeleteFailed, "nodes still draining", 1)
	e.wantStatus(*c.UUID, objects.UpdateFailed, "nodes still draining")
	e.wantNotes() // Magnum's nodegroup handlers send no CADF event
}

func TestNodeGroupDeleteTwiceIsRefused(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(c, "default-worker")
	if err := e.h.NodeGroupDelete(e.ctx, c, ng); err != nil {
		t.Fatal(err)
	}
	stale := e.nodegroup(c, "default-worker")
	stale.Status = objects.CreateComplete // the API's stale view
	err := e.h.NodeGroupDelete(e.ctx, e.cluster(*c.UUID), stale)
	wantClass(t, err, "NotSupported", `nodegroup_delete when nodegroup status is "DELETE_IN_PROGRESS" is not supported.`)
	if calls := e.drv.Calls(); len(calls) != 1 {
		t.Errorf("driver calls %v", calls)
	}
}

func TestNodeGroupOpRejectsForeignNodegroup(t *testing.T) {
	e := newEnv(t)
	c := e.seed(e.ct, objects.CreateComplete, 1)
	other := e.seed(e.ct, objects.CreateComplete, 1)
	ng := e.nodegroup(other, "default-worker")
	_, err := e.h.NodeGroupUpdate(e.ctx, c, ng)
	wantClass(t, err, "InvalidParameterValue", "")
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
}
