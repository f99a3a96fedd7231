// Package drivers is the cluster driver contract of magnum-conductor: the
// interface a driver implements, the requests it receives, what it reports,
// and the registry that selects a driver for a cluster template.
//
// This comment is the driver author's reference; docs/writing-a-driver.md
// is the guide (an outside module, a conductor binary of its own built
// with package service, the conformance suite), and examples/outoftree a
// complete outside driver. Two drivers ship with the conductor
// (drivers/capi, the Cluster API driver, and drivers/simulated, which
// models a back end without one); an outside driver is built the same way,
// and every driver must pass the conformance suite, drivers/drivertest.
//
// # Drivers observe, the conductor decides and persists
//
// A driver turns the conductor's requests into changes of its back end, and
// reports what its back end shows (Observe). It never decides a Magnum
// status and never writes the database: it holds no database handle. The
// conductor (its RPC handlers and the sync_cluster_status task) claims every
// operation in the database, calls the driver, stores what the driver
// returns, and turns observations into statuses, reasons, rollbacks and
// notifications with one status machine shared by every driver
// (drivers/statusmachine). Two drivers that report the same observations
// therefore behave the same for Magnum's API and its users.
//
// # What each method must do
//
//   - CreateCluster creates the cluster in the back end from the request's
//     cluster, template and nodegroups, and returns in Result.StackID the
//     name by which it finds the cluster again (Magnum's stack_id). The
//     conductor stores it on the cluster and on its default nodegroups; the
//     status sync polls a cluster in CREATE_IN_PROGRESS only once that is
//     stored, so a create is complete only when the driver's back end says so.
//   - UpdateCluster, ResizeCluster, UpgradeCluster, CreateNodeGroup,
//     UpdateNodeGroup and DeleteNodeGroup change the back end towards the
//     request. The request already holds the change (a resized nodegroup with
//     its new node_count, a new nodegroup as created in the database). An
//     upgrade is the exception: its request holds the cluster as it is, and
//     NewTemplate is where it goes (see UpgradeRequest).
//   - DeleteCluster asks the back end to delete the cluster and everything
//     the driver created for it (credentials, secrets). The cluster is gone
//     for Magnum once Observe reports PhaseGone.
//   - Observe reports what the back end shows for one cluster and its
//     nodegroups (Observation). It is called every sync interval (10 s) for
//     every cluster with an operation in progress (and for every settled
//     cluster of a SettledObserver), so it should answer from a cache when
//     the back end is expensive to ask; with ObserveRequest.Fresh it must
//     ask the back end itself.
//
// A method starts the change and returns: it does not wait for the back end
// to converge (the status sync observes that). A back end that finishes
// inside the call may say so in Result.Observation, which the conductor
// judges at once.
//
// Errors: return the api/exception errors Magnum raises where Magnum would
// (NotSupported, InvalidParameterValue, ...); any other error becomes
// MagnumException at the RPC edge with its message. An error wrapping
// ErrNotReady says the back end cannot be reached yet; the status sync then
// leaves the cluster as it is and tries again, without logging each refusal.
//
// # Idempotency
//
// Every operation may be called again with the same request: after a lost
// reply, a retried RPC, or a conductor that died between its claim and the
// driver call and whose operation is resumed by another. A repeated call must
// converge to the same back end state and must never create a second
// cluster, nodegroup or credential. Derive back end names from the cluster's
// and nodegroups' uuids (or from the stack_id the request carries), not from
// random values or the clock.
//
// # Interrupted operations
//
// The conductor claims an operation in the database before it calls the
// driver. A conductor killed between the two (or that lost its database
// there) leaves a claim the back end never heard of. Observation.Request is
// how the conductor tells: a change its rows hold that the back end's
// desired state does not show is judged pending (never complete on the
// back end's old state), and once it stays so past the conductor's bound
// ([conductor] interrupted_operation_timeout) the conductor calls the
// operation again, with a request built from the rows. A create is found
// by its missing stack_id and needs no Request. A driver that does not
// report Request leaves its other interrupted operations to their deadlines.
//
// # Which fields a driver may set
//
// Requests carry copies: a driver may read and even modify them, and nothing
// of it reaches the database. What an operation changes is returned in
// Result, and Result's fields are the only ones a driver sets: StackID (the
// back end's name for the cluster, or for the nodegroup of a nodegroup
// operation) and Observation. Everything else the conductor decides: status
// and status_reason from the status machine, api_address, coe_version,
// container_version, node_addresses, autoscaled node counts, and the
// rollback of cluster_template_id and kube_tag after a failed upgrade, from
// the fields an Observation reports.
//
// # Concurrency
//
// The conductor calls one driver from many goroutines: its RPC workers, the
// status sync and health polling run at once, and several conductors may
// share one back end. For one cluster, Observe (the status sync, and a
// fresh Observe before a deadline is acted on) may run while an operation of
// that cluster is in flight, and health polling (Monitor) at any time. Every
// operation first claims the cluster's row, which refuses most operations
// while another runs, but not all: resizes (the autoscaler stacks them) and
// nodegroup operations are accepted while the cluster is in
// UPDATE_IN_PROGRESS, and a resumed operation may repeat one still running
// in a conductor that lost its database. A driver must therefore be safe for
// concurrent use, write the back end's desired state from the request as a
// whole (the request holds every nodegroup as the conductor stores it), and
// not assume that Observe sees its own last write: until the back end took a
// change up, report PhasePending, or the desired state it holds in
// Observation.Request, so the conductor can tell.
//
// # The driver-call deadline
//
// Every operation runs under the conductor's driver-call deadline
// ([conductor] driver_call_timeout, 5 min by default).
// When it passes, ctx is cancelled and the conductor records the operation
// as failed (*_FAILED with the reason) without waiting for the method to
// return; the objects it handed over are not used again. The driver must
// leave its back end in a state from which a repeated call, or a delete, can
// recover: write the back end's desired state in one step where it can, and
// never hold a half-written state that only the abandoned call would finish.
//
// # Compatibility policy
//
// (docs/writing-a-driver.md has the whole policy, package service and the
// conformance suite included.) The contract grows without breaking drivers
// that embed Unimplemented:
//   - a method is added to Driver only together with a default in
//     Unimplemented (new capabilities prefer a new optional interface, which
//     a driver implements or not);
//   - request and observation structs only gain fields, whose zero value
//     means what the contract meant before the field existed;
//   - the meaning of an existing field or phase does not change.
//
// A driver that does not embed Unimplemented is told by the compiler when a
// method is added. Names are only removed after a release that marks them
// deprecated.
package drivers

