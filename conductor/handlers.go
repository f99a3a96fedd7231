// Package conductor holds the RPC handlers of magnum-conductor (the Go twin
// of magnum/conductor/handlers) and the CADF notifications they emit.
//
// Handlers are plain typed methods on Handlers. Whether a request arrived as
// a cast or a call is the RPC layer's business: the same method serves both
// (cluster_create and cluster_create_async, ...).
//
// Differences from the Python reference that do not change the wire:
//   - every transition into *_IN_PROGRESS is a conditional update of the row
//     (db SaveClusterIfStatus / SaveNodeGroupIfStatus on the status guard),
//     so two operations on one cluster or nodegroup cannot interleave, also
//     across conductors; the loser gets NotSupported naming the current
//     status, exactly as a guard refusal;
//   - failures in cluster_create before the driver call end in
//     CREATE_FAILED with a reason and a failure notification;
//   - nodegroup errors print the nodegroup's status;
//   - the driver's PreDeleteCluster runs before DeleteCluster;
//   - CA rotation (certmanager RotateForCluster/DeleteRefs) deletes the old
//     certificates once the driver accepted the new ones, and the new ones
//     when it did not, keeping the old references;
//   - a driver that panics or does not return before the deadline fails the
//     operation like any driver error.
package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
)

// Store is the part of db.Store the handlers use.
type Store interface {
	NodeGroupLister

	CreateCluster(ctx context.Context, c *objects.Cluster) error
	GetClusterByUUID(ctx context.Context, uuid string) (*objects.Cluster, error)
	SaveCluster(ctx context.Context, c *objects.Cluster) error
	SaveClusterIfStatus(ctx context.Context, c *objects.Cluster, allowed []string) error

	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*objects.ClusterTemplate, error)

	CreateNodeGroup(ctx context.Context, ng *objects.NodeGroup) error
	GetNodeGroupByUUID(ctx context.Context, clusterUUID, uuid string) (*objects.NodeGroup, error)
	SaveNodeGroup(ctx context.Context, ng *objects.NodeGroup) error
	SaveNodeGroupIfStatus(ctx context.Context, ng *objects.NodeGroup, allowed []string) error
}

// NodeGroupLister lists the nodegroups of a cluster (db.Store).
type NodeGroupLister interface {
	ListNodeGroups(ctx context.Context, clusterUUID string, opts db.ListOpts, f db.NodeGroupFilters) ([]*objects.NodeGroup, error)
}

// CertManager is the part of certmanager.Manager the handlers use.
type CertManager interface {
	GenerateForCluster(ctx context.Context, c *objects.Cluster) error
	SignCSR(ctx context.Context, c *objects.Cluster, csrPEM, caCertType string) (string, error)
	GetCACertificate(ctx context.Context, c *objects.Cluster, caCertType string) (string, error)
	// RotateForCluster stores a new set of certificates, sets the new
	// references on c and returns the old ones (invalidating the client-file
	// cache); DeleteRefs deletes stored certificates by reference.
	RotateForCluster(ctx context.Context, c *objects.Cluster) (old []string, err error)
	DeleteRefs(ctx context.Context, clusterUUID string, refs []string)
}

// Notifier publishes one notification (oslo.Notifier).
type Notifier interface {
	Notify(ctx context.Context, priority, eventType string, payload any) error
}

// DriverRegistry selects the driver of a cluster template
// (drivers.Registry).
type DriverRegistry interface {
	ForTemplate(ct *objects.ClusterTemplate) (drivers.Driver, error)
}

// Deps are the collaborators of Handlers.
type Deps struct {
	Store   Store
	Certs   CertManager
	Drivers DriverRegistry
	// Notifications emits the CADF events; build it with NewNotifications.
	Notifications *Notifications
	Log           *slog.Logger
	// DriverTimeout bounds every driver call (0: only the request's own
	// deadline). A driver that does not return in time fails the operation;
	// its goroutine is abandoned and the objects it holds are not reused.
	DriverTimeout time.Duration
	// CleanupTimeout bounds the database writes that record a failure,
	// which run even when the request's context is done (default 30 s).
	CleanupTimeout time.Duration
}

