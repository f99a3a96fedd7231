package capi

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// Observe implements drivers.Driver from the informer cache (capi-driver.md
// §5.2): per cluster and nodegroup, the phase of the change the request's
// rows ask for, as the Cluster API objects show it. It decides no Magnum
// status: the status machine does.
//
// It reads the cache only, with four exceptions: with req.Fresh, or when
// one of the driver's own deadlines (create_timeout, delete_timeout) has
// passed, a probe confirms that the management cluster answers; an
// autoscaled nodegroup being created or resized gets its node_count written
// on its MachineDeployment once (sizeAutoscaled: the Cluster's topology
// cannot carry it); a cluster being created whose Cluster exists without
// its add-ons gets them written (resumeAddOns: its create stopped between
// the two); and once a deleted Cluster is gone, the driver's
// Secrets and credential are removed before the cluster is reported gone.
// Why these writes are here, and what holds (idempotent, bounded by ctx,
// made once for concurrent observations: d.guard): docs/writing-a-driver.md.
func (d *Driver) Observe(ctx context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	if err := d.current(); err != nil {
		return drivers.Observation{}, err
	}
	if req.Fresh {
		if err := d.confirmReachable(ctx); err != nil {
			return drivers.Observation{}, err
		}
	}
	c := req.Cluster
	if err := notManaged(c); err != nil {
		d.warnNotManaged(ctx, c, err)
		return drivers.Observation{}, err
	}
	now := d.now()
	r, ok := refOf(c)
	obs := observation{Deployments: map[string]*clusterv1.MachineDeployment{}}
	if ok {
		obs = d.cache.Load().observe(r.Namespace, r.Name)
		var uid string
		var generation int64
		if obs.Cluster != nil {
			uid, generation = string(obs.Cluster.UID), obs.Cluster.Generation
		}
		if d.written.behind(r, uid, generation, now) {
			// What the cache shows is older than our last write: nothing in
			// it is about the change, and the desired state it holds is
			// behind (the change is not judged reached on it).
			d.log.DebugContext(ctx, "the informer cache has not seen our last change of the Cluster yet; reported pending",
				"cluster", deref(c.UUID), "capi_cluster", r.String(), "cached_generation", generation)
			return drivers.Observation{Phase: drivers.PhasePending,
				Request: view{cluster: c, nodeGroups: req.NodeGroups, obs: obs}.request()}, nil
		}
	}
	v := view{
		cluster: c, nodeGroups: req.NodeGroups, obs: obs, now: now,
		createDeadline: d.createDeadline(c, obs.Cluster), createTimeout: d.createTimeout(c),
	}
	if labels, err := d.opts.Labels.Parse(mergedLabels(c, req.Template)); err == nil {
		v.labels = &labels
	}
	if ok {
		d.resumeAddOns(ctx, c, r, obs.Cluster, v.labels)
		v.addOns = func(res statusResult) statusResult {
			return d.holdForAddOns(c.Status, r, res, now, v.createDeadline)
		}
		if crs, _ := d.cache.Load().addOns(r.Namespace, r.Name); crs != nil {
			v.addOnWarnings = crs.Annotations[annotationAddOnWarnings]
		}
	}
	if obs.Cluster != nil && obs.Cluster.DeletionTimestamp != nil {
		v.deleteStarted = d.deleteStart(r, obs.Cluster)
		v.deleteDeadline = v.deleteStarted.Add(d.opts.DeleteTimeout)
	}
	if !req.Fresh && deadlinePassed(c, req.NodeGroups, now, v.createDeadline, v.deleteDeadline) {
		if err := d.confirmReachable(ctx); err != nil {
			return drivers.Observation{}, err
		}
	}
	for _, ng := range req.NodeGroups {
		// A create or resize of an autoscaled nodegroup sizes its
		// MachineDeployment once; the observation waits until the cache
		// shows it sized.
		md := obs.Deployments[mdNameFor(ng)]
		inProgress := strings.HasSuffix(ng.Status, "_IN_PROGRESS") && ng.Status != objects.DeleteInProgress
		if ng.Role != objects.RoleMaster && inProgress && appliedAutoscaled(md) {
			if err := d.sizeAutoscaled(ctx, r, ng, md); err != nil {
				d.log.Warn("could not size an autoscaled nodegroup; retried at the next sync",
					append(d.logAttrs(ctx, c), "nodegroup", ng.Name, "error", err)...)
			}
		}
	}
	out := v.observation()
	if ok && !autoHealerReportsHealth(c) {
		// Health from the same cache read as the phases: stored with the
		// status, so that they never disagree.
		h := healthOf(obs)
		out.Health = &h
	}
	if out.Phase == drivers.PhaseGone && c.Status == objects.DeleteInProgress {
		d.noteDeleteRequested(r, time.Time{})
		d.written.forget(r)
		d.addOnsWritten.forget(r)
		ns := r.Namespace
		if !ok { // create never got as far as stack_id: secrets may still exist
			ns = namespaceFor(d.opts.NamespacePrefix, deref(c.ProjectID))
		}
		if err := d.cleanup(ctx, c, ns); err != nil {
			// Gone only once the driver's own objects are: the next sync
			// retries.
			out.Phase, out.Reason = drivers.PhaseInProgress, "Cluster deleted; clean-up pending: "+err.Error()
		}
	}
	return out, nil
}

