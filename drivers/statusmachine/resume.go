package statusmachine

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Op names a driver operation a resumption calls again.
type Op string

// The operations a resumption calls.
const (
	OpCreateCluster   Op = "create_cluster"
	OpUpdateCluster   Op = "update_cluster"
	OpResizeCluster   Op = "resize_cluster"
	OpUpgradeCluster  Op = "upgrade_cluster"
	OpDeleteCluster   Op = "delete_cluster"
	OpCreateNodeGroup Op = "create_nodegroup"
	OpUpdateNodeGroup Op = "update_nodegroup"
	OpDeleteNodeGroup Op = "delete_nodegroup"
	OpRotateCA        Op = "rotate_ca_certificate"
)

// Call is one driver call of a resumption, to be built from the rows as
// they are (the operation's change is in them).
type Call struct {
	Op Op
	// NodeGroup is the uuid of the nodegroup the call is about: the
	// nodegroup operations', the resized one, or the one an upgrade goes
	// through ("" for an upgrade of the whole cluster, through its default
	// nodegroups).
	NodeGroup string
	// FromTemplateID is, for an upgrade, the template the back end's
	// configuration still comes from (what UpgradeRequest.Template names),
	// when the observation reports it.
	FromTemplateID string
}

// Resume says which operation of a cluster to resume, and how. The
// conductor first records the attempt (Note as the cluster's
// status_reason, conditional on the rows as read, so that only one
// conductor resumes it), then makes the calls in order, idempotently.
type Resume struct {
	// Attempt is this resumption's number (1 for the first) of Of.
	Attempt, Of int
	// Calls are the driver calls to make again.
	Calls []Call
	// Note is the status_reason that records the attempt.
	Note string
}

// notePrefix starts the status_reason of a resumed operation; attemptRE
// finds its attempt number again.
const notePrefix = "interrupted before its driver call: "

var attemptRE = regexp.MustCompile(`\(attempt (\d+) of \d+\)`)