// Handlers serves the conductor's RPC methods.
type Handlers struct {
	store          Store
	certs          CertManager
	drivers        DriverRegistry
	notify         *Notifications
	log            *slog.Logger
	driverTimeout  time.Duration
	cleanupTimeout time.Duration
}

// New returns the handlers. Store, Certs, Drivers, Notifications and Log are
// required.
func New(d Deps) (*Handlers, error) {
	switch {
	case d.Store == nil:
		return nil, errors.New("conductor: Store is required")
	case d.Certs == nil:
		return nil, errors.New("conductor: Certs is required")
	case d.Drivers == nil:
		return nil, errors.New("conductor: Drivers is required")
	case d.Notifications == nil:
		return nil, errors.New("conductor: Notifications is required")
	case d.Log == nil:
		return nil, errors.New("conductor: Log is required")
	}
	h := &Handlers{
		store: d.Store, certs: d.Certs, drivers: d.Drivers, notify: d.Notifications,
		log: d.Log, driverTimeout: d.DriverTimeout, cleanupTimeout: d.CleanupTimeout,
	}
	if h.cleanupTimeout <= 0 {
		h.cleanupTimeout = 30 * time.Second
	}
	return h, nil
}

// Status guards (magnum/conductor/handlers/*.py). Functions, so that no
// caller can change a shared list.

// allowUpdateStatus guards cluster_update, cluster_upgrade and
// rotate_ca_certificate.
func allowUpdateStatus() []string {
	return []string{
		objects.CreateComplete, objects.UpdateComplete, objects.ResumeComplete, objects.RestoreComplete,
		objects.RollbackComplete, objects.SnapshotComplete, objects.CheckComplete, objects.AdoptComplete,
	}
}

// allowResizeStatus guards cluster_resize: the autoscaler retries and stacks
// requests.
func allowResizeStatus() []string {
	return append(allowUpdateStatus(), objects.UpdateFailed, objects.UpdateInProgress)
}

// allowResizedNodeGroupStatus guards the nodegroup of cluster_resize and
// cluster_upgrade. Magnum checks only the cluster; ours also refuses a
// nodegroup being created, deleted or rolled back, which the operation
// would overwrite. A failed nodegroup may be resized or upgraded: that is
// how one is mended.
func allowResizedNodeGroupStatus() []string {
	return without(objects.ClusterStatuses,
		objects.CreateInProgress, objects.DeleteInProgress, objects.DeleteComplete, objects.RollbackInProgress)
}

// allowedNodeGroupStates guards nodegroup_create/update and, as
// ALLOWED_CLUSTER_STATES, credential_rotate.
func allowedNodeGroupStates() []string {
	return []string{
		objects.CreateComplete, objects.UpdateComplete, objects.UpdateInProgress, objects.UpdateFailed,
		objects.ResumeComplete, objects.RestoreComplete, objects.RollbackComplete, objects.SnapshotComplete,
		objects.CheckComplete, objects.AdoptComplete,
	}
}

// allowDeleteStatus: Magnum has no guard on cluster_delete. Anything but a
// deletion already under way may start one (DELETE_FAILED retries).
func allowDeleteStatus() []string {
	return without(objects.ClusterStatuses, objects.DeleteInProgress, objects.DeleteComplete)
}

// allowNodeGroupOpClusterStatus: a nodegroup operation moves its cluster to
// UPDATE_IN_PROGRESS; it must not overwrite a create or a delete under way.
func allowNodeGroupOpClusterStatus() []string {
	return without(objects.ClusterStatuses,
		objects.CreateInProgress, objects.DeleteInProgress, objects.DeleteComplete, objects.RollbackInProgress)
}

// allowNodeGroupDeleteStatus: nodegroup_delete has no guard in Magnum; only
// a deletion under way is refused.
func allowNodeGroupDeleteStatus() []string {
	return without(objects.ClusterStatuses, objects.DeleteInProgress, objects.DeleteComplete)
}