import (
	"context"
	"errors"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
)

// ErrNotReady is wrapped by the errors of a driver whose backend has not
// answered yet (the Cluster API driver before its management cluster is
// reachable). The driver logs its own retries; callers that poll, such as
// sync_cluster_status, need not log each refused cluster.
var ErrNotReady = errors.New("driver not ready")

// ErrNotManaged is wrapped by the errors of a driver asked about a cluster
// whose back-end objects it cannot identify as its own: a row another
// driver or conductor created (its stack_id in another's shape) and that
// has not been adopted. Such a cluster is never reported gone, failed or
// healthy from the absence of objects the driver would have made: the
// status sync and health polling leave its row as it is, and operations on
// it are refused (Admitter) before any status change.
var ErrNotManaged = errors.New("cluster not managed by this driver")

// Key is what a driver provides: (server_type, os, coe), as in
// Driver.provides.
type Key struct {
	ServerType string // "vm" or "bm"
	OS         string // the template's cluster_distro
	COE        string // "kubernetes"
}

// Phase is where the back end stands with the latest change the conductor
// asked of it.
type Phase string

// The phases an Observation reports, for a cluster and for each nodegroup.
const (
	// PhasePending: the back end has not taken up the latest change yet (its
	// cache or its controllers have not seen it). Nothing can be judged from
	// it: it never completes and never fails an operation.
	PhasePending Phase = "pending"
	// PhaseInProgress: the back end is working towards the latest change.
	PhaseInProgress Phase = "in_progress"
	// PhaseReady: the back end holds the latest change, converged and usable
	// (for a cluster: its API answers and its nodes are Ready).
	PhaseReady Phase = "ready"
	// PhaseFailed: the back end gave up on the latest change; repeating the
	// same request will not help.
	PhaseFailed Phase = "failed"
	// PhaseGone: the back end holds nothing for it (deleted, or never
	// created).
	PhaseGone Phase = "gone"
)