// view is what one observation is made from: the request's rows, what
// the cache holds for them, and the driver's deadlines.
type view struct {
	cluster    *objects.Cluster
	nodeGroups []*objects.NodeGroup
	obs        observation
	// labels are the cluster's labels over its template's (nil: they do
	// not parse, and the autoscaler's bounds are not reported).
	labels *Labels
	now    time.Time
	// createDeadline and deleteDeadline are the driver's own
	// (create_timeout, delete_timeout); zero when unknown.
	createDeadline, deleteDeadline time.Time
	createTimeout                  time.Duration
	deleteStarted                  time.Time
	// addOns, when not nil, holds a cluster the Cluster API objects show
	// ready while its add-ons are pending (holdForAddOns).
	addOns func(statusResult) statusResult
	// addOnWarnings are those of the add-ons' last rendering
	// (annotationAddOnWarnings).
	addOnWarnings string
}

// observation is the pure part of Observe.
func (v view) observation() drivers.Observation {
	c, obs := v.cluster, v.obs
	out := drivers.Observation{NodeGroups: map[string]drivers.NodeGroupObservation{}}
	var version string // what every nodegroup converges to
	if obs.Cluster != nil {
		version = obs.Cluster.Spec.Topology.Version
	}
	for _, ng := range v.nodeGroups {
		out.NodeGroups[ng.UUID] = v.nodeGroup(ng, version)
	}
	res := mapClusterStatus(c.Status, obs, v.now, v.createDeadline, v.deleteDeadline)
	// Further conditions of a usable cluster hold a Ready phase here (one
	// check each, turning it into PhaseInProgress with its reason).
	if v.addOns != nil {
		res = v.addOns(res)
	}
	out.Phase, out.Reason = res.Phase, withLabelWarnings(res.Reason, obs.Cluster, v.addOnWarnings)
	out.Request = v.request()
	if cl := obs.Cluster; cl != nil {
		if ep := cl.Spec.ControlPlaneEndpoint; ep.Host != "" {
			port := ep.Port
			if port == 0 {
				port = 6443
			}
			out.APIAddress = fmt.Sprintf("https://%s:%d", ep.Host, port)
		}
		out.COEVersion = coeVersion(obs)
		out.AppliedTemplateID, out.AppliedKubeTag = applied(v)
		switch c.Status {
		case objects.CreateInProgress:
			out.Started = cl.CreationTimestamp.Time
		case objects.UpdateInProgress, objects.RollbackInProgress:
			out.Started = updateStarted(cl)
		case objects.DeleteInProgress:
			out.Started = v.deleteStarted
		}
	}
	return out
}

// nodeGroup observes one nodegroup of the request.
func (v view) nodeGroup(ng *objects.NodeGroup, version string) drivers.NodeGroupObservation {
	obs := v.obs
	deadline := createDeadlineFor(v.createTimeout, ng, v.createDeadline)
	var res ngResult
	addrs := []string{}
	outdated, machines := 0, 0
	var count *int
	if ng.Role == objects.RoleMaster {
		res = mapControlPlaneNodeGroup(ng, obs.ControlPlane, version, v.now, deadline)
		for _, m := range obs.Machines {
			if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
				machines++
				if a := machineAddress(m); a != "" {
					addrs = append(addrs, a)
				}
				if otherVersion(m, version) {
					outdated++
				}
			}
		}
	} else {
		mdName := mdNameFor(ng)
		md := obs.Deployments[mdName]
		for _, m := range obs.Machines {
			if m.Labels[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == mdName {
				machines++
				if a := machineAddress(m); a != "" {
					addrs = append(addrs, a)
				}
				if otherVersion(m, version) {
					outdated++
				}
			}
		}
		// Whether the nodegroup is autoscaled is read from what the last
		// apply wrote (the template's labels under the cluster's), not
		// worked out again from the cluster's labels alone.
		auto := appliedAutoscaled(md)
		res = mapWorkerNodeGroup(ng, md, machines, auto, version, v.now, deadline)
		// Settled, the autoscaler's size is the nodegroup's node_count; in
		// progress, node_count is what was asked for.
		if auto && md.Spec.Replicas != nil && !strings.HasSuffix(ng.Status, "_IN_PROGRESS") &&
			md.Annotations[annotationSizedNodeCount] != "" {
			n := int(*md.Spec.Replicas)
			count = &n
		}
	}
	res = holdForVersion(res, outdated, version)
	o := drivers.NodeGroupObservation{Phase: res.Phase, Reason: res.Reason, NodeCount: count}
	// Machines without addresses (servers still booting, or a provider
	// that gives none) leave the addresses unreported; no Machine at all
	// clears them.
	if obs.Cluster != nil && (len(addrs) > 0 || machines == 0) {
		slices.Sort(addrs)
		o.NodeAddresses = addrs
	}
	return o
}