func without(all []string, drop ...string) []string {
	var out []string
	for _, s := range all {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

// logger returns the logger for one request about one cluster.
func (h *Handlers) logger(ctx context.Context, method string, clusterUUID string) *slog.Logger {
	args := append([]any{"method", method}, request.From(ctx).LogAttrs()...)
	if clusterUUID != "" {
		args = append(args, "cluster_uuid", clusterUUID)
	}
	return h.log.With(args...)
}

// cleanupCtx returns a context for recording a failure: it keeps ctx's
// values (request context) but not its cancellation.
func (h *Handlers) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), h.cleanupTimeout)
}

// errAbandoned marks a driver call that did not return before the deadline.
// The objects handed to the driver may still be modified by it and must not
// be reused.
type errAbandoned struct {
	op  string
	err error
}

func (e *errAbandoned) Error() string {
	return fmt.Sprintf("driver %s did not return in time: %v", e.op, e.err)
}

func (e *errAbandoned) Unwrap() error { return e.err }

func abandoned(err error) bool {
	var a *errAbandoned
	return errors.As(err, &a)
}

// callDriver runs one driver method, turning a panic into an error and
// giving up when ctx (bounded by DriverTimeout) is done.
func (h *Handlers) callDriver(ctx context.Context, log *slog.Logger, op string, fn func(context.Context) error) error {
	if h.driverTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.driverTimeout)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("driver panicked", "driver_method", op, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				done <- fmt.Errorf("driver %s failed: %v", op, r)
			}
		}()
		done <- fn(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		log.Error("driver call abandoned", "driver_method", op, "error", ctx.Err())
		return &errAbandoned{op: op, err: ctx.Err()}
	}
}

// driverFor returns the driver of the cluster's template.
func (h *Handlers) driverFor(ctx context.Context, c *objects.Cluster) (drivers.Driver, *objects.ClusterTemplate, error) {
	if c.ClusterTemplateID == nil || *c.ClusterTemplateID == "" {
		return nil, nil, exception.InvalidParameterValue("cluster has no cluster_template_id")
	}
	ct, err := h.store.GetClusterTemplateByUUID(ctx, *c.ClusterTemplateID)
	if err != nil {
		return nil, nil, err
	}
	d, err := h.drivers.ForTemplate(ct)
	if err != nil {
		return nil, ct, err
	}
	return d, ct, nil
}

// driverAndScaleManager loads c's driver and asks it for its scale manager,
// logging what fails, as the update and resize handlers start.
func (h *Handlers) driverAndScaleManager(ctx context.Context, log *slog.Logger, c *objects.Cluster) (drivers.Driver, drivers.ScaleManager, error) {
	d, _, err := h.driverFor(ctx, c)
	if err != nil {
		log.Error("cannot load the cluster's driver", "error", err)
		return nil, nil, err
	}
	sm, err := scaleManager(ctx, d, c)
	if err != nil {
		log.Error("cannot get the scale manager", "error", err)
		return nil, nil, err
	}
	return d, sm, nil
}

// scaleManager asks the driver for a scale manager
// (scale_manager.get_scale_manager); nil when the driver has none.
func scaleManager(ctx context.Context, d drivers.Driver, c *objects.Cluster) (drivers.ScaleManager, error) {
	if p, ok := d.(drivers.ScaleManagerProvider); ok {
		return p.ScaleManager(ctx, c)
	}
	return nil, nil
}

// claimCluster moves c to status with a conditional update on allowed. On a
// lost race it reloads the row and returns NotSupported built by refuse
// from the current status.
func (h *Handlers) claimCluster(ctx context.Context, c *objects.Cluster, status string, allowed []string,
	refuse func(current string) error) error {
	c.Status = status
	c.StatusReason = nil
	err := h.store.SaveClusterIfStatus(ctx, c, allowed)
	if err == nil {
		return nil
	}
	if !errors.Is(err, db.ErrStatusChanged) {
		return err
	}
	cur, gerr := h.store.GetClusterByUUID(ctx, objects.Deref(c.UUID))
	if gerr != nil {
		// Deleted meanwhile (ClusterNotFound), or the database failed:
		// that is the caller's answer, not a refusal by status.
		return gerr
	}
	*c = *cur
	return refuse(cur.Status)
}

