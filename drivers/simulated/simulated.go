// Package simulated is a cluster driver that models a back end without
// talking to one. It is stateless: the operation in flight and its start
// time live in the cluster's (or nodegroup's) stack_id as
// "sim:<op>:<unix-nanos>", and UpdateClusterStatus completes the operation
// once the configured delay has passed. Any conductor sharing the database
// can therefore poll any simulated cluster.
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
//	sim_hang=true                operations never complete
//	sim_delay=30s                overrides the configured delay
//	sim_health=healthy|unhealthy|unknown|error|hang   what the monitor reports
package simulated

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

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

// StackID returns the stack_id that records op started at t.
func StackID(op string, t time.Time) string {
	return "sim:" + op + ":" + strconv.FormatInt(t.UnixNano(), 10)
}

// ParseStackID splits a simulated stack_id into its operation and start.
func ParseStackID(s *string) (op string, start time.Time, ok bool) {
	if s == nil {
		return "", time.Time{}, false
	}
	parts := strings.Split(*s, ":")
	if len(parts) != 3 || parts[0] != "sim" {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return parts[1], time.Unix(0, n), true
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

func (d *Driver) start(c *objects.Cluster, op string) error {
	if err := d.syncFailure(c, op); err != nil {
		return err
	}
	c.StackID = objects.Str(StackID(op, d.now()))
	return nil
}

// CreateCluster implements drivers.Driver. When the effective delay is 0
// (and sim_hang is not set) the create completes at once: the cluster
// leaves CREATE_COMPLETE (or CREATE_FAILED under sim_fail=create) with its
// API address and versions, and the conductor saves that status. The
// default nodegroups, which the driver is not given, complete on the next
// status poll of an operation on the cluster.
func (d *Driver) CreateCluster(ctx context.Context, c *objects.Cluster, _ int) error {
	if err := d.start(c, OpCreate); err != nil {
		return err
	}
	if d.delayFor(c) > 0 || hung(c) || !inProgress(c.Status) {
		return nil
	}
	return d.UpdateClusterStatus(ctx, c, nil)
}

// UpdateCluster implements drivers.Driver.
func (d *Driver) UpdateCluster(_ context.Context, c *objects.Cluster, _ drivers.ScaleManager, _ bool) error {
	return d.start(c, OpUpdate)
}

// DeleteCluster implements drivers.Driver.
func (d *Driver) DeleteCluster(_ context.Context, c *objects.Cluster) error {
	return d.start(c, OpDelete)
}

// ResizeCluster implements drivers.Driver. The conductor has already set the
// nodegroup's new node_count.
func (d *Driver) ResizeCluster(_ context.Context, c *objects.Cluster, _ drivers.ScaleManager, _ int, _ []string, _ *objects.NodeGroup) error {
	return d.start(c, OpResize)
}

// UpgradeCluster implements drivers.Driver: it records the new template on
// the cluster (the driver's job in Magnum) and the target version on the
// nodegroup(s).
func (d *Driver) UpgradeCluster(_ context.Context, c *objects.Cluster, ct *objects.ClusterTemplate, _ int, ng *objects.NodeGroup, _ drivers.ScaleManager, _ bool) error {
	if err := d.start(c, OpUpgrade); err != nil {
		return err
	}
	if ct != nil {
		if ct.UUID != nil {
			c.ClusterTemplateID = objects.Str(*ct.UUID)
		}
		if tag := ct.Labels["kube_tag"]; tag != "" && ng != nil {
			ng.Version = objects.Str(tag)
		}
	}
	return nil
}

func (d *Driver) startNG(c *objects.Cluster, ng *objects.NodeGroup, op string) error {
	if err := d.syncFailure(c, op); err != nil {
		return err
	}
	ng.StackID = objects.Str(StackID(op, d.now()))
	return nil
}

// CreateNodeGroup implements drivers.Driver.
func (d *Driver) CreateNodeGroup(_ context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	return d.startNG(c, ng, OpNGCreate)
}

// UpdateNodeGroup implements drivers.Driver.
func (d *Driver) UpdateNodeGroup(_ context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	return d.startNG(c, ng, OpNGUpdate)
}

// DeleteNodeGroup implements drivers.Driver.
func (d *Driver) DeleteNodeGroup(_ context.Context, c *objects.Cluster, ng *objects.NodeGroup) error {
	return d.startNG(c, ng, OpNGDelete)
}

// PreDeleteCluster implements drivers.PreDeleter.
func (d *Driver) PreDeleteCluster(_ context.Context, c *objects.Cluster) error {
	return d.syncFailure(c, "pre_delete")
}

// RotateCACertificate implements drivers.CARotator: the roll-out is an
// update that completes like any other.
func (d *Driver) RotateCACertificate(_ context.Context, c *objects.Cluster) error {
	if err := d.start(c, OpRotateCA); err != nil {
		return err
	}
	c.Status = objects.UpdateInProgress
	return nil
}

// RotateCredential implements drivers.CredentialRotator. Nothing is
// simulated beyond failure injection.
func (d *Driver) RotateCredential(_ context.Context, c *objects.Cluster) error {
	return d.syncFailure(c, "rotate_credential")
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

// UpdateClusterStatus implements drivers.Driver. Nodegroups in progress
// finish when their own operation (or the cluster's, whichever started
// later) is older than the delay; the cluster finishes when its operation
// is done and no nodegroup is still in progress, as *_FAILED if any part
// failed, with Heat's "<ng> failed" reason.
func (d *Driver) UpdateClusterStatus(_ context.Context, c *objects.Cluster, ngs []*objects.NodeGroup) error {
	if hung(c) {
		return nil
	}
	now := d.now()
	delay := d.delayFor(c)
	failList := labelList(c.Labels, LabelFail)
	cop, cstart, cok := ParseStackID(c.StackID)
	clusterDone := !cok || !now.Before(cstart.Add(delay))
	deleting := c.Status == objects.DeleteInProgress

	var failed []string
	ngBusy := false
	for _, ng := range ngs {
		op, start, ok := ParseStackID(ng.StackID)
		if cok && (!ok || cstart.After(start)) {
			op, start, ok = cop, cstart, true
		}
		if deleting {
			// The whole cluster goes away: every nodegroup follows it.
			if !clusterDone {
				ngBusy = true
				continue
			}
			if matches(failList, OpDelete) {
				ng.Status = objects.DeleteFailed
				failed = append(failed, ng.Name)
			} else {
				ng.Status = objects.DeleteComplete
				ng.NodeAddresses = nil
			}
			continue
		}
		if !inProgress(ng.Status) {
			if clusterDone && cok {
				d.setNodeAddresses(ng)
			}
			continue
		}
		if ok && now.Before(start.Add(delay)) {
			ngBusy = true
			continue
		}
		p := prefix(ng.Status)
		if matches(failList, op) || matches(failList, strings.ToLower(p)) {
			ng.Status = p + "_FAILED"
			ng.StatusReason = objects.Str(fmt.Sprintf("simulated %s failure", op))
			failed = append(failed, ng.Name)
			continue
		}
		ng.Status = p + "_COMPLETE"
		ng.StatusReason = objects.Str(fmt.Sprintf("simulated %s completed", op))
		if p == "DELETE" {
			ng.NodeAddresses = nil
		} else {
			d.setNodeAddresses(ng)
		}
	}

	if !inProgress(c.Status) || !clusterDone || ngBusy {
		return nil
	}
	p := prefix(c.Status)
	if cok && matches(failList, cop) || matches(failList, strings.ToLower(p)) {
		failed = append([]string{"cluster " + objects.Deref(c.Name)}, failed...)
	}
	if len(failed) > 0 {
		c.Status = p + "_FAILED"
		reasons := make([]string, len(failed))
		for i, n := range failed {
			reasons[i] = n + " failed"
		}
		c.StatusReason = objects.Str(strings.Join(reasons, ", "))
		return nil
	}
	c.Status = p + "_COMPLETE"
	c.StatusReason = objects.Str(fmt.Sprintf("simulated %s completed", strings.ToLower(p)))
	if p != "DELETE" {
		c.APIAddress = objects.Str("https://" + ip(objects.Deref(c.UUID), 1) + ":6443")
		v := d.coe
		if tag := c.Labels["kube_tag"]; tag != "" {
			v = tag
		}
		for _, ng := range ngs {
			if ng.Role == objects.RoleMaster && ng.Version != nil && *ng.Version != "" {
				v = *ng.Version
			}
		}
		c.CoeVersion = objects.Str(v)
		c.ContainerVersion = objects.Str(d.runtime)
	}
	return nil
}

// setNodeAddresses gives the nodegroup one address per node, stable for a
// given nodegroup uuid.
func (d *Driver) setNodeAddresses(ng *objects.NodeGroup) {
	addrs := make([]string, 0, ng.NodeCount)
	for i := int64(0); i < ng.NodeCount; i++ {
		addrs = append(addrs, ip(ng.UUID, 10+int(i)))
	}
	if len(addrs) == 0 {
		addrs = nil
	}
	ng.NodeAddresses = addrs
}

// ip derives a stable 10.x.y.z address from seed.
func ip(seed string, host int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(seed))
	s := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", byte(s>>16), byte(s>>8), host%250+1)
}

// Monitor implements drivers.MonitorProvider.
func (d *Driver) Monitor(_ context.Context, c *objects.Cluster) (drivers.Monitor, error) {
	return monitor{cluster: c}, nil
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