// Observation is what a driver's back end shows for one cluster. Zero
// values mean "not reported": the conductor leaves the stored value as it is.
type Observation struct {
	// Phase of the cluster as a whole (control plane and the cluster's own
	// resources). "" is PhasePending.
	Phase Phase
	// Reason is one readable line (multi-line back end messages condensed),
	// stored as status_reason while the cluster's operation runs and when it
	// ends. "" clears it.
	Reason string

	// Request is what the back end has been asked for (its desired state),
	// so that the conductor can tell whether an operation it claimed ever
	// reached the back end (a conductor killed between its claim and the
	// driver call). Nil: not reported.
	Request *BackendRequest

	APIAddress       string
	COEVersion       string
	ContainerVersion string

	// Health is the cluster's health as this same observation shows it,
	// for drivers whose health is read from the same source as their
	// phases (the Cluster API driver's informer cache): the status sync
	// stores it with the status, so the two never disagree (a cluster that
	// just reached *_COMPLETE is not UNHEALTHY from a poll a minute old).
	// Nil, or an empty Status: not reported (the health poll reports it).
	Health *Health

	// AppliedTemplateID and AppliedKubeTag are the cluster template and
	// kube_tag the back end's current configuration was built from, when
	// the driver records them. After a failed upgrade the conductor rolls
	// the cluster row back to them.
	AppliedTemplateID string
	AppliedKubeTag    string

	// Started is when the back end began the current operation (zero:
	// unknown). The conductor's per-operation timeouts count from it (a
	// create's from the cluster's created_at when it is zero; an update
	// has a deadline only when it is reported, and only once Request, when
	// reported, shows the update). For an update (UPDATE_IN_PROGRESS,
	// nodegroup operations included) it is when the back end took up the
	// operation now in progress: a repeat of the same request keeps it, a
	// new operation (a new claim, a retry after UPDATE_FAILED) moves it.
	Started time.Time

	// NodeGroups by nodegroup uuid. A nodegroup absent from the map is not
	// reported and left as it is; a nodegroup in progress therefore stays in
	// progress, and holds its cluster's operation, until it is reported.
	NodeGroups map[string]NodeGroupObservation
}

// BackendRequest is the desired state the back end holds for a cluster.
type BackendRequest struct {
	// Exists is false when the back end does not know the cluster at all.
	Exists bool
	// Deleting is true once deletion has been requested.
	Deleting bool
	// TemplateID is the cluster template the desired state was built from.
	TemplateID string
	// NodeGroups are, per nodegroup uuid, the size and version the back end
	// converges to.
	NodeGroups map[string]NodeGroupRequestState
	// Behind, when true, says that the back end holds a desired state older
	// than the one the request's rows describe, without saying which: a back
	// end that records a fingerprint of the last request it accepted rather
	// than the request itself (the simulated driver). Every change in
	// progress then counts as not reached; TemplateID and NodeGroups are not
	// compared. Report the values instead where the back end holds them.
	Behind bool
}

// NodeGroupRequestState is what the back end has been asked for one
// nodegroup.
type NodeGroupRequestState struct {
	NodeCount *int   // nil when the back end (an autoscaler) decides
	Version   string // the kube_tag the nodegroup converges to
	// MinNodeCount and MaxNodeCount are the autoscaler's bounds the back
	// end was asked for (0: unset), what a nodegroup update changes; nil:
	// not reported, and then an interrupted nodegroup update cannot be told
	// from one the back end has.
	MinNodeCount, MaxNodeCount *int64
}

// NodeGroupObservation is what the back end shows for one nodegroup.
type NodeGroupObservation struct {
	// Phase of the nodegroup. "" is PhasePending.
	Phase  Phase
	Reason string
	// NodeAddresses are the nodes' addresses; nil: not reported, empty:
	// none.
	NodeAddresses []string
	// NodeCount is the size the back end runs, reported when the back end
	// decides it (autoscaled nodegroups): the conductor stores it as
	// node_count, while an operation runs and, for a SettledObserver, at
	// every sync after it (unless the nodegroup is in progress or being
	// deleted). Nil: not reported.
	NodeCount *int
	// Version is the kube_tag the nodegroup runs; stored once the nodegroup
	// has settled.
	Version string
}

// ClusterRequest is what every operation receives. Its objects are copies:
// a driver may read and modify them; nothing it changes reaches the
// database.
type ClusterRequest struct {
	Cluster  *objects.Cluster
	Template *objects.ClusterTemplate
	// NodeGroups are every nodegroup of the cluster, with the operation's
	// change applied (a resized nodegroup has its new node_count, a created
	// one is included, a deleted one is in DELETE_IN_PROGRESS). Monitor's
	// request carries none.
	NodeGroups []*objects.NodeGroup
}