// claimNodeGroup is claimCluster for a nodegroup.
func (h *Handlers) claimNodeGroup(ctx context.Context, ng *objects.NodeGroup, status string, allowed []string,
	refuse func(current string) error) error {
	ng.Status = status
	err := h.store.SaveNodeGroupIfStatus(ctx, ng, allowed)
	if err == nil {
		return nil
	}
	if !errors.Is(err, db.ErrStatusChanged) {
		return err
	}
	cur, gerr := h.store.GetNodeGroupByUUID(ctx, ng.ClusterID, ng.UUID)
	if gerr != nil {
		return gerr
	}
	return refuse(cur.Status)
}

// finishCluster saves c only while its row is still in the status the
// operation set (expect): an operation that started since (a delete) wins.
func (h *Handlers) finishCluster(ctx context.Context, log *slog.Logger, c *objects.Cluster, expect string) {
	err := h.store.SaveClusterIfStatus(ctx, c, []string{expect})
	switch {
	case err == nil:
	case errors.Is(err, db.ErrStatusChanged):
		log.Warn("cluster changed by another operation; result not recorded", "status", c.Status)
	default:
		log.Error("cannot save cluster", "status", c.Status, "error", err)
	}
}

// finishNodeGroup is finishCluster for a nodegroup.
func (h *Handlers) finishNodeGroup(ctx context.Context, log *slog.Logger, ng *objects.NodeGroup, expect string) {
	err := h.store.SaveNodeGroupIfStatus(ctx, ng, []string{expect})
	switch {
	case err == nil:
	case errors.Is(err, db.ErrStatusChanged):
		log.Warn("nodegroup changed by another operation; result not recorded", "nodegroup_uuid", ng.UUID, "status", ng.Status)
	default:
		log.Error("cannot save nodegroup", "nodegroup_uuid", ng.UUID, "status", ng.Status, "error", err)
	}
}

// freshCluster returns the object to record a failure on: c itself, or a
// copy reloaded from the database when a driver may still hold c.
func (h *Handlers) freshCluster(ctx context.Context, log *slog.Logger, c *objects.Cluster, uuid string, err error) *objects.Cluster {
	if !abandoned(err) {
		return c
	}
	cur, gerr := h.store.GetClusterByUUID(ctx, uuid)
	if gerr != nil {
		log.Error("cannot reload cluster after abandoned driver call", "error", gerr)
		return &objects.Cluster{UUID: objects.Str(uuid)}
	}
	return cur
}

// freshNodeGroup is freshCluster for a nodegroup.
func (h *Handlers) freshNodeGroup(ctx context.Context, log *slog.Logger, ng *objects.NodeGroup, clusterUUID, uuid string, err error) *objects.NodeGroup {
	if !abandoned(err) {
		return ng
	}
	cur, gerr := h.store.GetNodeGroupByUUID(ctx, clusterUUID, uuid)
	if gerr != nil {
		log.Error("cannot reload nodegroup after abandoned driver call", "nodegroup_uuid", uuid, "error", gerr)
		return &objects.NodeGroup{UUID: uuid, ClusterID: clusterUUID}
	}
	return cur
}

// requireCluster rejects a cluster argument without the fields every
// handler needs.
func requireCluster(c *objects.Cluster) error {
	if c == nil {
		return exception.InvalidParameterValue("cluster is required")
	}
	if c.UUID == nil || *c.UUID == "" {
		return exception.InvalidParameterValue("cluster has no uuid")
	}
	return nil
}

func requireNodeGroup(ng *objects.NodeGroup) error {
	if ng == nil {
		return exception.InvalidParameterValue("nodegroup is required")
	}
	if ng.UUID == "" {
		return exception.InvalidParameterValue("nodegroup has no uuid")
	}
	return nil
}

// snapshot returns a shallow copy of c showing the status before an
// operation claimed it, for the notifications Magnum sends with the old
// status.
func snapshot(c *objects.Cluster, status string, reason *string) *objects.Cluster {
	s := *c
	s.Status = status
	s.StatusReason = reason
	return &s
}
