// Package exampledriver is a cluster driver written outside
// magnum-conductor's repository, the way a third team would write one: it
// implements the driver contract (package drivers of
// github.com/openstack/magnum-conductor), embeds drivers.Unimplemented for
// the methods a later version adds, reads its own option group
// ([example_driver]) through the conductor's DriverEnv, and passes the
// conformance suite (drivers/drivertest).
//
// Its back end is a directory ([example_driver]/state_dir): one JSON file
// per cluster holds the desired state the driver was last asked for (the
// template, each nodegroup's nodes and version, whether it is deleted),
// written in one step from each request as a whole. Nodes take
// [example_driver]/boot_time to boot after a change; Observe reads the file
// and reports what a real back end would: in progress until then, ready
// after, gone once deleted, and the desired state itself
// (Observation.Request). Every conductor sharing the directory observes
// every cluster the same. A cluster label example_fail=<op> (create,
// resize, upgrade, ...) makes that operation fail in the back end.
package exampledriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
	"github.com/openstack/magnum-conductor/service"
)

// Name is the driver's name: a cluster template selects it with
// driver=example, or with cluster_distro=example.
const Name = "example"

// LabelFail names the operations the back end fails for a cluster.
const LabelFail = "example_fail"

// Options are the [example_driver] group.
type Options struct {
	Enabled  bool          `ini:"enabled" default:"false" help:"Register the example driver."`
	StateDir string        `ini:"state_dir" default:"$state_path/example-driver" help:"Directory of the example back end's state, one file per cluster; conductors sharing it share the clusters."`
	BootTime time.Duration `ini:"boot_time" type:"float" unit:"s" default:"10" min:"0" help:"Seconds the example back end's nodes take to boot after a change."`
}

// Factory builds the driver for a conductor (service.Main): nil when
// [example_driver]/enabled is false.
func Factory(_ context.Context, env service.DriverEnv) (drivers.Driver, error) {
	var o Options
	if err := env.Options("example_driver", &o); err != nil {
		return nil, err
	}
	if !o.Enabled {
		return nil, nil
	}
	return New(o, time.Now, env.Log.With("component", "example_driver"))
}

// Driver is the example driver.
type Driver struct {
	drivers.Unimplemented
	dir  string
	boot time.Duration
	now  func() time.Time
	log  *slog.Logger
	mu   sync.Mutex // one writer per process; the files are replaced atomically
}

