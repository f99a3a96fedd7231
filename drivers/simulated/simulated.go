// Package simulated is a cluster driver that models a back end without
// talking to one. It is stateless: the operation in flight, its start time
// and a fingerprint of the desired state it was given live in the stack_id
// it returns for the cluster (or the nodegroup) as
// "sim:<op>:<unix-nanos>:<fingerprint>", which the conductor stores, and
// Observe reports the operation done once the configured delay has passed.
// Any conductor sharing the database can therefore observe any simulated
// cluster. It is built on the driver contract like any other driver
// (package drivers): it reports observations, and the conductor's status
// machine decides the statuses.
//
// The simulated back end holds the desired state of the last request it
// was given (the newest stack_id of the cluster and its nodegroups): when
// the rows describe that state (same fingerprint), Observe reports it in
// Observation.Request; when they describe another one (an operation claimed
// whose driver call never came), it reports the back end Behind, so that
// the conductor resumes the operation. An upgrade's stack_id also records
// the template and kube_tag it upgrades from, reported as
// AppliedTemplateID and AppliedKubeTag when the upgrade fails.
//
// Behaviour per cluster is steered by labels:
//
//	sim_fail=create,update,...   the operation ends *_FAILED (ops: create,
//	                             update, resize, upgrade, delete, rollback,
//	                             ng_create, ng_update, ng_delete; "update"
//	                             also covers resize, upgrade and ng_*)
//	sim_fail_sync=create,...     the driver call itself returns an error
//	                             (also rotate_ca, rotate_credential,
//	                             pre_delete)
//	sim_hang=true                operations never complete (until their
//	                             deadline fails them: Started is reported)
//	sim_delay=30s                overrides the configured delay
//	sim_health=healthy|unhealthy|unknown|error|hang   what the monitor reports
package simulated

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// DefaultName is the name the driver registers under.
const DefaultName = "simulated"

// Label names understood by the driver.
const (
	LabelFail     = "sim_fail"
	LabelFailSync = "sim_fail_sync"
	LabelHang     = "sim_hang"
	LabelDelay    = "sim_delay"
	LabelHealth   = "sim_health"
)

// Operation names recorded in stack_id.
const (
	OpCreate   = "create"
	OpUpdate   = "update"
	OpResize   = "resize"
	OpUpgrade  = "upgrade"
	OpDelete   = "delete"
	OpRotateCA = "rotate_ca"
	OpNGCreate = "ng_create"
	OpNGUpdate = "ng_update"
	OpNGDelete = "ng_delete"
)

// Options configure the driver. The zero value is usable.
type Options struct {
	// Name is the driver name (default "simulated").
	Name string
	// Distros are the cluster_distro values served for (vm, <distro>,
	// kubernetes) (default ["simulated"]).
	Distros []string
	// Delay is how long every operation takes. With 0 a cluster create
	// completes inside CreateCluster (as a back end that finishes at once
	// would report it, and as the Python benchmark's zero-delay driver
	// does); every other operation completes on the next status poll.
	Delay time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// COEVersion is reported as coe_version when no kube_tag label is set
	// (default "v1.33.1").
	COEVersion string
	// ContainerVersion is reported as container_version (default "1.7.27").
	ContainerVersion string
}

// Driver is the simulated driver.
type Driver struct {
	drivers.Unimplemented
	name    string
	keys    []drivers.Key
	delay   time.Duration
	now     func() time.Time
	coe     string
	runtime string
}

// Compile-time checks of the optional interfaces.
var (
	_ drivers.Driver                = (*Driver)(nil)
	_ drivers.MonitorProvider       = (*Driver)(nil)
	_ drivers.CARotator             = (*Driver)(nil)
	_ drivers.CredentialRotator     = (*Driver)(nil)
	_ drivers.PreDeleter            = (*Driver)(nil)
	_ drivers.MasterResizeValidator = (*Driver)(nil)
)

