// Package drivers defines the cluster driver interface (the Go twin of
// magnum/drivers/common/driver.py), the registry that selects a driver for a
// cluster template, and the monitor interface used by health polling.
//
// Implementations live in sub-packages (drivers/capi, drivers/simulated) and
// are registered explicitly in main.
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

// Key is what a driver provides: (server_type, os, coe), as in
// Driver.provides.
type Key struct {
	ServerType string // "vm" or "bm"
	OS         string // the template's cluster_distro
	COE        string // "kubernetes"
}

// ScaleManager picks the nodes to remove when a cluster shrinks
// (magnum.conductor.scale_manager). Drivers that let the backend choose
// return nil from ScaleManagerProvider.
type ScaleManager interface {
	// NodesToRemove returns the names or ids of the nodes to delete to reach
	// nodeCount in the nodegroup.
	NodesToRemove(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup, nodeCount int) ([]string, error)
}

// Driver is the required part of a cluster driver. Every method receives the
// request context in ctx (request.From(ctx)); the cluster and nodegroup
// objects are modified in place and saved by the caller.
//
// Methods return errors from api/exception where Magnum raises a Magnum
// exception (NotSupported, InvalidParameterValue, ...); any other error
// becomes MagnumException at the RPC edge.
type Driver interface {
	// Name is the entry-point name the driver is registered under (the
	// value of a cluster template's `driver` field).
	Name() string
	// Provides lists the (server_type, os, coe) keys the driver serves.
	Provides() []Key

	CreateCluster(ctx context.Context, cluster *objects.Cluster, createTimeout int) error
	UpdateCluster(ctx context.Context, cluster *objects.Cluster, sm ScaleManager, rollback bool) error
	DeleteCluster(ctx context.Context, cluster *objects.Cluster) error
	ResizeCluster(ctx context.Context, cluster *objects.Cluster, sm ScaleManager, nodeCount int, nodesToRemove []string, ng *objects.NodeGroup) error
	UpgradeCluster(ctx context.Context, cluster *objects.Cluster, template *objects.ClusterTemplate, maxBatchSize int, ng *objects.NodeGroup, sm ScaleManager, rollback bool) error

	CreateNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error
	UpdateNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error
	DeleteNodeGroup(ctx context.Context, cluster *objects.Cluster, ng *objects.NodeGroup) error

	// UpdateClusterStatus reads the backend and updates cluster.Status,
	// StatusReason, addresses, coe_version and the nodegroups it is given
	// (in place). The caller saves what changed.
	UpdateClusterStatus(ctx context.Context, cluster *objects.Cluster, nodegroups []*objects.NodeGroup) error
}

// PreDeleter is implemented by drivers that clean up before deletion
// (Driver.pre_delete_cluster). The conductor calls it before DeleteCluster,
// which Magnum forgets to do.
type PreDeleter interface {
	PreDeleteCluster(ctx context.Context, cluster *objects.Cluster) error
}

// CARotator is implemented by drivers that can roll out new cluster CAs.
// Drivers without it answer NotSupported("'rotate_ca_certificate' is not
// supported by this driver.").
type CARotator interface {
	RotateCACertificate(ctx context.Context, cluster *objects.Cluster) error
}

// CredentialRotator is implemented by drivers that can rotate the cloud
// credential a cluster uses. Without it the conductor answers
// NotSupported("Credential rotation is not supported by driver.").
type CredentialRotator interface {
	RotateCredential(ctx context.Context, cluster *objects.Cluster) error
}

// MasterResizeValidator is implemented by drivers that can resize masters.
// Without it every master resize is refused (MasterNGResizeNotSupported).
type MasterResizeValidator interface {
	ValidateMasterResize(nodeCount int) error
}

// ScaleManagerProvider is implemented by drivers that choose nodes to
// remove themselves (get_scale_manager).
type ScaleManagerProvider interface {
	ScaleManager(ctx context.Context, cluster *objects.Cluster) (ScaleManager, error)
}

// MonitorProvider is implemented by drivers that supply a health monitor
// (get_monitor). Drivers without it are polled with the Kubernetes monitor
// of the periodic package.
type MonitorProvider interface {
	// Monitor returns the monitor for cluster, or nil for "no monitor".
	Monitor(ctx context.Context, cluster *objects.Cluster) (Monitor, error)
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

	// AppliedTemplateID and AppliedKubeTag are the cluster template and
	// kube_tag the back end's current configuration was built from, when
	// the driver records them. After a failed upgrade the conductor rolls
	// the cluster row back to them.
	AppliedTemplateID string
	AppliedKubeTag    string

	// Started is when the back end began the current operation (zero:
	// unknown). The conductor's per-operation timeouts count from it (a
	// create's from the cluster's created_at when it is zero).
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
}

// NodeGroupRequestState is what the back end has been asked for one
// nodegroup.
type NodeGroupRequestState struct {
	NodeCount *int   // nil when the back end (an autoscaler) decides
	Version   string // the kube_tag the nodegroup converges to
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
	// node_count at every sync, not only while an operation runs. Nil: not
	// reported.
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
// NodeGroup the nodegroup the upgrade was asked for. Once the driver
// accepted the upgrade, the conductor records it: when NodeGroup is a
// default nodegroup (or nil) the cluster moves to NewTemplate (its
// cluster_template_id and kube_tag label) and every nodegroup gets the new
// kube_tag as version and the template's image; otherwise only NodeGroup
// does. A driver that cannot upgrade as asked answers NotSupported before it
// changes anything: the conductor then leaves every status as it was.
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