// New returns the driver over o.StateDir (created when missing).
func New(o Options, now func() time.Time, log *slog.Logger) (*Driver, error) {
	if o.StateDir == "" {
		return nil, errors.New("[example_driver]/state_dir is empty")
	}
	if err := os.MkdirAll(o.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("[example_driver]/state_dir: %w", err)
	}
	return &Driver{dir: o.StateDir, boot: o.BootTime, now: now, log: log}, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Provides implements drivers.Driver.
func (d *Driver) Provides() []drivers.Key {
	return []drivers.Key{{ServerType: "vm", OS: Name, COE: "kubernetes"}}
}

// state is what the back end holds for one cluster.
type state struct {
	Template string `json:"template"`
	// Applied is the template before the last upgrade, which a failed
	// upgrade leaves the nodes on.
	Applied    string                `json:"applied,omitempty"`
	AppliedTag string                `json:"applied_tag,omitempty"`
	Deleted    bool                  `json:"deleted,omitempty"`
	Changed    time.Time             `json:"changed"`
	Failing    string                `json:"failing,omitempty"` // the operation the back end gave up on
	NodeGroups map[string]*nodeGroup `json:"nodegroups"`
	Seq        int                   `json:"seq"`
}

type nodeGroup struct {
	Name    string   `json:"name"`
	Nodes   []string `json:"nodes"`
	Version string   `json:"version,omitempty"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F-]{1,64}$`)

func (d *Driver) path(c *objects.Cluster) (string, error) {
	u := objects.Deref(c.UUID)
	if !uuidRE.MatchString(u) {
		return "", exception.InvalidParameterValue(fmt.Sprintf("cluster uuid %q", u))
	}
	return filepath.Join(d.dir, u+".json"), nil
}

func (d *Driver) load(c *objects.Cluster) (*state, error) {
	p, err := d.path(c)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("example back end: %w", err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("example back end: %s: %w", p, err)
	}
	return &s, nil
}

func (d *Driver) store(c *objects.Cluster, s *state) error {
	p, err := d.path(c)
	if err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("example back end: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("example back end: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("example back end: %w", err)
	}
	return os.Rename(tmp.Name(), p)
}

// change is one operation's change of the desired state, besides what the
// request's rows say.
type change struct {
	op string
	// template and versions: an upgrade's.
	template string
	versions map[string]string
	remove   []string
	deleted  bool
}

// apply writes req's desired state (its nodegroups as a whole, with ch) in
// one step. A request the back end already holds changes nothing: the
// repeated call after a lost reply restarts nothing.
func (d *Driver) apply(ctx context.Context, req drivers.ClusterRequest, ch change) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	if req.Cluster == nil {
		return drivers.Result{}, exception.InvalidParameterValue("the request has no cluster")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.load(req.Cluster)
	if err != nil {
		return drivers.Result{}, err
	}
	if s == nil {
		if ch.op != "create" {
			return drivers.Result{}, fmt.Errorf("example back end: cluster %s does not exist", objects.Deref(req.Cluster.UUID))
		}
		s = &state{NodeGroups: map[string]*nodeGroup{}}
	}
	before, _ := json.Marshal(s)
	template := objects.Deref(req.Cluster.ClusterTemplateID)
	if ch.template != "" {
		template = ch.template
	}
	if template != s.Template && s.Template != "" {
		s.Applied, s.AppliedTag = s.Template, req.Cluster.Labels["kube_tag"]
	}
	s.Template, s.Deleted = template, s.Deleted || ch.deleted
	keep := map[string]bool{}
	for _, ng := range req.NodeGroups {
		if ng.Status == objects.DeleteInProgress || ng.Status == objects.DeleteComplete {
			continue
		}
		keep[ng.UUID] = true
		n := s.NodeGroups[ng.UUID]
		if n == nil {
			n = &nodeGroup{Name: ng.Name}
			s.NodeGroups[ng.UUID] = n
		}
		n.Version = objects.Deref(ng.Version)
		if v, ok := ch.versions[ng.UUID]; ok {
			n.Version = v
		}
		want := int(ng.NodeCount)
		if len(n.Nodes) > want {
			for _, r := range ch.remove {
				if i := slices.Index(n.Nodes, r); i >= 0 && len(n.Nodes) > want {
					n.Nodes = slices.Delete(n.Nodes, i, i+1)
				}
			}
		}
		for len(n.Nodes) > want {
			n.Nodes = n.Nodes[:len(n.Nodes)-1]
		}
		for len(n.Nodes) < want {
			s.Seq++
			n.Nodes = append(n.Nodes, fmt.Sprintf("%s-%d", ng.Name, s.Seq))
		}
	}
	for u := range s.NodeGroups {
		if !keep[u] {
			delete(s.NodeGroups, u)
		}
	}
	s.Failing = ""
	if fails(req.Cluster, ch.op) {
		s.Failing = ch.op
	}
	after, _ := json.Marshal(s)
	if string(before) != string(after) {
		s.Changed = d.now()
		if err := d.store(req.Cluster, s); err != nil {
			return drivers.Result{}, err
		}
		d.log.Debug("example back end changed", "cluster_uuid", objects.Deref(req.Cluster.UUID), "op", ch.op)
	}
	// The back end's name for the cluster: the stack_id.
	return drivers.Result{StackID: "example-" + objects.Deref(req.Cluster.UUID)}, nil
}

func fails(c *objects.Cluster, op string) bool {
	for _, f := range strings.Split(c.Labels[LabelFail], ",") {
		if strings.TrimSpace(f) == op {
			return true
		}
	}
	return false
}

// CreateCluster implements drivers.Driver.
func (d *Driver) CreateCluster(ctx context.Context, req drivers.CreateClusterRequest) (drivers.Result, error) {
	return d.apply(ctx, req.ClusterRequest, change{op: "create"})
}

// UpdateCluster implements drivers.Driver.
func (d *Driver) UpdateCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.apply(ctx, req, change{op: "update"})
}

// ResizeCluster implements drivers.Driver: the nodes named in
// NodesToRemove go first.
func (d *Driver) ResizeCluster(ctx context.Context, req drivers.ResizeRequest) (drivers.Result, error) {
	return d.apply(ctx, req.ClusterRequest, change{op: "resize", remove: req.NodesToRemove})
}

// UpgradeCluster implements drivers.Driver: through a default nodegroup
// the cluster moves to NewTemplate and every nodegroup to its kube_tag;
// through another, that nodegroup only.
func (d *Driver) UpgradeCluster(ctx context.Context, req drivers.UpgradeRequest) (drivers.Result, error) {
	if req.NewTemplate == nil || req.NodeGroup == nil {
		return drivers.Result{}, exception.InvalidParameterValue("an upgrade needs its template and nodegroup")
	}
	ch := change{op: "upgrade", versions: map[string]string{}}
	tag, hasTag := req.NewTemplate.Labels["kube_tag"]
	if req.NodeGroup.IsDefault {
		ch.template = objects.Deref(req.NewTemplate.UUID)
	}
	for _, ng := range req.NodeGroups {
		if hasTag && (ng.UUID == req.NodeGroup.UUID || (req.NodeGroup.IsDefault && ng.Status == objects.UpdateInProgress)) {
			ch.versions[ng.UUID] = tag
		}
	}
	return d.apply(ctx, req.ClusterRequest, ch)
}

