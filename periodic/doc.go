// Package periodic runs the conductor's periodic tasks (the Go twin of
// magnum/service/periodic.py and magnum/servicegroup): sync_cluster_status,
// sync_cluster_health_status and the update_magnum_service heartbeat.
//
// sync_cluster_status asks the driver of each cluster with an operation in
// progress what its back end shows (drivers.Driver.Observe), has the status
// machine (drivers/statusmachine) judge it, and records the decision with
// conductor/clusterstate: saves conditional on the rows as read at the start of the
// cycle, in one transaction holding the cluster's lock, then the
// notification, then the end of a deletion. A cluster in CREATE_IN_PROGRESS
// is observed only once its create handler stored the driver's stack_id.
// An operation claimed and never handed to its driver (its conductor killed
// between the claim and the driver call, or its database lost there) is
// found once it is older than the resumption bound (a create still without
// stack_id, or a change the back end's Observation.Request does not show,
// confirmed by a fresh observation) and resumed through the Resumer
// (conductor.Handlers.Resume), at most the configured number of times,
// then failed with a reason saying so.
//
// Each task is a Job with a name, a spacing and RunOnce. A Runner schedules
// jobs with jitter, runs them at start and never overlaps two runs of one
// job: a slow cycle delays the next one instead of stacking. Per-cluster work
// is single-flight and runs in a bounded worker pool.
//
// Unlike Magnum (reference §K.1), conductors sharing one database share the
// work: the live conductors are the magnum_service rows of binary
// magnum-conductor that are up (§H), and each cluster is handled by the
// conductor whose host wins rendezvous hashing over the cluster uuid. A dead
// conductor drops out once its heartbeat is older than service_down_time, and
// its clusters move to the others.
package periodic