// Attempts returns how many resumptions a cluster's status_reason records
// (0 when it records none).
func Attempts(reason *string) int {
	r := objects.Deref(reason)
	if !strings.HasPrefix(r, notePrefix) {
		return 0
	}
	m := attemptRE.FindStringSubmatch(r)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// ResumeNote is the status_reason recording resumption attempt of of,
// making calls.
func ResumeNote(calls []Call, attempt, of int) string {
	ops := make([]string, len(calls))
	for i, c := range calls {
		ops[i] = string(c.Op)
	}
	return fmt.Sprintf("%sresumed by the conductor, calling %s (attempt %d of %d)", notePrefix,
		strings.Join(ops, ", "), attempt, of)
}

// CARotationClaimed is the status_reason a CA rotation's claim records,
// until its driver accepted the new CAs (the handler clears it when it
// records their references). The back end's desired state says nothing of
// certificates, so unlike the other operations a rotation that never
// reached its driver cannot be told from the rows and the desired state:
// this is its marker, in a column the shared schema has.
const CARotationClaimed = "rotating the cluster CAs: not handed to the driver yet"

// caRotationPending reports whether reason says that a CA rotation was
// claimed and has not been handed to its driver: its claim's marker, or a
// resumption's note.
func caRotationPending(reason *string) bool {
	r := objects.Deref(reason)
	return r == CARotationClaimed || strings.HasPrefix(r, notePrefix) && strings.Contains(r, string(OpRotateCA))
}

// lastWrite is when the cluster row was last written: its claim, or the
// last resumption recorded on it.
func lastWrite(c *objects.Cluster) (time.Time, bool) {
	switch {
	case c.UpdatedAt != nil && (c.CreatedAt == nil || c.UpdatedAt.After(*c.CreatedAt)):
		return *c.UpdatedAt, true
	case c.CreatedAt != nil:
		return *c.CreatedAt, true
	}
	return time.Time{}, false
}

// overdue reports whether the bound of Timeouts.Resume has passed since the
// cluster's last write.
func overdue(c *objects.Cluster, now time.Time, t Timeouts) bool {
	last, ok := lastWrite(c)
	return t.Resume > 0 && ok && now.Sub(last) > t.Resume
}

// operation names what a status' operation is, for reasons.
func operation(status string) string {
	switch status {
	case objects.CreateInProgress:
		return "create"
	case objects.DeleteInProgress:
		return "deletion"
	case objects.RollbackInProgress:
		return "rollback"
	}
	return "update"
}

// interrupted decides for an operation claimed and not reached within the
// bound: the next resumption, or, once Timeouts.ResumeAttempts resumptions
// were made, the operation's failure.
func interrupted(c *objects.Cluster, ngs []*objects.NodeGroup, req *drivers.BackendRequest, t Timeouts, calls []Call, what string) Decision {
	done := Attempts(c.StatusReason)
	if len(calls) > 0 && done < t.ResumeAttempts {
		r := &Resume{Attempt: done + 1, Of: t.ResumeAttempts, Calls: calls}
		r.Note = ResumeNote(calls, r.Attempt, r.Of)
		return Decision{Interrupted: what, Resume: r}
	}
	reason := fmt.Sprintf("%s within %s of its claim (the conductor handling it stopped, or lost its database)", what, t.Resume)
	switch {
	case len(calls) == 0:
		reason += "; no driver call can resume it"
	case done > 0:
		reason += fmt.Sprintf("; %d resumptions did not reach it either", done)
	}
	return Decision{Interrupted: what}.giveUp(c, ngs, req, reason)
}

// giveUp fails the cluster's operation and its nodegroups in progress with
// reason, putting back the node counts, versions and template the back end
// holds, where it reports them.
func (d Decision) giveUp(row *objects.Cluster, ngs []*objects.NodeGroup, req *drivers.BackendRequest, reason string) Decision {
	c := objects.Clone(row)
	c.Status = failedOf(row.Status)
	if req != nil && req.Exists && row.Status == objects.UpdateInProgress && req.TemplateID != "" &&
		req.TemplateID != objects.Deref(row.ClusterTemplateID) {
		c.ClusterTemplateID = objects.Str(req.TemplateID)
		reason += "; cluster_template_id rolled back to " + req.TemplateID
		if tag := backendKubeTag(req); tag != "" && row.Labels["kube_tag"] != tag {
			labels := maps.Clone(row.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["kube_tag"] = tag
			c.Labels = labels
		}
	}
	setReason(&c.StatusReason, reason)
	d.Cluster = c
	if row.Status != objects.DeleteInProgress && row.Status != objects.CreateInProgress {
		for _, r := range ngs {
			if !InProgress(r.Status) {
				// A settled nodegroup a cluster update resized: its size
				// goes back to the back end's.
				if want, ok := backendSize(req, r); ok && row.Status == objects.UpdateInProgress {
					ng := objects.Clone(r)
					ng.NodeCount = want
					d.NodeGroups = append(d.NodeGroups, ng)
				}
				continue
			}
			ng := objects.Clone(r)
			ng.Status = failedOf(r.Status)
			setReason(&ng.StatusReason, reason)
			if req != nil {
				if want, ok := req.NodeGroups[r.UUID]; ok {
					if want.NodeCount != nil && int64(*want.NodeCount) != r.NodeCount && r.Status != objects.DeleteInProgress {
						ng.NodeCount = int64(*want.NodeCount)
					}
					if want.Version != "" && want.Version != objects.Deref(r.Version) {
						ng.Version = objects.Str(want.Version)
					}
				}
			}
			d.NodeGroups = append(d.NodeGroups, ng)
		}
	}
	if action, outcome, ok := StatusToEvent(c.Status); ok {
		d.Event = &Event{Action: action, Outcome: outcome}
	}
	return d
}

// backendSize is the size the back end holds for ng, when it reports one
// other than the row's.
func backendSize(req *drivers.BackendRequest, ng *objects.NodeGroup) (int64, bool) {
	if req == nil || !req.Exists || req.Behind {
		return 0, false
	}
	want, ok := req.NodeGroups[ng.UUID]
	if !ok || want.NodeCount == nil || int64(*want.NodeCount) == ng.NodeCount {
		return 0, false
	}
	return int64(*want.NodeCount), true
}

// backendKubeTag is the version the back end's nodegroups converge to,
// when they all agree on one.
func backendKubeTag(req *drivers.BackendRequest) string {
	tag := ""
	for _, ng := range req.NodeGroups {
		switch {
		case ng.Version == "":
		case tag == "":
			tag = ng.Version
		case tag != ng.Version:
			return ""
		}
	}
	return tag
}

// resumeCalls are the driver calls that resume what the back end has not
// been asked for: per row in m.notReached, the call its status and change
// stand for.
func (m *machine) resumeCalls() []Call {
	row, req := m.in.Cluster, m.obs.Request
	var calls []Call
	clusterMissing := false
	for _, u := range m.notReached {
		if u == "" {
			clusterMissing = true
		}
	}
	upgrade := false
	if clusterMissing {
		switch row.Status {
		case objects.DeleteInProgress:
			// The deletion takes every nodegroup with it.
			return []Call{{Op: OpDeleteCluster}}
		case objects.CreateInProgress:
			return []Call{{Op: OpCreateCluster}}
		case objects.UpdateInProgress:
			if req != nil && req.Exists && !req.Deleting && req.TemplateID != "" &&
				req.TemplateID != objects.Deref(row.ClusterTemplateID) {
				upgrade = true
				calls = append(calls, Call{Op: OpUpgradeCluster, FromTemplateID: req.TemplateID})
			}
		}
	}
	for _, u := range m.notReached {
		if u == "" {
			continue
		}
		var ng *objects.NodeGroup
		for _, r := range m.in.NodeGroups {
			if r.UUID == u {
				ng = r
			}
		}
		if ng == nil {
			continue
		}
		var want drivers.NodeGroupRequestState
		held := false
		if req != nil {
			want, held = req.NodeGroups[u]
		}
		switch ng.Status {
		case objects.CreateComplete, objects.UpdateComplete, objects.UpdateFailed, objects.CreateFailed:
			// A settled nodegroup resized by cluster_update.
			if ng.IsDefault && ng.Role != objects.RoleMaster {
				calls = append(calls, Call{Op: OpUpdateCluster})
			} else {
				calls = append(calls, Call{Op: OpResizeCluster, NodeGroup: u})
			}
		case objects.CreateInProgress:
			calls = append(calls, Call{Op: OpCreateNodeGroup, NodeGroup: u})
		case objects.DeleteInProgress:
			calls = append(calls, Call{Op: OpDeleteNodeGroup, NodeGroup: u})
		case objects.UpdateInProgress:
			switch {
			case held && want.Version != "" && objects.Deref(ng.Version) != "" && want.Version != objects.Deref(ng.Version):
				if !upgrade {
					// An upgrade through this nodegroup alone.
					calls = append(calls, Call{Op: OpUpgradeCluster, NodeGroup: u})
				}
			case held && want.NodeCount != nil && int64(*want.NodeCount) == ng.NodeCount:
				calls = append(calls, Call{Op: OpUpdateNodeGroup, NodeGroup: u})
			default:
				calls = append(calls, Call{Op: OpResizeCluster, NodeGroup: u})
			}
		}
	}
	if clusterMissing && len(calls) == 0 && row.Status == objects.UpdateInProgress {
		calls = append(calls, Call{Op: OpUpdateCluster})
	}
	return calls
}