// New returns a simulated driver.
func New(o Options) *Driver {
	d := &Driver{name: o.Name, delay: o.Delay, now: o.Now, coe: o.COEVersion, runtime: o.ContainerVersion}
	if d.name == "" {
		d.name = DefaultName
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.coe == "" {
		d.coe = "v1.33.1"
	}
	if d.runtime == "" {
		d.runtime = "1.7.27"
	}
	distros := o.Distros
	if len(distros) == 0 {
		distros = []string{"simulated"}
	}
	for _, os := range distros {
		d.keys = append(d.keys, drivers.Key{ServerType: "vm", OS: os, COE: "kubernetes"})
	}
	return d
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return d.name }

// Provides implements drivers.Driver.
func (d *Driver) Provides() []drivers.Key { return append([]drivers.Key(nil), d.keys...) }

// StackID returns the stack_id that records op started at t (without a
// fingerprint: the form of stack_ids written before there was one).
func StackID(op string, t time.Time) string {
	return "sim:" + op + ":" + strconv.FormatInt(t.UnixNano(), 10)
}

// ParseStackID splits a simulated stack_id into its operation and start.
func ParseStackID(s *string) (op string, start time.Time, ok bool) {
	st, ok := parseStack(s)
	return st.op, st.start, ok
}

// stack is what a simulated stack_id records.
type stack struct {
	op    string
	start time.Time
	// fp fingerprints the desired state the operation was given ("" in
	// stack_ids written before fingerprints).
	fp string
	// fromTemplate and fromTag are, for an upgrade, what it upgrades from.
	fromTemplate, fromTag string
}

func (st stack) String() string {
	s := StackID(st.op, st.start) + ":" + st.fp
	if st.op == OpUpgrade {
		s += ":" + st.fromTemplate + ":" + st.fromTag
	}
	return s
}

func parseStack(s *string) (stack, bool) {
	if s == nil {
		return stack{}, false
	}
	parts := strings.SplitN(*s, ":", 6)
	if len(parts) < 3 || parts[0] != "sim" {
		return stack{}, false
	}
	n, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return stack{}, false
	}
	st := stack{op: parts[1], start: time.Unix(0, n)}
	if len(parts) > 3 {
		st.fp = parts[3]
	}
	if len(parts) == 6 {
		st.fromTemplate, st.fromTag = parts[4], parts[5]
	}
	return st, true
}

// desired is the desired state a request describes: the template, and
// per nodegroup not being deleted its size and version.
type desired struct {
	template string
	ngs      map[string]drivers.NodeGroupRequestState
}

// desiredOf is the desired state of the rows in req.
func desiredOf(req drivers.ClusterRequest) desired {
	d := desired{template: objects.Deref(req.Cluster.ClusterTemplateID), ngs: map[string]drivers.NodeGroupRequestState{}}
	for _, ng := range req.NodeGroups {
		if ng.Status == objects.DeleteInProgress || ng.Status == objects.DeleteComplete {
			continue
		}
		n := int(ng.NodeCount)
		minN, maxN := ng.MinNodeCount, int64(0)
		if ng.MaxNodeCount != nil {
			maxN = *ng.MaxNodeCount
		}
		d.ngs[ng.UUID] = drivers.NodeGroupRequestState{NodeCount: &n, Version: objects.Deref(ng.Version),
			MinNodeCount: &minN, MaxNodeCount: &maxN}
	}
	return d
}

