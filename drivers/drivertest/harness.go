// Package drivertest is the conformance suite of the cluster driver
// contract (package drivers): any driver must pass it, the way a
// database/sql driver or a CSI driver passes its own. Run gives it a driver
// and a way to make the driver's back end progress (a Harness); it plays
// the conductor: it claims every operation in its own rows as the
// conductor's handlers do, calls the driver with the requests they build,
// stores what the driver returns, observes the back end as the status sync
// does, and judges every observation with the status machine
// (drivers/statusmachine), until each operation ends as it must.
//
// What it runs, on clusters of the harness's template:
//   - create → ready; resize up and down (with nodes_to_remove where the
//     harness can name nodes); nodegroup create, update and delete; upgrade;
//     delete → gone;
//   - every operation called twice with the same request, as after a lost
//     reply, which must change nothing (no second cluster, nodegroup or
//     node: a converged nodegroup reports as many node addresses as nodes);
//   - Observe called concurrently from several goroutines, cached and fresh,
//     while operations run (run the suite with -race);
//   - a failure the harness injects ends the operation *_FAILED with a
//     reason, and a failed upgrade rolls the cluster back to the template
//     its back end still runs (AppliedTemplateID);
//   - a create the back end never converges times out (on a fresh
//     observation, as the conductor acts on deadlines), and so does an
//     update (a resize): Observe must report when it started
//     (Observation.Started), from which the conductor's update deadline
//     counts (by default the cluster's create_timeout, as Heat's);
//   - a cluster the back end never had is not reported as there;
//   - every observation is well formed (phases, nodegroups of the request
//     only, Started not in the future, the desired state in
//     Observation.Request once an operation reached the back end).
//
// A capability the harness lacks is declared in Capabilities.Lacks with a
// reason, and its checks are skipped saying so; nothing is skipped
// silently.
//
// # Writing a harness
//
// A harness owns the back end. Progress lets it move: for a simulated back
// end, advance its clock; for the Cluster API driver against a real API
// server without controllers, write the statuses the controllers would
// (the Cluster's conditions, Machines with their nodeRef and addresses,
// the MachineDeployments' replicas) for what the Cluster and its
// MachineDeployments ask; against the real Cluster API controllers, wait
// (bounded by ctx) for the controllers to move, and declare CapStall
// lacking (controllers do not stand still for the timeout check).
// InjectFailure makes the back end give up on an operation: a label on the
// suite's cluster row for the simulated driver; for the Cluster API driver
// on the real controllers, a ValidatingAdmissionPolicy that refuses what
// the topology controller writes for that one cluster (its control plane's
// creation, or its version change), which the controller reports as a
// failed reconcile. See drivers/simulated's conformance test for a complete
// harness, and drivers/capi's TestRealCAPIConformance for one on a real
// back end.
package drivertest

import (
	"context"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Harness gives the suite a driver and control over its back end.
type Harness interface {
	// Driver returns the driver under test, ready to serve: a
	// drivers.Runner already running and Ready.
	Driver() drivers.Driver
	// Fixture says what the suite's clusters are made of.
	Fixture() Fixture
	// Progress lets the back end move towards what it has been asked for
	// the cluster c (the suite's row), and returns once it may have: the
	// suite observes after each call. It is called again until the
	// operation under way ends, or Fixture.Patience has passed.
	Progress(ctx context.Context, c *objects.Cluster) error
	// Capabilities says what the harness (and its driver) support.
	Capabilities() Capabilities
}

// FailureInjector is implemented by harnesses that can make the back end
// give up on an operation (required unless CapFailure is lacking).
type FailureInjector interface {
	// InjectFailure makes the back end give up on the next operation op of
	// the cluster c: by changing the back end, or c itself (the suite's row,
	// which it passes to the driver in every later request; a label, for
	// instance).
	InjectFailure(ctx context.Context, c *objects.Cluster, op Op) error
}

// NodeLister is implemented by harnesses that can name the nodes of a
// nodegroup as ResizeRequest.NodesToRemove names them (required unless
// CapNodesToRemove is lacking).
type NodeLister interface {
	NodeNames(ctx context.Context, c *objects.Cluster, ng *objects.NodeGroup) ([]string, error)
}

// Op is an operation a failure is injected into.
type Op string

// The operations failures are injected into.
const (
	OpCreate  Op = "create"
	OpUpgrade Op = "upgrade"
)

// Capability is a part of the suite a harness may lack.
type Capability string

// The capabilities a harness may declare lacking.
const (
	// CapResize: resize_cluster.
	CapResize Capability = "resize"
	// CapNodesToRemove: a resize down that names the nodes to remove.
	CapNodesToRemove Capability = "nodes_to_remove"
	// CapNodeGroups: nodegroup create, update and delete.
	CapNodeGroups Capability = "nodegroups"
	// CapUpgrade: upgrade_cluster (Fixture.UpgradeTemplate).
	CapUpgrade Capability = "upgrade"
	// CapUpgradeRollback: a failed upgrade reports AppliedTemplateID.
	CapUpgradeRollback Capability = "upgrade_rollback"
	// CapFailure: the harness can inject failures (FailureInjector).
	CapFailure Capability = "failure"
	// CapStall: the back end does not converge unless Progress is called
	// (the create and update timeout checks).
	CapStall Capability = "stall"
	// CapRequest: Observe reports Observation.Request (without it the
	// conductor cannot resume an operation interrupted before its driver
	// call, other than a create).
	CapRequest Capability = "request"
)

// Capabilities are what a harness supports.
type Capabilities struct {
	// Lacks names each capability the harness lacks, with the reason.
	Lacks map[Capability]string
}

func (c Capabilities) lacks(cp Capability) (string, bool) {
	r, ok := c.Lacks[cp]
	return r, ok
}

// Fixture is what the suite's clusters are made of.
type Fixture struct {
	// Template is the clusters' template (UUID set; the driver's
	// server_type, cluster_distro and coe). Its labels are the clusters'
	// labels, under Labels.
	Template *objects.ClusterTemplate
	// UpgradeTemplate is the template an upgrade goes to (a newer
	// kube_tag); required unless CapUpgrade is lacking.
	UpgradeTemplate *objects.ClusterTemplate
	// Labels are the clusters' own labels, over the template's.
	Labels map[string]string
	// ProjectID and UserID own the clusters (defaults: fixed test values).
	ProjectID, UserID string
	// Keypair is the clusters' keypair (default "drivertest").
	Keypair string
	// MasterCount and NodeCount size a new cluster (defaults 1 and 1).
	MasterCount, NodeCount int
	// Patience bounds how long (in wall-clock time) one operation may take
	// to end (default 1 min).
	Patience time.Duration
	// CreateTimeout is the clusters' create_timeout (default 60 min).
	CreateTimeout time.Duration
	// Now is the back end's clock, the status machine's "now" (default
	// time.Now); a simulated back end's fake clock.
	Now func() time.Time
	// Observers is how many goroutines call Observe concurrently during
	// each operation (default 4; -1 none).
	Observers int
}