// NodeGroupByUUID returns the nodegroup uuid of the request, or nil.
func (r ClusterRequest) NodeGroupByUUID(uuid string) *objects.NodeGroup {
	for _, ng := range r.NodeGroups {
		if ng.UUID == uuid {
			return ng
		}
	}
	return nil
}

// CreateClusterRequest is CreateCluster's request.
type CreateClusterRequest struct {
	ClusterRequest
	// Timeout is the cluster's create_timeout (0: the driver's default). The
	// conductor fails a create still in progress after it.
	Timeout time.Duration
}

// ResizeRequest is ResizeCluster's request: NodeGroup goes to NodeCount
// nodes (NodeGroup.NodeCount already holds it), removing the nodes named in
// NodesToRemove (server uuids, machine or node names) when it shrinks. The
// driver picks the nodes to remove when NodesToRemove is empty.
type ResizeRequest struct {
	ClusterRequest
	NodeGroup     *objects.NodeGroup
	NodeCount     int
	NodesToRemove []string
}

// UpgradeRequest is UpgradeCluster's request. ClusterRequest holds the
// cluster, its template and its nodegroups as they are (in
// UPDATE_IN_PROGRESS); NewTemplate is the template to upgrade to and
// NodeGroup the nodegroup the upgrade was asked for. The conductor records
// the upgrade in the database with its claim, before the call (so that the
// status sync judges the upgrade only once the back end shows it): when
// NodeGroup is a default nodegroup (or nil) the cluster moves to
// NewTemplate (its cluster_template_id and kube_tag label) and every
// nodegroup gets the new kube_tag as version and the template's image;
// otherwise only NodeGroup does. Observe therefore sees the rows upgraded
// (Observation.Request tells whether the back end holds it). A driver that
// cannot upgrade as asked answers NotSupported before it changes anything:
// the conductor then puts the rows back as they were, statuses included.
type UpgradeRequest struct {
	ClusterRequest
	NewTemplate  *objects.ClusterTemplate
	NodeGroup    *objects.NodeGroup
	MaxBatchSize int
}

// NodeGroupRequest is the request of the nodegroup operations: NodeGroup is
// the one created (as inserted, in CREATE_IN_PROGRESS), updated (with its
// new fields) or deleted (in DELETE_IN_PROGRESS).
type NodeGroupRequest struct {
	ClusterRequest
	NodeGroup *objects.NodeGroup
}

// ObserveRequest is Observe's request.
type ObserveRequest struct {
	ClusterRequest
	// Fresh asks the driver to confirm against the back end itself, not a
	// cache: the conductor sets it before it acts on a deadline. A back end
	// that does not answer is an error wrapping ErrNotReady, never an
	// observation.
	Fresh bool
}

// Result is what an operation changed. Its fields are the only ones a
// driver sets.
type Result struct {
	// StackID, when not empty, is stored as the cluster's stack_id (for a
	// nodegroup operation, the nodegroup's). A cluster's stack_id marks it
	// as handed to its driver: the status sync polls only such clusters.
	StackID string
	// Observation, when not nil, is what the back end showed at the end of
	// the call: the conductor runs its status machine on it at once (a back
	// end that finishes inside the call).
	Observation *Observation
}

// Driver is the required part of a cluster driver. Embed Unimplemented to
// keep compiling when methods are added (see the compatibility policy in the
// package documentation).
type Driver interface {
	// Name is the entry-point name the driver is registered under (the
	// value of a cluster template's `driver` field).
	Name() string
	// Provides lists the (server_type, os, coe) keys the driver serves.
	Provides() []Key

	CreateCluster(ctx context.Context, req CreateClusterRequest) (Result, error)
	UpdateCluster(ctx context.Context, req ClusterRequest) (Result, error)
	ResizeCluster(ctx context.Context, req ResizeRequest) (Result, error)
	UpgradeCluster(ctx context.Context, req UpgradeRequest) (Result, error)
	DeleteCluster(ctx context.Context, req ClusterRequest) (Result, error)
	CreateNodeGroup(ctx context.Context, req NodeGroupRequest) (Result, error)
	UpdateNodeGroup(ctx context.Context, req NodeGroupRequest) (Result, error)
	DeleteNodeGroup(ctx context.Context, req NodeGroupRequest) (Result, error)

	// Observe reports what the back end shows for the request's cluster and
	// nodegroups. It changes nothing.
	Observe(ctx context.Context, req ObserveRequest) (Observation, error)
}

