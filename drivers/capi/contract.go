package capi

// TEMPORARY ADAPTER. It puts the Cluster API driver behind the driver
// contract (package drivers) with new-signature methods that delegate to
// the driver's existing internals, and translates the statuses its
// UpdateClusterStatus computes, on copies, into the phases of an
// Observation. The driver's own rewrite onto the contract (observations
// from its informer cache, no database store) replaces this file.

import (
	"context"
	"log/slog"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// RunOptions bound the driver's start attempts (see Driver.Run).
type RunOptions struct {
	AttemptTimeout     time.Duration
	RetryMin, RetryMax time.Duration
}

// Contract is the Cluster API driver as a drivers.Driver (and Runner,
// MonitorProvider, CredentialRotator, CARotator, MasterResizeValidator).
type Contract struct {
	drivers.Unimplemented
	d   *Driver
	run RunOptions
	log *slog.Logger
}

var (
	_ drivers.Driver                = (*Contract)(nil)
	_ drivers.Runner                = (*Contract)(nil)
	_ drivers.MonitorProvider       = (*Contract)(nil)
	_ drivers.CredentialRotator     = (*Contract)(nil)
	_ drivers.CARotator             = (*Contract)(nil)
	_ drivers.MasterResizeValidator = (*Contract)(nil)
)

// NewContract wraps d.
func NewContract(d *Driver, run RunOptions, log *slog.Logger) *Contract {
	return &Contract{d: d, run: run, log: log}
}

// Driver returns the wrapped driver.
func (a *Contract) Driver() *Driver { return a.d }

// Name implements drivers.Driver.
func (a *Contract) Name() string { return a.d.Name() }

// Provides implements drivers.Driver.
func (a *Contract) Provides() []drivers.Key { return a.d.Provides() }

// Run implements drivers.Runner: the start attempts of Driver.Run, logged,
// then the informers until ctx ends.
func (a *Contract) Run(ctx context.Context) error {
	err := a.d.Run(ctx, a.run.AttemptTimeout, a.run.RetryMin, a.run.RetryMax, func(attempt int, err error, retryIn time.Duration) {
		a.log.Error("Cluster API management cluster not usable; the driver is registered but refuses every "+
			"operation (its clusters' status stays unchanged) until it answers; retrying",
			"attempt", attempt, "retry_in", retryIn.String(), "attempt_timeout", a.run.AttemptTimeout.String(), "error", err)
	})
	if err != nil {
		return err
	}
	a.log.Info("Cluster API driver started")
	<-ctx.Done()
	return ctx.Err()
}

// Ready implements drivers.Runner.
func (a *Contract) Ready() error { return a.d.usable() }

// with gives the request's copy of the cluster its template, so that the
// driver does not read it from the database.
func with(req drivers.ClusterRequest) *objects.Cluster {
	c := req.Cluster
	if req.Template != nil {
		c.ClusterTemplate = req.Template
	}
	return c
}

func stackResult(c *objects.Cluster, err error) (drivers.Result, error) {
	if err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{StackID: deref(c.StackID)}, nil
}

// CreateCluster implements drivers.Driver.
func (a *Contract) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	c := with(req.ClusterRequest)
	return stackResult(c, a.d.CreateCluster(ctx, c, int(req.Timeout/time.Minute)))
}

// UpdateCluster implements drivers.Driver.
func (a *Contract) UpdateCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.UpdateCluster(ctx, with(req))
}

// ResizeCluster implements drivers.Driver.
func (a *Contract) ResizeCluster(ctx context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.ResizeCluster(ctx, with(req.ClusterRequest), req.NodeCount, req.NodesToRemove, req.NodeGroup)
}

// UpgradeCluster implements drivers.Driver.
func (a *Contract) UpgradeCluster(ctx context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.UpgradeCluster(ctx, with(req.ClusterRequest), req.NewTemplate, req.MaxBatchSize, req.NodeGroup)
}

// DeleteCluster implements drivers.Driver.
func (a *Contract) DeleteCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.DeleteCluster(ctx, with(req))
}

// CreateNodeGroup implements drivers.Driver.
func (a *Contract) CreateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.CreateNodeGroup(ctx, with(req.ClusterRequest), req.NodeGroup)
}

// UpdateNodeGroup implements drivers.Driver.
func (a *Contract) UpdateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.UpdateNodeGroup(ctx, with(req.ClusterRequest), req.NodeGroup)
}

// DeleteNodeGroup implements drivers.Driver.
func (a *Contract) DeleteNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.DeleteNodeGroup(ctx, with(req.ClusterRequest), req.NodeGroup)
}

// Monitor implements drivers.MonitorProvider.
func (a *Contract) Monitor(ctx context.Context, req drivers.ClusterRequest) (drivers.Monitor, error) {
	return a.d.Monitor(ctx, req.Cluster)
}

// RotateCredential implements drivers.CredentialRotator.
func (a *Contract) RotateCredential(ctx context.Context, req drivers.ClusterRequest) error {
	return a.d.RotateCredential(ctx, with(req))
}

// RotateCACertificate implements drivers.CARotator.
func (a *Contract) RotateCACertificate(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return drivers.Result{}, a.d.RotateCACertificate(ctx, with(req))
}

// ValidateMasterResize implements drivers.MasterResizeValidator.
func (a *Contract) ValidateMasterResize(nodeCount int) error {
	return a.d.ValidateMasterResize(nodeCount)
}

// Observe implements drivers.Driver.
func (a *Contract) Observe(ctx context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	req.Cluster = with(req.ClusterRequest)
	return a.d.Observe(ctx, req)
}