// DeleteCluster implements drivers.Driver.
func (d *Driver) DeleteCluster(ctx context.Context, req drivers.ClusterRequest) (drivers.Result, error) {
	return d.apply(ctx, req, change{op: "delete", deleted: true})
}

// CreateNodeGroup implements drivers.Driver.
func (d *Driver) CreateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.apply(ctx, req.ClusterRequest, change{op: "nodegroup_create"})
}

// UpdateNodeGroup implements drivers.Driver.
func (d *Driver) UpdateNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.apply(ctx, req.ClusterRequest, change{op: "nodegroup_update"})
}

// DeleteNodeGroup implements drivers.Driver.
func (d *Driver) DeleteNodeGroup(ctx context.Context, req drivers.NodeGroupRequest) (drivers.Result, error) {
	return d.apply(ctx, req.ClusterRequest, change{op: "nodegroup_delete"})
}

// Observe implements drivers.Driver: what the back end's file says, as of
// now. It writes nothing.
func (d *Driver) Observe(ctx context.Context, req drivers.ObserveRequest) (drivers.Observation, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Observation{}, err
	}
	if req.Cluster == nil {
		return drivers.Observation{}, exception.InvalidParameterValue("the request has no cluster")
	}
	s, err := d.load(req.Cluster)
	if err != nil {
		return drivers.Observation{}, err
	}
	if s == nil {
		return drivers.Observation{Phase: drivers.PhaseGone, Request: &drivers.BackendRequest{}}, nil
	}
	booted := !d.now().Before(s.Changed.Add(d.boot))
	o := drivers.Observation{Started: s.Changed, NodeGroups: map[string]drivers.NodeGroupObservation{},
		Request: &drivers.BackendRequest{Exists: true, Deleting: s.Deleted, TemplateID: s.Template,
			NodeGroups: map[string]drivers.NodeGroupRequestState{}}}
	if s.Deleted {
		if booted {
			return drivers.Observation{Phase: drivers.PhaseGone, Reason: "deleted", Request: &drivers.BackendRequest{}}, nil
		}
		o.Phase, o.Reason = drivers.PhaseInProgress, "deleting"
		return o, nil
	}
	for u, ng := range s.NodeGroups {
		n := len(ng.Nodes)
		o.Request.NodeGroups[u] = drivers.NodeGroupRequestState{NodeCount: &n, Version: ng.Version}
		ngo := drivers.NodeGroupObservation{Phase: drivers.PhaseInProgress, Reason: "booting"}
		if booted {
			ngo = drivers.NodeGroupObservation{Phase: drivers.PhaseReady, NodeAddresses: addresses(ng.Nodes), Version: ng.Version}
		}
		if req.NodeGroupByUUID(u) != nil {
			o.NodeGroups[u] = ngo
		}
	}
	for _, ng := range req.NodeGroups {
		if _, ok := s.NodeGroups[ng.UUID]; !ok && ng.Status == objects.DeleteInProgress {
			o.NodeGroups[ng.UUID] = drivers.NodeGroupObservation{Phase: drivers.PhaseGone}
		}
	}
	switch {
	case !booted:
		o.Phase, o.Reason = drivers.PhaseInProgress, fmt.Sprintf("booting (%s)", d.boot)
	case s.Failing != "":
		o.Phase, o.Reason = drivers.PhaseFailed, "the example back end gave up on "+s.Failing
		o.AppliedTemplateID, o.AppliedKubeTag = s.Applied, s.AppliedTag
	default:
		o.Phase = drivers.PhaseReady
		o.APIAddress = "https://" + address(objects.Deref(req.Cluster.UUID)) + ":6443"
	}
	return o, nil
}

// NodeNames are the names of a nodegroup's nodes, as ResizeRequest's
// NodesToRemove names them.
func (d *Driver) NodeNames(c *objects.Cluster, ngUUID string) ([]string, error) {
	s, err := d.load(c)
	if err != nil || s == nil || s.NodeGroups[ngUUID] == nil {
		return nil, err
	}
	return slices.Clone(s.NodeGroups[ngUUID].Nodes), nil
}

func addresses(nodes []string) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = address(n)
	}
	return out
}

// address is a stable private address for a name.
func address(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	s := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", byte(s>>16), byte(s>>8), byte(s)%254+1)
}
