package conductor

import (
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/simulated"
)

// The handlers with the simulated driver, as the end-to-end setup runs them.
func TestSimulatedDriverCreateRotateDelete(t *testing.T) {
	e := newEnv(t)
	reg, err := drivers.NewRegistry(nil, simulated.New(simulated.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	e.h.drivers = reg
	ct := e.template("simulated")

	c := e.newCluster(ct)
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 2, intp(60)); err != nil {
		t.Fatal(err)
	}
	row := e.cluster(*c.UUID)
	if op, _, ok := simulated.ParseStackID(row.StackID); !ok || op != simulated.OpCreate {
		t.Errorf("stack_id %v", row.StackID)
	}
	// At operation_delay 0 the create completes inside the driver call,
	// its default nodegroups with it (#25), and is notified as any other.
	if row.Status != objects.CreateComplete || objects.Deref(row.APIAddress) == "" {
		t.Errorf("status %s api_address %v", row.Status, row.APIAddress)
	}
	for _, name := range []string{"default-master", "default-worker"} {
		ng := e.nodegroup(c, name)
		if objects.Deref(ng.StackID) != objects.Deref(row.StackID) || ng.Status != objects.CreateComplete || len(ng.NodeAddresses) == 0 {
			t.Errorf("%s: stack_id %v status %s addresses %v", name, ng.StackID, ng.Status, ng.NodeAddresses)
		}
	}
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"INFO magnum.cluster.create/success status=CREATE_COMPLETE")

	if _, err := e.h.RotateCACertificate(e.ctx, e.cluster(*c.UUID)); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")

	e.setStatus(c, objects.UpdateComplete)
	if err := e.h.ClusterDelete(e.ctx, *c.UUID); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
}

func TestSimulatedDriverSyncFailureEndsCreateFailed(t *testing.T) {
	e := newEnv(t)
	reg, err := drivers.NewRegistry(nil, simulated.New(simulated.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	e.h.drivers = reg
	c := e.newCluster(e.template("simulated"))
	c.Labels = map[string]string{simulated.LabelFailSync: "create"}
	if _, err := e.h.ClusterCreate(e.ctx, c, 1, 1, nil); err == nil {
		t.Fatal("no error")
	}
	row := e.cluster(*c.UUID)
	if row.Status != objects.CreateFailed || !strings.Contains(objects.Deref(row.StatusReason), "simulated create failure") {
		t.Errorf("status %s reason %v", row.Status, objects.Deref(row.StatusReason))
	}
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS",
		"ERROR magnum.cluster.create/failure status=CREATE_FAILED")
}