// fingerprint is a short, stable digest of d.
func (d desired) fingerprint() string {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "t=%s\n", d.template)
	uuids := make([]string, 0, len(d.ngs))
	for u := range d.ngs {
		uuids = append(uuids, u)
	}
	sort.Strings(uuids)
	for _, u := range uuids {
		ng := d.ngs[u]
		// The autoscaler's bounds (what a nodegroup update changes) only
		// when set, so that the fingerprints recorded before they counted
		// stay those of nodegroups without bounds.
		if lo, hi := *ng.MinNodeCount, *ng.MaxNodeCount; lo != 0 || hi != 0 {
			_, _ = fmt.Fprintf(h, "ng=%s:%d:%s:%d:%d\n", u, *ng.NodeCount, ng.Version, lo, hi)
			continue
		}
		_, _ = fmt.Fprintf(h, "ng=%s:%d:%s\n", u, *ng.NodeCount, ng.Version)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

func labelList(labels map[string]string, key string) []string {
	v := strings.TrimSpace(labels[key])
	if v == "" {
		return nil
	}
	out := strings.Split(v, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// matches reports whether the label list names op (or its family: "update"
// covers resize, upgrade and the nodegroup updates; "create" and "delete"
// cover ng_create and ng_delete).
func matches(list []string, op string) bool {
	for _, l := range list {
		switch {
		case l == op, l == "all":
			return true
		case l == OpUpdate && (op == OpResize || op == OpUpgrade || op == OpRotateCA || strings.HasPrefix(op, "ng_")):
			return true
		case l == OpCreate && op == OpNGCreate, l == OpDelete && op == OpNGDelete:
			return true
		}
	}
	return false
}

func (d *Driver) syncFailure(c *objects.Cluster, op string) error {
	if matches(labelList(c.Labels, LabelFailSync), op) {
		return fmt.Errorf("simulated %s failure (label %s)", op, LabelFailSync)
	}
	return nil
}

// start records op as started now, given req's desired state: the
// stack_id of the result.
func (d *Driver) start(req drivers.ClusterRequest, op string) (drivers.Result, error) {
	if err := d.syncFailure(req.Cluster, op); err != nil {
		return drivers.Result{}, err
	}
	st := stack{op: op, start: d.now(), fp: desiredOf(req).fingerprint()}
	return drivers.Result{StackID: st.String()}, nil
}

// CreateCluster implements drivers.Driver. When the effective delay is 0
// (and sim_hang is not set) the create completes at once: the result
// carries the observation of a finished create (CREATE_FAILED under
// sim_fail=create), cluster and default nodegroups alike.
func (d *Driver) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	res, err := d.start(req.ClusterRequest, OpCreate)
	if err != nil || d.delayFor(req.Cluster) > 0 || hung(req.Cluster) {
		return res, err
	}
	// Observe the cluster as it is once the conductor stored the result.
	after := req.ClusterRequest
	after.Cluster = objects.Clone(req.Cluster)
	after.Cluster.StackID = objects.Str(res.StackID)
	obs, err := d.Observe(ctx, drivers.ObserveRequest{ClusterRequest: after})
	if err != nil {
		return drivers.Result{}, err
	}
	res.Observation = &obs
	return res, nil
}

// UpdateCluster implements drivers.Driver. The default worker in the
// request already has its new node_count.
func (d *Driver) UpdateCluster(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.start(req, OpUpdate)
}

// DeleteCluster implements drivers.Driver.
func (d *Driver) DeleteCluster(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.start(req, OpDelete)
}

// ResizeCluster implements drivers.Driver. The conductor has already set the
// nodegroup's new node_count.
func (d *Driver) ResizeCluster(_ context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return d.start(req.ClusterRequest, OpResize)
}

// UpgradeCluster implements drivers.Driver: the desired state is the
// request's with NewTemplate (through a default nodegroup) and its kube_tag
// as the version of the nodegroups upgraded, as the conductor records them;
// the stack_id also keeps the template and kube_tag it upgrades from.
func (d *Driver) UpgradeCluster(_ context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	if err := d.syncFailure(req.Cluster, OpUpgrade); err != nil {
		return drivers.Result{}, err
	}
	if req.NewTemplate == nil || req.NodeGroup == nil {
		return drivers.Result{}, exception.InvalidParameterValue("an upgrade needs its new template and nodegroup")
	}
	want := desiredOf(req.ClusterRequest)
	tag, hasTag := req.NewTemplate.Labels["kube_tag"]
	if req.NodeGroup.IsDefault {
		want.template = objects.Deref(req.NewTemplate.UUID)
	}
	for _, ng := range req.NodeGroups {
		moved := ng.UUID == req.NodeGroup.UUID || (req.NodeGroup.IsDefault && ng.Status == objects.UpdateInProgress)
		if st, ok := want.ngs[ng.UUID]; ok && moved && hasTag {
			st.Version = tag
			want.ngs[ng.UUID] = st
		}
	}
	st := stack{op: OpUpgrade, start: d.now(), fp: want.fingerprint(),
		fromTemplate: objects.Deref(req.Cluster.ClusterTemplateID), fromTag: req.Cluster.Labels["kube_tag"]}
	return drivers.Result{StackID: st.String()}, nil
}

// CreateNodeGroup implements drivers.Driver; the stack_id goes to the
// nodegroup.
func (d *Driver) CreateNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.start(req.ClusterRequest, OpNGCreate)
}

// UpdateNodeGroup implements drivers.Driver.
func (d *Driver) UpdateNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.start(req.ClusterRequest, OpNGUpdate)
}

// DeleteNodeGroup implements drivers.Driver.
func (d *Driver) DeleteNodeGroup(_ context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.start(req.ClusterRequest, OpNGDelete)
}

// PreDeleteCluster implements drivers.PreDeleter.
func (d *Driver) PreDeleteCluster(_ context.Context, req drivers.ClusterRequest) error {
	return d.syncFailure(req.Cluster, "pre_delete")
}

// RotateCACertificate implements drivers.CARotator: the roll-out is an
// update that completes like any other.
func (d *Driver) RotateCACertificate(_ context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.start(req, OpRotateCA)
}

