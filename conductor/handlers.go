// Package conductor holds the RPC handlers of magnum-conductor (the Go twin
// of magnum/conductor/handlers) and the CADF notifications they emit.
//
// Handlers are plain typed methods on Handlers. Whether a request arrived as
// a cast or a call is the RPC layer's business: the same method serves both
// (cluster_create and cluster_create_async, ...).
//
// Drivers observe, the handlers decide and persist (package drivers). An
// operation claims its cluster (and nodegroups) in the database, calls the
// driver with copies of the rows (request structs), and stores only what the
// driver returns in drivers.Result: a stack_id, and an observation judged at
// once by the status machine when the back end finished inside the call.
// Everything else about the operation's end is the status sync's.
//
// Differences from the Python reference that do not change the wire:
//   - every transition into *_IN_PROGRESS is a conditional update of the
//     cluster row and, in the same transaction, of the nodegroups the
//     operation changes (db InTx, the cluster row first), so two operations
//     on one cluster or nodegroup cannot interleave, also across conductors,
//     and the status sync either records its decision before a claim or
//     drops it; the loser gets NotSupported naming the current status,
//     exactly as a guard refusal;
//   - every later write of an operation is conditional on what the
//     operation claimed, and one that fails because the database is away is
//     retried in the background until it lands or the conductor stops;
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
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/conductor/clusterstate"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// Store is the part of db.Store the handlers use.
type Store interface {
	NodeGroupLister
	clusterstate.Store

	CreateCluster(ctx context.Context, c *objects.Cluster) error
	GetClusterByUUID(ctx context.Context, uuid string) (*objects.Cluster, error)
	SaveCluster(ctx context.Context, c *objects.Cluster) error
	SaveClusterIfStatus(ctx context.Context, c *objects.Cluster, allowed []string) error

	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*objects.ClusterTemplate, error)

	CreateNodeGroup(ctx context.Context, ng *objects.NodeGroup) error
	GetNodeGroupByUUID(ctx context.Context, clusterUUID, uuid string) (*objects.NodeGroup, error)
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
	// its goroutine is abandoned.
	DriverTimeout time.Duration
	// CleanupTimeout bounds each attempt of the database writes that record
	// an operation's outcome, which run even when the request's context is
	// done (default 30 s).
	CleanupTimeout time.Duration
	// Timeouts are the status machine's, for observations drivers return
	// with their results (the status sync's).
	Timeouts statusmachine.Timeouts
	// Lifetime is the process's context: writes that failed because the
	// database was away are retried in the background until they land or it
	// ends (default: never ends).
	Lifetime context.Context
	// RetryBackoff is the first pause of those retries, doubling up to 30
	// times it (default 1 s).
	RetryBackoff time.Duration
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
	timeouts       statusmachine.Timeouts
	applier        *clusterstate.Applier
	lifetime       context.Context
	backoff        time.Duration
	retries        *sync.WaitGroup
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
		log: d.Log, driverTimeout: d.DriverTimeout, cleanupTimeout: d.CleanupTimeout, timeouts: d.Timeouts,
		lifetime: d.Lifetime, backoff: d.RetryBackoff, retries: &sync.WaitGroup{},
	}
	if h.cleanupTimeout <= 0 {
		h.cleanupTimeout = 30 * time.Second
	}
	if h.lifetime == nil {
		h.lifetime = context.Background()
	}
	if h.backoff <= 0 {
		h.backoff = time.Second
	}
	h.applier = &clusterstate.Applier{Store: d.Store, Notifier: d.Notifications, Log: d.Log}
	return h, nil
}

// WaitRetries waits for the writes being retried in the background (see
// Deps.Lifetime) to land or give up.
func (h *Handlers) WaitRetries() { h.retries.Wait() }

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
// giving up when ctx (bounded by DriverTimeout) is done. The driver works on
// copies, so an abandoned call cannot change the handler's objects.
func (h *Handlers) callDriver(ctx context.Context, log *slog.Logger, op string, fn func(context.Context) (drivers.Result, error)) (drivers.Result, error) {
	if h.driverTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.driverTimeout)
		defer cancel()
	}
	type answer struct {
		res drivers.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("driver panicked", "driver_method", op, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				done <- answer{err: fmt.Errorf("driver %s failed: %v", op, r)}
			}
		}()
		res, err := fn(ctx)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		log.Error("driver call abandoned", "driver_method", op, "error", ctx.Err())
		return drivers.Result{}, &errAbandoned{op: op, err: ctx.Err()}
	}
}

