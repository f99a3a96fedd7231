// Package statusmachine turns what a driver observes into Magnum statuses:
// the one status machine every cluster driver shares (the Go twin of what
// Magnum's HeatPoller and its periodic sync_cluster_status do together).
//
// Decide is a pure function: from the cluster row and its nodegroup rows as
// read, a driver's Observation, the time and the timeouts, it returns a
// Decision (copies of the rows with their new values, the nodegroups to
// remove, the notification, whether the deletion finished). It does no I/O;
// the conductor saves the decision, conditional on the rows not having
// changed since they were read.
//
// The rules:
//   - Only clusters in *_IN_PROGRESS change (and a DELETE_COMPLETE leftover,
//     whose clean-up is finished); settled clusters keep their status and
//     reason. Likewise, only nodegroups in *_IN_PROGRESS change status and
//     reason.
//   - A cluster in CREATE_IN_PROGRESS without stack_id is not judged: its
//     create handler has not handed it to its driver yet.
//   - PhasePending never completes and never fails anything (only the
//     operation's deadline, confirmed by a fresh observation, does).
//   - A nodegroup in progress completes on PhaseReady, fails on PhaseFailed
//     (and on PhaseGone, unless it is being deleted, when PhaseGone
//     completes its deletion and its row is removed).
//   - A cluster completes on PhaseReady once no nodegroup is still in
//     progress. It fails on PhaseFailed, on PhaseGone (unless it is being
//     deleted: DELETE_COMPLETE, and its certificates, nodegroups and row go),
//     and when one of its nodegroups fails during the operation ("nodegroup
//     X failed: reason").
//   - A deadline passed fails the operation ("timed out: reason"), but only
//     on a fresh observation (ObserveRequest.Fresh): on a cached one the
//     decision asks for a fresh one (NeedFresh) and changes nothing. Create
//     deadlines count from Observation.Started, else from created_at, with
//     the cluster's create_timeout (else Timeouts.Create); a nodegroup added
//     later has its own from its created_at. Update and delete deadlines count
//     from Observation.Started and apply only when it is reported; an update's
//     (and a rollback's) only while the back end holds every change the rows
//     in progress ask for (see Observation.Request): until then, Started is
//     about an earlier operation. The update deadline is Timeouts.Update, or
//     with Timeouts.UpdateAsCreate the cluster's create_timeout (else
//     Timeouts.Create), as a Heat stack update runs under the stack's timeout.
//   - An operation failed on its deadline stays failed when its back end
//     converges later, like any failed operation: settled clusters are not
//     judged. A new operation (a retried resize, an upgrade) starts a new
//     deadline.
//   - When the back end reports the desired state it holds
//     (Observation.Request) and that state does not show the change the rows
//     hold (a new node count, a new template, a deletion), the change has not
//     reached the back end: the operation is judged Pending, and its stored
//     reason stays (nothing the back end says is about it yet).
//   - An operation claimed and not reached within Timeouts.Resume of the
//     cluster row's last write (a create without stack_id, or a change the
//     back end's desired state does not show, confirmed by a fresh
//     observation) was interrupted between its claim and its driver call
//     (a conductor killed, its database lost): the decision resumes it
//     (Decision.Resume: the driver calls to make again, idempotently), at
//     most Timeouts.ResumeAttempts times, counted in the status_reason each
//     resumption records, and then fails it with a reason saying so,
//     putting back the node counts and template the back end holds.
//   - A failed upgrade (UPDATE_FAILED) rolls cluster_template_id and kube_tag
//     back to Observation.AppliedTemplateID and AppliedKubeTag.
//   - Reported fields are stored whatever the status: api_address,
//     coe_version, container_version, node_addresses, and node_count of
//     nodegroups the back end sizes itself (autoscaled) unless being deleted.
//     A nodegroup's version is stored once it has settled. Default
//     nodegroups without stack_id get the cluster's.
//   - Refresh (not Decide) takes a settled cluster's observation, for the
//     drivers that are drivers.SettledObserver: the reported fields above
//     (node_count of autoscaled nodegroups, at every sync), never a status.
package statusmachine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// CADF actions and outcomes (pycadf.cadftaxonomy) of the notifications a
// decision calls for.
const (
	ActionCreate   = "create"
	ActionUpdate   = "update"
	ActionDelete   = "delete"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// statusToEvent is ClusterUpdateJob.status_to_event.
var statusToEvent = map[string]string{
	objects.DeleteComplete:   ActionDelete,
	objects.CreateComplete:   ActionCreate,
	objects.UpdateComplete:   ActionUpdate,
	objects.RollbackComplete: ActionUpdate,
	objects.CreateFailed:     ActionCreate,
	objects.DeleteFailed:     ActionDelete,
	objects.UpdateFailed:     ActionUpdate,
	objects.RollbackFailed:   ActionUpdate,
}

// StatusToEvent returns the CADF action and outcome notified when a cluster
// reaches status, as status_to_event does; ok is false for statuses without
// an action.
func StatusToEvent(status string) (action, outcome string, ok bool) {
	switch {
	case strings.HasSuffix(status, "_COMPLETE"):
		outcome = OutcomeSuccess
	case strings.HasSuffix(status, "_FAILED"):
		outcome = OutcomeFailure
	default:
		return "", "", false
	}
	action, ok = statusToEvent[status]
	return action, outcome, ok
}

// Timeouts are the conductor's per-operation deadlines.
type Timeouts struct {
	// Create bounds CREATE_IN_PROGRESS of a cluster without create_timeout
	// (Magnum's [cluster_heat]/create_timeout, 60 min). 0: no deadline.
	Create time.Duration
	// Update bounds UPDATE_IN_PROGRESS and ROLLBACK_IN_PROGRESS (and the
	// nodegroups in those), counted from Observation.Started. 0: no
	// deadline.
	Update time.Duration
	// UpdateAsCreate: an update is bounded like Magnum's Heat stack update,
	// by the stack's timeout: the cluster's create_timeout, else Create.
	// Update is then not used.
	UpdateAsCreate bool
	// Delete bounds DELETE_IN_PROGRESS. 0: no deadline.
	Delete time.Duration
	// Resume bounds how long an operation may stay claimed without
	// reaching its driver's back end: a cluster in CREATE_IN_PROGRESS
	// without stack_id (its create was never handed to its driver), or an
	// operation whose change the back end's desired state
	// (Observation.Request) does not show. It counts from the cluster row's
	// last write (updated_at, else created_at): a claim, or a resumption.
	// Past it the decision resumes the operation (Decision.Resume), or
	// fails it once ResumeAttempts resumptions did not reach the back end
	// either. It should exceed the conductor's driver-call deadline plus
	// one sync interval, so that a handler still running is never
	// overtaken. 0: never.
	Resume time.Duration
	// ResumeAttempts is how many times an interrupted operation is resumed
	// before it is failed. 0: failed at once.
	ResumeAttempts int
}

// Input is what a decision is made from. Decide does not modify it.
type Input struct {
	Cluster     *objects.Cluster
	NodeGroups  []*objects.NodeGroup
	Observation drivers.Observation
	// Fresh says the observation was made with ObserveRequest.Fresh.
	Fresh    bool
	Now      time.Time
	Timeouts Timeouts
}

// Event is a CADF notification about the cluster.
type Event struct {
	Action, Outcome string
}

// Decision is what the status machine decided for one cluster.
type Decision struct {
	// Skip, when not empty, says why the cluster was not judged; nothing
	// else is set.
	Skip string
	// Interrupted, when not empty, says that the cluster's operation was
	// claimed but has not reached its driver's back end within
	// Timeouts.Resume, and what happened. Then either Resume is set
	// (nothing else is: the conductor resumes the operation), or the
	// decision fails the operation like any other (its attempts are spent).
	Interrupted string
	// Resume is the resumption of an interrupted operation: the driver
	// calls to make again (see Resume).
	Resume *Resume
	// NeedFresh: a deadline passed on a cached observation. Nothing else is
	// set: observe again with ObserveRequest.Fresh and decide on that.
	NeedFresh bool
	// Cluster is a copy of the cluster row with the decided changes
	// (objects.Changes lists them).
	Cluster *objects.Cluster
	// NodeGroups are copies of the nodegroup rows that change.
	NodeGroups []*objects.NodeGroup
	// Destroy are the nodegroup rows (as read) whose deletion completed.
	Destroy []*objects.NodeGroup
	// Event is the notification the cluster's new status calls for.
	Event *Event
	// Deleted: the cluster's deletion has finished; once Cluster (in
	// DELETE_COMPLETE) is saved and Event sent, its certificates, nodegroups
	// and row are removed.
	Deleted bool
	// TimedOut lists what failed on a deadline, for the log.
	TimedOut []string
}

// Changed reports whether the decision writes anything.
func (d Decision) Changed() bool {
	if d.Cluster != nil && len(objects.Changes(d.Cluster)) > 0 {
		return true
	}
	return len(d.NodeGroups) > 0 || len(d.Destroy) > 0 || d.Deleted
}

// InProgress reports whether status is one the status machine drives.
func InProgress(status string) bool {
	switch status {
	case objects.CreateInProgress, objects.UpdateInProgress, objects.DeleteInProgress, objects.RollbackInProgress:
		return true
	}
	return false
}

// completeOf and failedOf map an in-progress status to its end.
func completeOf(s string) string { return strings.TrimSuffix(s, "_IN_PROGRESS") + "_COMPLETE" }
func failedOf(s string) string   { return strings.TrimSuffix(s, "_IN_PROGRESS") + "_FAILED" }

func phaseOf(p drivers.Phase) drivers.Phase {
	if p == "" {
		return drivers.PhasePending
	}
	return p
}

// Decide judges one cluster. See the package documentation for the rules.
func Decide(in Input) Decision {
	if d, observe := Triage(in.Cluster, in.Now, in.Timeouts); !observe {
		return d
	}
	c := in.Cluster
	m := &machine{in: in, obs: in.Observation, c: objects.Clone(c)}
	m.held = m.holdsEveryChange()
	m.nodeGroups()
	m.cluster()
	if len(m.notReached) > 0 && overdue(c, in.Now, in.Timeouts) {
		// Claimed long ago, and the back end still does not hold it: the
		// claim's conductor never made the driver call. A cached
		// observation may be behind: the back end itself must confirm.
		if !in.Fresh {
			return Decision{NeedFresh: true}
		}
		return interrupted(c, in.NodeGroups, in.Observation.Request, in.Timeouts, m.resumeCalls(),
			"the "+operation(c.Status)+" did not reach the driver's back end")
	}
	if len(m.timedOut) > 0 && !in.Fresh {
		return Decision{NeedFresh: true}
	}
	d := Decision{Cluster: m.c, Destroy: m.destroy, Deleted: m.deleted, TimedOut: m.timedOut}
	for _, ng := range m.ngs {
		if len(objects.Changes(ng)) > 0 {
			d.NodeGroups = append(d.NodeGroups, ng)
		}
	}
	if m.c.Status != c.Status {
		if action, outcome, ok := StatusToEvent(m.c.Status); ok {
			d.Event = &Event{Action: action, Outcome: outcome}
		}
	}
	return d
}

// Triage tells, before its driver is asked, whether a cluster is judged:
// observe is true when its driver must observe it; otherwise the decision
// is final (Skip or Interrupted set, or a DELETE_COMPLETE leftover whose
// deletion is to be finished).
func Triage(c *objects.Cluster, now time.Time, t Timeouts) (d Decision, observe bool) {
	switch {
	case c.Status == objects.DeleteComplete:
		// A deletion whose clean-up was interrupted: finish it, without a
		// second notification.
		return Decision{Cluster: objects.Clone(c), Deleted: true}, false
	case !InProgress(c.Status):
		return Decision{Skip: "status " + c.Status + " is settled"}, false
	case c.Status == objects.CreateInProgress && objects.Deref(c.StackID) == "":
		if overdue(c, now, t) {
			return interrupted(c, nil, nil, t, []Call{{Op: OpCreateCluster}},
				"the create was not handed to its driver"), false
		}
		return Decision{Skip: "its create has not been handed to its driver yet"}, false
	case c.Status == objects.UpdateInProgress && caRotationPending(c.StatusReason):
		// Nothing the back end shows says whether it has the new CAs: the
		// claim's marker does, until the handler records them.
		if overdue(c, now, t) {
			return interrupted(c, nil, nil, t, []Call{{Op: OpRotateCA}},
				"the CA rotation was not handed to its driver"), false
		}
		return Decision{Skip: "its CA rotation has not been handed to its driver yet"}, false
	}
	return Decision{}, true
}

type machine struct {
	in  Input
	obs drivers.Observation
	c   *objects.Cluster // the copy decided on

	ngs      []*objects.NodeGroup // copies, in the rows' order
	destroy  []*objects.NodeGroup
	busy     []string // nodegroups still in progress after the decision
	failed   []string // nodegroups that failed at this decision
	timedOut []string
	deleted  bool
	// notReached are the rows (nodegroup uuids, "" for the cluster) in
	// progress whose change the back end's desired state does not show.
	notReached []string
	// held: the back end holds every change in progress, so Started is
	// about this operation (holdsEveryChange).
	held bool
}

// createTimeout is the cluster's create_timeout, else the default.
func (m *machine) createTimeout() time.Duration {
	if n := m.in.Cluster.CreateTimeout; n != nil && *n > 0 {
		return time.Duration(*n) * time.Minute
	}
	return m.in.Timeouts.Create
}

// updateTimeout bounds an update: Timeouts.Update, or with UpdateAsCreate
// the cluster's create timeout.
func (m *machine) updateTimeout() time.Duration {
	if m.in.Timeouts.UpdateAsCreate {
		return m.createTimeout()
	}
	return m.in.Timeouts.Update
}

// holdsEveryChange reports whether the back end's desired state shows
// every change the rows in progress ask for (true when it does not report
// it): the rows nodeGroups and cluster find not reached.
func (m *machine) holdsEveryChange() bool {
	if m.obs.Request == nil {
		return true
	}
	if !m.clusterReached() {
		return false
	}
	c := m.in.Cluster
	for _, ng := range m.in.NodeGroups {
		switch {
		case c.Status == objects.DeleteInProgress:
		case InProgress(ng.Status):
			if !m.ngReached(ng) {
				return false
			}
		case c.Status == objects.UpdateInProgress:
			if !m.sizeReached(ng) {
				return false
			}
		}
	}
	return true
}

// clusterCreateDeadline is when the cluster's create times out (zero:
// never).
func (m *machine) clusterCreateDeadline() time.Time {
	t := m.createTimeout()
	if t <= 0 {
		return time.Time{}
	}
	start := m.obs.Started
	if start.IsZero() {
		if m.in.Cluster.CreatedAt == nil {
			return time.Time{}
		}
		start = *m.in.Cluster.CreatedAt
	}
	return start.Add(t)
}

// deadline is when an operation in status (cluster or nodegroup) times out;
// created is the nodegroup's created_at (nil for the cluster).
func (m *machine) deadline(status string, created *time.Time) time.Time {
	started := m.obs.Started
	switch status {
	case objects.CreateInProgress:
		d := time.Time{}
		if m.in.Cluster.Status == objects.CreateInProgress {
			d = m.clusterCreateDeadline()
		}
		if created != nil && m.createTimeout() > 0 {
			if own := created.Add(m.createTimeout()); own.After(d) {
				d = own
			}
		}
		return d
	case objects.UpdateInProgress, objects.RollbackInProgress:
		if t := m.updateTimeout(); t > 0 && !started.IsZero() && m.held {
			return started.Add(t)
		}
	case objects.DeleteInProgress:
		if m.in.Timeouts.Delete > 0 && !started.IsZero() {
			return started.Add(m.in.Timeouts.Delete)
		}
	}
	return time.Time{}
}

func (m *machine) passed(deadline time.Time) bool {
	return !deadline.IsZero() && m.in.Now.After(deadline)
}

// reached reports whether the back end's desired state shows the change
// the nodegroup row holds (true when the back end does not report it).
func (m *machine) ngReached(ng *objects.NodeGroup) bool {
	req := m.obs.Request
	if req == nil {
		return true
	}
	if !req.Exists || req.Behind {
		return false
	}
	want, ok := req.NodeGroups[ng.UUID]
	if ng.Status == objects.DeleteInProgress {
		return !ok
	}
	if !ok {
		return false
	}
	if want.NodeCount != nil && int64(*want.NodeCount) != ng.NodeCount {
		return false
	}
	if v := objects.Deref(ng.Version); v != "" && want.Version != "" && want.Version != v {
		return false
	}
	// A nodegroup update changes only the autoscaler's bounds.
	if want.MinNodeCount != nil && *want.MinNodeCount != ng.MinNodeCount ||
		want.MaxNodeCount != nil && *want.MaxNodeCount != orZero(ng.MaxNodeCount) {
		return false
	}
	return true
}

func orZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// sizeReached reports whether the back end's desired state has a settled
// nodegroup at the size its row holds (true when not reported, or decided
// by the back end).
func (m *machine) sizeReached(ng *objects.NodeGroup) bool {
	req := m.obs.Request
	if req == nil || !req.Exists || req.Behind || ng.Status == objects.DeleteComplete {
		return true
	}
	want, ok := req.NodeGroups[ng.UUID]
	return !ok || want.NodeCount == nil || int64(*want.NodeCount) == ng.NodeCount
}

// clusterReached is ngReached for the cluster row.
func (m *machine) clusterReached() bool {
	req := m.obs.Request
	if req == nil {
		return true
	}
	c := m.in.Cluster
	if c.Status == objects.DeleteInProgress {
		return !req.Exists || req.Deleting
	}
	if !req.Exists || req.Deleting || req.Behind {
		return false
	}
	return req.TemplateID == "" || req.TemplateID == objects.Deref(c.ClusterTemplateID)
}

func setReason(p **string, reason string) {
	if reason == "" {
		*p = nil
		return
	}
	*p = objects.Str(reason)
}

func (m *machine) nodeGroups() {
	c := m.in.Cluster
	deleting := c.Status == objects.DeleteInProgress
	for _, row := range m.in.NodeGroups {
		ng := objects.Clone(row)
		m.ngs = append(m.ngs, ng)
		if sid := objects.Deref(c.StackID); sid != "" && ng.IsDefault && objects.Deref(ng.StackID) == "" {
			ng.StackID = objects.Str(sid)
		}
		o, reported := m.obs.NodeGroups[row.UUID]
		if reported {
			if o.NodeAddresses != nil && !slices.Equal(o.NodeAddresses, row.NodeAddresses) {
				ng.NodeAddresses = slices.Clone(o.NodeAddresses)
			}
			if o.NodeCount != nil && row.Status != objects.DeleteInProgress && int64(*o.NodeCount) != row.NodeCount {
				ng.NodeCount = int64(*o.NodeCount)
			}
		}
		if deleting || !InProgress(row.Status) {
			// The whole cluster goes (its nodegroups with it), or the
			// nodegroup has settled. A settled nodegroup whose size the
			// back end was not asked for is a cluster update that has not
			// reached it (cluster_update resizes the default worker without
			// claiming it).
			// Asked for, it holds the update until the back end has carried
			// it out: the cluster's own view of its nodegroups can lag
			// behind (the Cluster API Cluster's ScalingUp condition did, in
			// the end-to-end test over RPC).
			switch {
			case c.Status != objects.UpdateInProgress:
			case !m.sizeReached(row):
				m.notReached = append(m.notReached, row.UUID)
			case reported && phaseOf(o.Phase) == drivers.PhaseInProgress && row.Status != objects.DeleteComplete:
				m.busy = append(m.busy, row.Name)
			}
			m.version(ng, o)
			continue
		}
		phase := drivers.PhasePending
		if reported {
			phase = phaseOf(o.Phase)
		}
		if !m.ngReached(row) {
			// The back end has not been asked for this nodegroup's change:
			// nothing it shows is about it, its reason included.
			m.notReached = append(m.notReached, row.UUID)
			m.ngWaits(ng, row, "")
			m.version(ng, o)
			continue
		}
		switch phase {
		case drivers.PhaseReady:
			if row.Status == objects.DeleteInProgress {
				// Ready is not gone: the deletion goes on.
				m.ngWaits(ng, row, o.Reason)
				continue
			}
			ng.Status = completeOf(row.Status)
			setReason(&ng.StatusReason, o.Reason)
		case drivers.PhaseGone:
			if row.Status == objects.DeleteInProgress {
				m.destroy = append(m.destroy, row)
				m.ngs = m.ngs[:len(m.ngs)-1]
				continue
			}
			m.ngFails(ng, row, orDefault(o.Reason, "the back end holds nothing for it"))
		case drivers.PhaseFailed:
			m.ngFails(ng, row, orDefault(o.Reason, "the back end gave up"))
		default:
			m.ngWaits(ng, row, o.Reason)
		}
		m.version(ng, o)
	}
}

// ngWaits keeps a nodegroup in progress, or fails it on its deadline.
func (m *machine) ngWaits(ng, row *objects.NodeGroup, reason string) {
	if m.passed(m.deadline(row.Status, row.CreatedAt)) {
		m.timedOut = append(m.timedOut, "nodegroup "+row.Name)
		m.ngFails(ng, row, "timed out: "+orDefault(reason, "no progress reported"))
		return
	}
	if reason != "" {
		setReason(&ng.StatusReason, reason)
	}
	m.busy = append(m.busy, row.Name)
}

func (m *machine) ngFails(ng, row *objects.NodeGroup, reason string) {
	ng.Status = failedOf(row.Status)
	setReason(&ng.StatusReason, reason)
	m.failed = append(m.failed, fmt.Sprintf("nodegroup %s failed: %s", row.Name, reason))
}

// version stores the version a settled nodegroup runs.
func (m *machine) version(ng *objects.NodeGroup, o drivers.NodeGroupObservation) {
	if o.Version != "" && !InProgress(ng.Status) && o.Version != objects.Deref(ng.Version) {
		ng.Version = objects.Str(o.Version)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (m *machine) cluster() {
	c, row, o := m.c, m.in.Cluster, m.obs
	if o.APIAddress != "" && o.APIAddress != objects.Deref(row.APIAddress) {
		c.APIAddress = objects.Str(o.APIAddress)
	}
	if o.COEVersion != "" && o.COEVersion != objects.Deref(row.CoeVersion) {
		c.CoeVersion = objects.Str(o.COEVersion)
	}
	if o.ContainerVersion != "" && o.ContainerVersion != objects.Deref(row.ContainerVersion) {
		c.ContainerVersion = objects.Str(o.ContainerVersion)
	}
	applyHealth(c, row, o.Health)
	phase := phaseOf(o.Phase)
	if !m.clusterReached() {
		// Nothing the back end shows is about this operation yet: the
		// stored reason stays (a resumption's note among others).
		m.notReached = append(m.notReached, "")
		m.clusterWaits(drivers.PhasePending, "")
		return
	}
	// A nodegroup's change the back end does not hold yet: what it says
	// about the cluster is not about this operation either.
	waitReason := o.Reason
	if len(m.notReached) > 0 {
		waitReason = ""
	}
	if row.Status == objects.DeleteInProgress {
		switch phase {
		case drivers.PhaseGone:
			c.Status = objects.DeleteComplete
			setReason(&c.StatusReason, o.Reason)
			m.deleted = true
		case drivers.PhaseFailed:
			c.Status = objects.DeleteFailed
			setReason(&c.StatusReason, orDefault(o.Reason, "the back end gave up the deletion"))
		default:
			m.clusterWaits(phase, waitReason)
		}
		return
	}
	switch {
	case phase == drivers.PhaseFailed:
		m.fail(orDefault(o.Reason, orDefault(strings.Join(m.failed, "; "), "the back end gave up")))
	case phase == drivers.PhaseGone:
		m.fail(orDefault(o.Reason, "the back end holds nothing for the cluster"))
	case len(m.failed) > 0:
		m.fail(strings.Join(m.failed, "; "))
	case phase == drivers.PhaseReady && len(m.busy) == 0 && len(m.notReached) == 0:
		c.Status = completeOf(row.Status)
		setReason(&c.StatusReason, o.Reason)
	default:
		m.clusterWaits(phase, waitReason)
	}
}

// clusterWaits keeps the cluster in progress with reason (the
// observation's), or fails it on its deadline.
func (m *machine) clusterWaits(phase drivers.Phase, reason string) {
	c, row := m.c, m.in.Cluster
	if phase == drivers.PhaseReady && len(m.busy) > 0 && reason == "" && len(m.notReached) == 0 {
		reason = "waiting for nodegroups: " + strings.Join(m.busy, ", ")
	}
	if m.passed(m.deadline(row.Status, nil)) {
		m.timedOut = append(m.timedOut, "cluster")
		reason = "timed out: " + orDefault(reason, "no progress reported")
		if row.Status == objects.DeleteInProgress {
			c.Status = objects.DeleteFailed
			setReason(&c.StatusReason, reason)
			return
		}
		m.fail(reason)
		return
	}
	if reason != "" || phase == drivers.PhaseInProgress {
		setReason(&c.StatusReason, reason)
	}
}

// fail ends the cluster's operation as failed, rolling a failed upgrade
// back to the template and kube_tag the back end runs.
func (m *machine) fail(reason string) {
	c, row, o := m.c, m.in.Cluster, m.obs
	c.Status = failedOf(row.Status)
	if c.Status == objects.UpdateFailed && o.AppliedTemplateID != "" && o.AppliedTemplateID != objects.Deref(row.ClusterTemplateID) {
		c.ClusterTemplateID = objects.Str(o.AppliedTemplateID)
		reason += "; cluster_template_id rolled back to " + o.AppliedTemplateID
		if tag := o.AppliedKubeTag; tag != "" && row.Labels["kube_tag"] != tag {
			labels := maps.Clone(row.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["kube_tag"] = tag
			c.Labels = labels
			reason += " and kube_tag to " + tag
		}
	}
	setReason(&c.StatusReason, reason)
}