// RotateCredential implements drivers.CredentialRotator. Nothing is
// simulated beyond failure injection.
func (d *Driver) RotateCredential(_ context.Context, req drivers.ClusterRequest) error {
	return d.syncFailure(req.Cluster, "rotate_credential")
}

// ValidateMasterResize implements drivers.MasterResizeValidator: an odd
// count of at least one.
func (d *Driver) ValidateMasterResize(nodeCount int) error {
	if nodeCount < 1 || nodeCount%2 == 0 {
		return fmt.Errorf("master node count must be odd and at least 1, not %d", nodeCount)
	}
	return nil
}

func (d *Driver) delayFor(c *objects.Cluster) time.Duration {
	if v := c.Labels[LabelDelay]; v != "" {
		if dur, err := time.ParseDuration(v); err == nil && dur >= 0 {
			return dur
		}
	}
	return d.delay
}

func hung(c *objects.Cluster) bool {
	v := strings.ToLower(c.Labels[LabelHang])
	return v == "true" || v == "1" || v == "yes"
}

func inProgress(status string) bool { return strings.HasSuffix(status, "_IN_PROGRESS") }

func prefix(status string) string {
	p, _, _ := strings.Cut(status, "_")
	return p
}

// Observe implements drivers.Driver. The cluster's operation is done once
// the delay has passed since its stack_id's start (a cluster without a
// simulated stack_id has nothing in flight); a nodegroup's, since its own
// stack_id's start or the cluster's, whichever is later. A done operation
// is ready, failed under sim_fail (by operation, or by the status' kind),
// and, for a deletion, gone. A cluster under sim_hang is always in
// progress.
func (d *Driver) Observe(_ context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	c := req.Cluster
	if c == nil {
		return drivers.Observation{}, exception.InvalidParameterValue("observe needs the cluster")
	}
	held, last := backendRequest(req.ClusterRequest)
	// The current operation began with the newest stack_id of the cluster
	// and its nodegroups: a nodegroup operation's is the nodegroup's (the
	// cluster's own records an earlier operation).
	if hung(c) {
		return drivers.Observation{Phase: drivers.PhaseInProgress, Request: held, Started: last.start}, nil
	}
	now := d.now()
	delay := d.delayFor(c)
	failList := labelList(c.Labels, LabelFail)
	cop, cstart, cok := ParseStackID(c.StackID)
	done := !cok || !now.Before(cstart.Add(delay))
	obs := drivers.Observation{NodeGroups: map[string]drivers.NodeGroupObservation{}, Request: held, Started: last.start}
	p := prefix(c.Status)
	if !inProgress(c.Status) {
		p = ""
	}
	failed := func(op, kind string) bool {
		return matches(failList, op) || (kind != "" && matches(failList, strings.ToLower(kind)))
	}

	if c.Status == objects.DeleteInProgress || (cok && cop == OpDelete) {
		// The whole cluster goes: its nodegroups with it. Once gone, the
		// back end holds nothing for it, whatever the rows say.
		switch {
		case !done:
			obs.Phase = drivers.PhaseInProgress
		case failed(OpDelete, p):
			obs.Phase, obs.Reason = drivers.PhaseFailed, "simulated delete failure"
		default:
			obs.Phase, obs.Reason = drivers.PhaseGone, "simulated delete completed"
			obs.Request = &drivers.BackendRequest{}
		}
		return obs, nil
	}

	for _, ng := range req.NodeGroups {
		op, start, ok := ParseStackID(ng.StackID)
		if cok && (!ok || cstart.After(start)) {
			op, start, ok = cop, cstart, true
		}
		o := drivers.NodeGroupObservation{Phase: drivers.PhaseReady}
		switch {
		case !inProgress(ng.Status):
			if done && cok {
				o.NodeAddresses = addresses(ng)
			}
		case ok && now.Before(start.Add(delay)):
			o.Phase = drivers.PhaseInProgress
		case failed(op, prefix(ng.Status)):
			o.Phase, o.Reason = drivers.PhaseFailed, fmt.Sprintf("simulated %s failure", op)
		case ng.Status == objects.DeleteInProgress:
			o.Phase, o.Reason = drivers.PhaseGone, fmt.Sprintf("simulated %s completed", op)
		default:
			o.Reason = fmt.Sprintf("simulated %s completed", op)
			o.NodeAddresses = addresses(ng)
		}
		obs.NodeGroups[ng.UUID] = o
	}

	switch {
	case !done:
		obs.Phase = drivers.PhaseInProgress
		return obs, nil
	case p != "" && (cok && matches(failList, cop) || matches(failList, strings.ToLower(p))):
		obs.Phase, obs.Reason = drivers.PhaseFailed, "simulated "+strings.ToLower(p)+" failure"
		if last.op == OpUpgrade && last.fromTemplate != "" {
			// A failed upgrade leaves the back end on what it ran.
			obs.AppliedTemplateID, obs.AppliedKubeTag = last.fromTemplate, last.fromTag
		}
	default:
		obs.Phase = drivers.PhaseReady
		if p != "" {
			obs.Reason = "simulated " + strings.ToLower(p) + " completed"
		}
	}
	obs.APIAddress = "https://" + ip(objects.Deref(c.UUID), 1) + ":6443"
	v := d.coe
	if tag := c.Labels["kube_tag"]; tag != "" {
		v = tag
	}
	for _, ng := range req.NodeGroups {
		if ng.Role == objects.RoleMaster && ng.Version != nil && *ng.Version != "" {
			v = *ng.Version
		}
	}
	obs.COEVersion = v
	obs.ContainerVersion = d.runtime
	return obs, nil
}