// callDriverNoResult is callDriver for the methods that return no Result.
func (h *Handlers) callDriverNoResult(ctx context.Context, log *slog.Logger, op string, fn func(context.Context) error) error {
	_, err := h.callDriver(ctx, log, op, func(ctx context.Context) (drivers.Result, error) {
		return drivers.Result{}, fn(ctx)
	})
	return err
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

// opDriver is driverFor plus the cluster's nodegroups, logging what fails,
// as the operations on an existing cluster start.
func (h *Handlers) opDriver(ctx context.Context, log *slog.Logger, c *objects.Cluster) (drivers.Driver, *objects.ClusterTemplate, []*objects.NodeGroup, error) {
	d, ct, err := h.driverFor(ctx, c)
	if err != nil {
		log.Error("cannot load the cluster's driver", "error", err)
		return nil, nil, nil, err
	}
	ngs, err := h.store.ListNodeGroups(ctx, objects.Deref(c.UUID), db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		log.Error("cannot list the cluster's nodegroups", "error", err)
		return nil, nil, nil, err
	}
	if err := admit(ctx, log, d, c, ct, ngs); err != nil {
		return nil, nil, nil, err
	}
	return d, ct, ngs, nil
}

// admit asks a driver that can refuse an operation (drivers.Admitter)
// whether it acts on c at all, before anything is claimed, written or
// notified: a refusal leaves the cluster as it was.
func admit(ctx context.Context, log *slog.Logger, d drivers.Driver, c *objects.Cluster, ct *objects.ClusterTemplate, ngs []*objects.NodeGroup) error {
	a, ok := d.(drivers.Admitter)
	if !ok {
		return nil
	}
	if err := a.Admit(ctx, clusterRequest(c, ct, ngs)); err != nil {
		log.Warn("operation refused by the cluster's driver before any change", "driver", d.Name(), "error", err)
		return err
	}
	return nil
}

// clusterRequest builds a driver request from copies of c, ct and ngs, with
// the nodegroups in with replacing the stored ones of the same uuid (and
// added when new).
func clusterRequest(c *objects.Cluster, ct *objects.ClusterTemplate, ngs []*objects.NodeGroup, with ...*objects.NodeGroup) drivers.ClusterRequest {
	req := drivers.ClusterRequest{Cluster: objects.Clone(c)}
	if ct != nil {
		req.Template = objects.Clone(ct)
	}
	for _, ng := range ngs {
		if i := slices.IndexFunc(with, func(w *objects.NodeGroup) bool { return w.UUID == ng.UUID }); i >= 0 {
			ng = with[i]
		}
		req.NodeGroups = append(req.NodeGroups, objects.Clone(ng))
	}
	for _, w := range with {
		if !slices.ContainsFunc(ngs, func(ng *objects.NodeGroup) bool { return ng.UUID == w.UUID }) {
			req.NodeGroups = append(req.NodeGroups, objects.Clone(w))
		}
	}
	return req
}

// refusal is a claim lost to the current status of the cluster or of a
// nodegroup.
type refusal struct {
	nodegroup bool
	status    string
	// current is the cluster row as it is now (a cluster refusal).
	current *objects.Cluster
}

func (r *refusal) Error() string {
	what := "cluster"
	if r.nodegroup {
		what = "nodegroup"
	}
	return fmt.Sprintf("%s status is %s", what, r.status)
}

// batch collects the writes of one transaction. It saves copies, so that a
// transaction retried after a deadlock writes the same again; once the
// transaction committed, done records the saved state on the objects.
type batch struct {
	store Store
	done  []func()
}

// cluster saves c's changes under cond.
func (b *batch) cluster(ctx context.Context, c *objects.Cluster, cond db.ClusterCond) error {
	cp := objects.Clone(c)
	if err := b.store.SaveClusterIf(ctx, cp, cond); err != nil {
		return err
	}
	b.done = append(b.done, func() { *c = *cp })
	return nil
}

// nodegroup saves ng's changes under cond.
func (b *batch) nodegroup(ctx context.Context, ng *objects.NodeGroup, cond db.NodeGroupCond) error {
	cp := objects.Clone(ng)
	if err := b.store.SaveNodeGroupIf(ctx, cp, cond); err != nil {
		return err
	}
	b.done = append(b.done, func() { *ng = *cp })
	return nil
}

// createNodeGroup inserts ng.
func (b *batch) createNodeGroup(ctx context.Context, ng *objects.NodeGroup) error {
	cp := objects.Clone(ng)
	if err := b.store.CreateNodeGroup(ctx, cp); err != nil {
		return err
	}
	b.done = append(b.done, func() { *ng = *cp })
	return nil
}

// inTx runs fn's writes in one transaction and, once committed, records
// them on the objects.
func (h *Handlers) inTx(ctx context.Context, fn func(ctx context.Context, b *batch) error) error {
	var b *batch
	err := h.store.InTx(ctx, func(ctx context.Context) error {
		b = &batch{store: h.store}
		return fn(ctx, b)
	})
	if err != nil {
		return err
	}
	for _, d := range b.done {
		d()
	}
	return nil
}

// claimCluster writes c in status (its reason cleared) while its row is in
// one of allowed. A lost claim is a *refusal with the current status.
func (h *Handlers) claimCluster(ctx context.Context, b *batch, c *objects.Cluster, status string, allowed []string) error {
	return h.claimClusterNoted(ctx, b, c, status, nil, allowed)
}

// claimClusterNoted is claimCluster recording reason as the status_reason.
func (h *Handlers) claimClusterNoted(ctx context.Context, b *batch, c *objects.Cluster, status string, reason *string, allowed []string) error {
	cl := objects.Clone(c)
	cl.Status = status
	cl.StatusReason = reason
	// Written even when unchanged: the status sync guards on it.
	objects.MarkChanged(cl, "status", "status_reason")
	err := b.cluster(ctx, cl, db.ClusterCond{Status: allowed})
	if errors.Is(err, db.ErrStatusChanged) {
		cur, gerr := h.store.GetClusterByUUID(ctx, objects.Deref(c.UUID))
		if gerr != nil {
			// Deleted meanwhile (ClusterNotFound), or the database failed:
			// that is the caller's answer, not a refusal by status.
			return gerr
		}
		return &refusal{status: cur.Status, current: cur}
	}
	if err == nil {
		b.done = append(b.done, func() { *c = *cl })
	}
	return err
}

// claimNodeGroup writes ng (with status) while its row is in one of
// allowed. A lost claim is a *refusal with the current status.
func (h *Handlers) claimNodeGroup(ctx context.Context, b *batch, ng *objects.NodeGroup, status string, allowed []string) error {
	cl := objects.Clone(ng)
	cl.Status = status
	objects.MarkChanged(cl, "status")
	err := b.nodegroup(ctx, cl, db.NodeGroupCond{Status: allowed})
	if errors.Is(err, db.ErrStatusChanged) {
		cur, gerr := h.store.GetNodeGroupByUUID(ctx, ng.ClusterID, ng.UUID)
		if gerr != nil {
			return gerr
		}
		return &refusal{nodegroup: true, status: cur.Status}
	}
	if err == nil {
		b.done = append(b.done, func() { *ng = *cl })
	}
	return err
}

// asRefusal returns the refusal err holds, or nil.
func asRefusal(err error) *refusal {
	var r *refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// persist records an operation's outcome: writes runs in one transaction.
// When it fails because the database is away, it is retried in the
// background (Deps.Lifetime, Deps.RetryBackoff) until it lands, and the
// first error is returned. When the rows moved on (another operation, a
// deletion), nothing is written, it is logged and persist returns nil: the
// later operation's outcome stands.
func (h *Handlers) persist(ctx context.Context, log *slog.Logger, what string, writes func(ctx context.Context, b *batch) error) error {
	return h.persistThen(ctx, log, what, writes, nil)
}

// persistThen is persist, then runs then (when not nil) once the writes
// landed, in the background too.
func (h *Handlers) persistThen(ctx context.Context, log *slog.Logger, what string, writes func(ctx context.Context, b *batch) error,
	then func(ctx context.Context)) error {
	attempt := func(ctx context.Context, record bool) error {
		actx, cancel := context.WithTimeout(ctx, h.cleanupTimeout)
		defer cancel()
		if record {
			return h.inTx(actx, writes)
		}
		return h.store.InTx(actx, func(ctx context.Context) error { return writes(ctx, &batch{store: h.store}) })
	}
	cctx := context.WithoutCancel(ctx)
	err := attempt(cctx, true)
	if err == nil {
		if then != nil {
			then(cctx)
		}
		return nil
	}
	if !retriable(err) {
		log.Warn("the cluster changed since the operation claimed it; its outcome is not recorded",
			"outcome", what, "error", err)
		return nil
	}
	log.Error("cannot record the operation's outcome; retrying in the background", "outcome", what, "error", err)
	h.retries.Add(1)
	go func() {
		defer h.retries.Done()
		rctx, cancel := context.WithCancel(cctx)
		defer cancel()
		stop := context.AfterFunc(h.lifetime, cancel) //nolint:contextcheck // the retry outlives the call (WithoutCancel above), bounded by h.lifetime
		defer stop()
		pause := h.backoff
		for n := 2; ; n++ {
			select {
			case <-rctx.Done():
				log.Error("the conductor stops; the operation's outcome was not recorded", "outcome", what,
					"attempts", n-1)
				return
			case <-time.After(pause):
			}
			err := attempt(rctx, false)
			switch {
			case err == nil:
				log.Info("the operation's outcome is recorded", "outcome", what, "attempts", n)
				if then != nil {
					then(rctx)
				}
				return
			case !retriable(err):
				log.Warn("the cluster changed meanwhile; the operation's outcome is not recorded", "outcome", what,
					"attempts", n, "error", err)
				return
			}
			log.Warn("cannot record the operation's outcome yet; retrying", "outcome", what, "attempts", n,
				"retry_in", (2 * pause).String(), "error", err)
			pause = min(2*pause, 30*h.backoff)
		}
	}()
	return fmt.Errorf("the outcome could not be recorded yet (retried in the background): %w", err)
}

// retriable reports whether a failed write may land later: anything but
// the rows having moved on or gone, or a Magnum exception.
func retriable(err error) bool {
	var ee *exception.Error
	return !errors.Is(err, db.ErrStatusChanged) && !errors.As(err, &ee)
}

// judge runs the status machine on an observation a driver returned with
// its result, on the rows as stored now, and records its decision. It
// returns the cluster as decided (nil when nothing was recorded).
func (h *Handlers) judge(ctx context.Context, log *slog.Logger, uuid string, obs *drivers.Observation) *objects.Cluster {
	if obs == nil {
		return nil
	}
	c, err := h.store.GetClusterByUUID(ctx, uuid)
	if err != nil {
		log.Warn("cannot read the cluster to judge the driver's observation; the status sync will", "error", err)
		return nil
	}
	ngs, err := h.store.ListNodeGroups(ctx, uuid, db.ListOpts{}, db.NodeGroupFilters{})
	if err != nil {
		log.Warn("cannot read the nodegroups to judge the driver's observation; the status sync will", "error", err)
		return nil
	}
	d := statusmachine.Decide(statusmachine.Input{Cluster: c, NodeGroups: ngs, Observation: *obs, Fresh: true,
		Now: time.Now(), Timeouts: h.timeouts})
	if d.Cluster == nil || d.NeedFresh || d.Resume != nil {
		return nil
	}
	out, err := h.applier.Apply(ctx, c, ngs, d)
	if err != nil {
		log.Warn("the driver's observation was not recorded; the status sync will judge the cluster", "error", err)
		return nil
	}
	if !out.Saved {
		return nil
	}
	return d.Cluster
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