// holdForVersion keeps a nodegroup in progress while outdated of its
// Machines run another version than the topology's: for a moment after a
// MachineDeployment has moved to a new version, its status still counts
// the old Machines as up to date (the lifecycle test against the real
// controllers saw a worker complete an upgrade that way).
func holdForVersion(res ngResult, outdated int, version string) ngResult {
	if outdated == 0 || res.Phase != drivers.PhaseReady {
		return res
	}
	return ngResult{Phase: drivers.PhaseInProgress, Reason: fmt.Sprintf("waiting for %d machines to move to %s", outdated, version)}
}

// request is the desired state the Cluster holds: what the driver last
// applied (its topology and annotations), not how far the controllers
// have carried it. Without a Cluster, a create or a deletion is told that
// the back end holds nothing (a create not reached; a deletion done); an
// update of a Cluster that is gone gets no request, and is judged on
// PhaseGone.
func (v view) request() *drivers.BackendRequest {
	cl := v.obs.Cluster
	if cl == nil {
		switch v.cluster.Status {
		case objects.CreateInProgress, objects.DeleteInProgress:
			return &drivers.BackendRequest{}
		}
		return nil
	}
	topo := cl.Spec.Topology
	req := &drivers.BackendRequest{
		Exists:     true,
		Deleting:   cl.DeletionTimestamp != nil,
		TemplateID: cl.Annotations[annotationTemplateID],
		NodeGroups: map[string]drivers.NodeGroupRequestState{},
	}
	byUUID := map[string]clusterv1.MachineDeploymentTopology{}
	for _, md := range topo.Workers.MachineDeployments {
		if u := md.Metadata.Labels[LabelNodeGroupUUID]; u != "" {
			byUUID[u] = md
		}
	}
	for _, ng := range v.nodeGroups {
		if ng.Role == objects.RoleMaster {
			s := drivers.NodeGroupRequestState{}
			if n := topo.ControlPlane.Replicas; n != nil {
				s.NodeCount = ptr(int(*n))
			}
			req.NodeGroups[ng.UUID] = s
			continue
		}
		md, ok := byUUID[ng.UUID]
		if !ok {
			continue
		}
		s := drivers.NodeGroupRequestState{}
		if md.Replicas != nil {
			s.NodeCount = ptr(int(*md.Replicas))
		}
		s.MinNodeCount, s.MaxNodeCount = v.bounds(ng, md)
		req.NodeGroups[ng.UUID] = s
	}
	return req
}

// bounds are the autoscaler's bounds the topology holds for ng, in the
// nodegroup's terms: the row's own min_node_count and max_node_count when
// the topology holds what they (with the labels' defaults) make, else
// what it holds. Nil when not known (no labels, or not autoscaled).
func (v view) bounds(ng *objects.NodeGroup, md clusterv1.MachineDeploymentTopology) (*int64, *int64) {
	minS, ok1 := md.Metadata.Annotations[clusterv1.AutoscalerMinSizeAnnotation]
	maxS, ok2 := md.Metadata.Annotations[clusterv1.AutoscalerMaxSizeAnnotation]
	if v.labels == nil || !ok1 || !ok2 {
		return nil, nil
	}
	minN, err1 := strconv.ParseInt(minS, 10, 64)
	maxN, err2 := strconv.ParseInt(maxS, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, nil
	}
	if wantMin, wantMax := autoscalerRange(*v.labels, ng); wantMin == minN && wantMax == maxN {
		return ptr(ng.MinNodeCount), ptr(deref(ng.MaxNodeCount))
	}
	return &minN, &maxN
}

// applied is the cluster template and kube_tag the back end runs: an
// upgrade's previous ones (recorded on the Cluster) until every control
// plane and worker Machine runs the upgrade's version, the template the
// Cluster was last applied from after that. A failed upgrade rolls the
// cluster's record back to them (the status machine does).
func applied(v view) (templateID, kubeTag string) {
	cl := v.obs.Cluster
	current := cl.Annotations[annotationTemplateID]
	prev := cl.Annotations[annotationPreviousTemplateID]
	if prev == "" || prev == current {
		return current, ""
	}
	version := cl.Spec.Topology.Version
	rolledOut := version != "" && coeVersion(v.obs) == version
	for _, m := range v.obs.Machines {
		if otherVersion(m, version) {
			rolledOut = false
		}
	}
	if rolledOut {
		return current, ""
	}
	return prev, cl.Annotations[annotationPreviousKubeTag]
}

// ObservesSettled implements drivers.SettledObserver: Observe answers from
// the informer cache, and the cluster-autoscaler resizes nodegroups after
// their operations ended; their node_count follows it at every sync.
func (d *Driver) ObservesSettled() bool { return true }
