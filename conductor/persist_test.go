package conductor

import (
	"errors"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
)

// An operation's outcome written while the database is away is retried
// until it lands (#28: a CREATE_FAILED save that failed was never retried,
// and the sync later completed the cluster).

func TestCreateFailureIsRecordedOnceTheDatabaseAnswers(t *testing.T) {
	e := newEnv(t)
	flaky := &flakyStore{Store: e.store}
	h := *e.h
	h.store = flaky
	e.drv.fail["create_cluster"] = errors.New("backend said no")
	e.drv.onCall = func(string) { flaky.failNext(3) }
	c := e.newCluster(e.ct)
	if _, err := h.ClusterCreate(e.ctx, c, 1, 1, intp(60)); err == nil || err.Error() != "backend said no" {
		t.Fatalf("error %v, want the driver's", err)
	}
	h.WaitRetries()
	e.wantStatus(*c.UUID, objects.CreateFailed, "backend said no")
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}

func TestCreateHandOverIsRecordedOnceTheDatabaseAnswers(t *testing.T) {
	e := newEnv(t)
	flaky := &flakyStore{Store: e.store}
	h := *e.h
	h.store = flaky
	e.drv.onCall = func(string) { flaky.failNext(2) }
	c := e.newCluster(e.ct)
	_, err := h.ClusterCreate(e.ctx, c, 1, 2, intp(60))
	if err == nil || !strings.Contains(err.Error(), "retried in the background") {
		t.Fatalf("error %v, want the first failure, retried", err)
	}
	h.WaitRetries()
	row := e.cluster(*c.UUID)
	if row.Status != objects.CreateInProgress || objects.Deref(row.StackID) != "stack-"+*c.UUID {
		t.Fatalf("row %s stack_id %v", row.Status, row.StackID)
	}
	for _, name := range []string{"default-master", "default-worker"} {
		if ng := e.nodegroup(c, name); objects.Deref(ng.StackID) != "stack-"+*c.UUID {
			t.Errorf("%s stack_id %v", name, ng.StackID)
		}
	}
}

// TestRetriedOutcomeLosesToALaterOperation: a failure record retried in the
// background does not overwrite an operation that started meanwhile.
func TestRetriedOutcomeLosesToALaterOperation(t *testing.T) {
	e := newEnv(t)
	flaky := &flakyStore{Store: e.store}
	h := *e.h
	h.store = flaky
	e.drv.fail["update_cluster"] = errors.New("no capacity")
	c := e.seed(e.ct, objects.CreateComplete, 1)
	e.drv.onCall = func(string) {
		// The database goes away for the failure record, and a delete
		// claims the cluster (in another conductor) before it returns.
		row := e.cluster(*c.UUID)
		row.Status = objects.DeleteInProgress
		if err := e.store.SaveCluster(e.ctx, row); err != nil {
			t.Error(err)
		}
		flaky.failNext(1)
	}
	if _, err := h.ClusterUpdate(e.ctx, c, 3, "", nil, false); err == nil {
		t.Fatal("no error")
	}
	h.WaitRetries()
	// The delete's status stands; the update's size stays with it (its
	// restore was part of the failure record that lost).
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 3)
	e.notes.take()
}