// backendRequest is the desired state the simulated back end holds for the
// request's cluster: that of the newest stack_id of the cluster and its
// nodegroups. Nil when none records a fingerprint (a stack_id written
// before there were any: not reported); not Exists without any simulated
// stack_id.
func backendRequest(req drivers.ClusterRequest) (*drivers.BackendRequest, stack) {
	rows := desiredOf(req)
	fp := rows.fingerprint()
	var last stack
	found := false
	for _, s := range append([]*string{req.Cluster.StackID}, stackIDs(req.NodeGroups)...) {
		st, ok := parseStack(s)
		// The newest wins; of two as new (a clock that did not move), the
		// one that matches the rows.
		if ok && (!found || st.start.After(last.start) || st.start.Equal(last.start) && st.fp == fp) {
			last, found = st, true
		}
	}
	switch {
	case !found:
		return &drivers.BackendRequest{}, last
	case last.fp == "":
		return nil, last
	}
	held := &drivers.BackendRequest{Exists: true, Deleting: last.op == OpDelete}
	if fp != last.fp {
		held.Behind = true
		return held, last
	}
	held.TemplateID, held.NodeGroups = rows.template, rows.ngs
	return held, last
}

func stackIDs(ngs []*objects.NodeGroup) []*string {
	out := make([]*string, len(ngs))
	for i, ng := range ngs {
		out[i] = ng.StackID
	}
	return out
}

// addresses gives the nodegroup one address per node, stable for a given
// nodegroup uuid.
func addresses(ng *objects.NodeGroup) []string {
	addrs := make([]string, 0, ng.NodeCount)
	for i := int64(0); i < ng.NodeCount; i++ {
		addrs = append(addrs, ip(ng.UUID, 10+int(i)))
	}
	return addrs
}

// ip derives a stable 10.x.y.z address from seed.
func ip(seed string, host int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(seed))
	s := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", byte(s>>16), byte(s>>8), host%250+1)
}

// Monitor implements drivers.MonitorProvider.
func (d *Driver) Monitor(_ context.Context, req drivers.ClusterRequest) (drivers.Monitor, error) {
	return monitor{cluster: req.Cluster}, nil
}

type monitor struct{ cluster *objects.Cluster }

// PollHealth reports what the sim_health label says; HEALTHY by default,
// with a reason shaped like the Kubernetes monitor's.
func (m monitor) PollHealth(ctx context.Context) (drivers.Health, error) {
	name := objects.Deref(m.cluster.Name)
	switch strings.ToLower(m.cluster.Labels[LabelHealth]) {
	case "unhealthy":
		return drivers.Health{Status: objects.Unhealthy, Reason: map[string]string{
			"api": "ok", name + "-node-0.Ready": "False"}}, nil
	case "unknown":
		return drivers.Health{Status: objects.Unknown, Reason: map[string]string{
			"api": "The cluster " + name + " is not accessible."}}, nil
	case "error":
		return drivers.Health{}, fmt.Errorf("simulated health poll failure")
	case "hang":
		<-ctx.Done()
		return drivers.Health{}, ctx.Err()
	}
	return drivers.Health{Status: objects.Healthy, Reason: map[string]string{
		"api": "ok", name + "-node-0.Ready": "True"}}, nil
}