// Runner is implemented by drivers with background work (informers,
// probes). The conductor starts Run for every registered driver that
// implements it and serves without waiting for it to return; it waits a
// little for Ready before it serves, so that a back end that answers at
// once is ready for the first request.
type Runner interface {
	// Run does the driver's background work until ctx ends. It returns
	// ctx's error, or an error that stops the driver for good (logged).
	Run(ctx context.Context) error
	// Ready returns nil once the driver can serve, else why not (wrapping
	// ErrNotReady).
	Ready() error
}

// Aliased is implemented by drivers that also serve the templates of other
// drivers by name: a template whose driver field names an alias selects
// this driver (the Cluster API driver answers for magnum-cluster-api's and
// magnum-capi-helm's entry points, whose clusters it refuses to touch until
// they are adopted: Admitter, ErrNotManaged).
type Aliased interface {
	Aliases() []string
}

// Admitter is implemented by drivers that can refuse an operation on a
// cluster before the conductor changes anything. The conductor calls Admit
// with the rows as stored, before it claims them for any cluster or
// nodegroup operation (update, resize, upgrade, delete, nodegroup create,
// update and delete, credential and CA rotation); an error is returned to
// the caller as it is (a typed exception, NotSupported for a cluster the
// driver does not manage) and nothing is written or notified. Admit must be
// cheap (no back-end request).
type Admitter interface {
	Admit(ctx context.Context, req ClusterRequest) error
}

// PreDeleter is implemented by drivers that clean up before deletion
// (Driver.pre_delete_cluster). The conductor calls it before DeleteCluster,
// which Magnum forgets to do.
type PreDeleter interface {
	PreDeleteCluster(ctx context.Context, req ClusterRequest) error
}

// CARotator is implemented by drivers that can roll out new cluster CAs.
// The request's cluster holds the new certificate references. Drivers
// without it answer NotSupported("'rotate_ca_certificate' is not supported
// by this driver."). The roll-out is an update the status sync completes.
type CARotator interface {
	RotateCACertificate(ctx context.Context, req ClusterRequest) (Result, error)
}

// CredentialRotator is implemented by drivers that can rotate the cloud
// credential a cluster uses. Without it the conductor answers
// NotSupported("Credential rotation is not supported by driver."). No
// status changes.
type CredentialRotator interface {
	RotateCredential(ctx context.Context, req ClusterRequest) error
}

// SettledObserver is implemented by drivers whose back end changes
// clusters on its own after their operations ended (an autoscaler resizing
// nodegroups), and whose Observe is cheap enough (answered from a cache) to
// be called for every settled cluster at every sync. When ObservesSettled
// is true, the status sync observes the driver's settled clusters too and
// stores what they report with statusmachine.Refresh: node_count of the
// nodegroups the back end sizes itself, node addresses, versions,
// api_address; never a status.
type SettledObserver interface {
	ObservesSettled() bool
}

// MasterResizeValidator is implemented by drivers that can resize masters.
// Without it every master resize is refused (MasterNGResizeNotSupported).
type MasterResizeValidator interface {
	ValidateMasterResize(nodeCount int) error
}

// MonitorProvider is implemented by drivers that supply a health monitor
// (get_monitor). Drivers without it are polled with the Kubernetes monitor
// of the periodic package.
type MonitorProvider interface {
	// Monitor returns the monitor for the request's cluster (the request
	// carries the cluster and its template, no nodegroups), or nil for "no
	// monitor".
	Monitor(ctx context.Context, req ClusterRequest) (Monitor, error)
}

// Health is the result of one health poll.
type Health struct {
	// Status is HEALTHY, UNHEALTHY or UNKNOWN; "" means "leave unchanged"
	// (the auto-healer skip).
	Status string
	// Reason is stored as health_status_reason.
	Reason map[string]string
}

// Monitor polls the health of one cluster (MonitorBase.poll_health_status).
// It must honour ctx's deadline.
type Monitor interface {
	PollHealth(ctx context.Context) (Health, error)
}
