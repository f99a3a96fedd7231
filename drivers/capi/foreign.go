package capi

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// A row's stack_id tells whose objects a cluster is. This driver writes
// "<namespace>/<name>" once it has applied the cluster (create.go), and
// nothing before. Any other non-empty stack_id was written by someone else:
// magnum-cluster-api ("kube-" and 5 characters), magnum-capi-helm (the Helm
// release name), Heat (a stack UUID), or a database edited by hand. For
// such a row the absence of a Cluster at the driver's own place proves
// nothing about the cluster: it may be running and billed under another
// driver's objects. So the driver never reports it gone, failed or healthy
// from that absence (Observe and Monitor answer drivers.ErrNotManaged) and
// refuses every operation on it before anything changes (Admit), with a
// reason that says what the cluster is and what to do.

var (
	// mcapiStackID is magnum-cluster-api's generate_cluster_api_name().
	mcapiStackID = regexp.MustCompile(`^kube-[a-z0-9]{5}$`)
	// capiHelmStackID is magnum-capi-helm's release name: the sanitised
	// cluster name (at most 30 characters) and a 12-character short id.
	capiHelmStackID = regexp.MustCompile(`^[a-z0-9-]{1,30}-[a-z2-7]{12}$`)
	// heatStackID is a Heat stack's UUID (the Heat drivers' stack_id).
	heatStackID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// parseRef splits a stack_id of this driver's shape: a namespace (a
// DNS-1123 label) and a Cluster name (a DNS-1123 subdomain, as Cluster API
// names are), separated by one slash.
func parseRef(stackID string) (ref, bool) {
	ns, name, ok := strings.Cut(stackID, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return ref{}, false
	}
	return ref{ns, name}, true
}

// foreignOwner names who a stack_id not of this driver's shape belongs to,
// as far as its shape tells.
func foreignOwner(stackID string) string {
	switch {
	case mcapiStackID.MatchString(stackID):
		return "magnum-cluster-api (vexxhost), whose Cluster is magnum-system/" + stackID
	case heatStackID.MatchString(stackID):
		return "a Heat driver (a Heat stack id)"
	case capiHelmStackID.MatchString(stackID):
		return "magnum-capi-helm, whose Helm release is " + stackID
	}
	return "no known driver"
}

// notManaged is the error of an operation or observation of a cluster
// whose stack_id is not this driver's (see above), or nil when it is this
// driver's, or empty (not applied yet: the driver's own create).
func notManaged(c *objects.Cluster) error {
	stackID := deref(c.StackID)
	if stackID == "" {
		return nil
	}
	if _, ok := parseRef(stackID); ok {
		return nil
	}
	return fmt.Errorf("cluster %s has stack_id %q, the shape of %s, not this driver's <namespace>/<name>: it was "+
		"not created by the Cluster API driver of this conductor and has not been adopted; it is left as it is "+
		"(nothing is changed, deleted or reported about it) until it is adopted, or served by the conductor "+
		"and driver that created it: %w", deref(c.UUID), stackID, foreignOwner(stackID), drivers.ErrNotManaged)
}

// Admit implements drivers.Admitter: every operation on a cluster this
// driver does not manage is refused before the conductor changes anything
// (NotSupported), and so is every operation while the management cluster
// is not usable (Conflict, naming the outage): a refused operation leaves
// the cluster as it was, where it would otherwise fail on a raw connection
// error and leave it *_FAILED. Both checks read the driver's state only.
func (d *Driver) Admit(ctx context.Context, req drivers.ClusterRequest) error {
	if err := d.current(); err != nil {
		refusal := exception.ClassConflict.WithMessage("The operation is refused and the cluster left as it is: "+
			err.Error()+". Retry once the management cluster answers.", nil)
		refusal.Cause = err
		d.log.WarnContext(ctx, "operation refused while the management cluster is not usable", append(d.logAttrs(ctx, req.Cluster),
			"error", err)...)
		return refusal
	}
	err := notManaged(req.Cluster)
	if err == nil {
		return nil
	}
	d.log.WarnContext(ctx, "operation refused on a cluster this driver does not manage", append(d.logAttrs(ctx, req.Cluster),
		"stack_id", deref(req.Cluster.StackID))...)
	refusal := exception.NotSupportedMessage(err.Error())
	refusal.Cause = err
	return refusal
}

// warnNotManaged logs, once per cluster for the driver's life, that a
// cluster routed to it is not its own: the status sync and health polling
// ask about it every cycle, and say nothing more about it.
func (d *Driver) warnNotManaged(ctx context.Context, c *objects.Cluster, err error) {
	if _, seen := d.notManagedSeen.LoadOrStore(deref(c.UUID), struct{}{}); seen {
		return
	}
	d.log.WarnContext(ctx, "a cluster of this driver's templates is not managed by it; its status and health are left as they are",
		append(d.logAttrs(ctx, c), "stack_id", deref(c.StackID), "error", err)...)
}

// mustRef is the Cluster of a row an operation needs applied: an error
// naming the owner for a foreign stack_id, or saying none was written.
func mustRef(c *objects.Cluster) (ref, error) {
	if err := notManaged(c); err != nil {
		return ref{}, err
	}
	r, ok := refOf(c)
	if !ok {
		return ref{}, fmt.Errorf("capi: cluster %s has no stack_id", deref(c.UUID))
	}
	return r, nil
}
