package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

func clusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Clusters"}
	cmd.AddCommand(clusterCreateCmd(g), clusterListCmd(g), clusterShowCmd(g), clusterUpdateCmd(g),
		clusterResizeCmd(g), clusterUpgradeCmd(g), clusterDeleteCmd(g), clusterConfigCmd(g))
	return cmd
}

// waitFlags are --wait and --wait-timeout of a command that starts an
// operation.
type waitFlags struct {
	wait  bool
	limit time.Duration
}

func (w *waitFlags) register(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&w.wait, "wait", false, "wait until "+what+", showing each status and status_reason with the time elapsed; "+
		"exit 0 only when the operation completed")
	fs.DurationVar(&w.limit, "wait-timeout", 0, "how long --wait waits before it exits 3 with the operation still going on "+
		"(default: a create's create_timeout and 5 minutes; 65 minutes for the rest)")
}

func (w *waitFlags) check() error {
	if w.limit < 0 {
		return usagef("--wait-timeout must not be negative, not %s", w.limit)
	}
	return nil
}

func (w *waitFlags) limitFor(kind string, createTimeout int64) time.Duration {
	if w.limit > 0 {
		return w.limit
	}
	return defaultWaitLimit(kind, createTimeout)
}

// clusterOperation is the wait for an operation of kind on cluster c.
func (g *globals) clusterOperation(s *session, c *objects.Cluster, kind string, w waitFlags) operation {
	uuid := objects.Deref(c.UUID)
	return operation{kind: kind, subject: clusterLabel(c), limit: w.limitFor(kind, derefInt(c.CreateTimeout)),
		probe: func(ctx context.Context) (observed, error) {
			cl, err := classAction[*objects.Cluster](g.requestContext(ctx, true), s, objects.NameCluster, "get_by_uuid", uuid)
			if isClass(err, exception.ClassClusterNotFound) {
				return observed{gone: true}, nil
			}
			if err != nil {
				return observed{}, err
			}
			return observed{status: cl.Status, reason: objects.Deref(cl.StatusReason)}, nil
		}}
}

func clusterLabel(c *objects.Cluster) string {
	if n := objects.Deref(c.Name); n != "" {
		return fmt.Sprintf("cluster %s (%s)", n, objects.Deref(c.UUID))
	}
	return "cluster " + objects.Deref(c.UUID)
}

// isClass reports whether err is the conductor's exception of class cl
// (or a subclass).
func isClass(err error, cl exception.Class) bool {
	var ee *exception.Error
	return errors.As(err, &ee) && exception.IsSubclass(ee.Class, cl)
}

// accepted prints what the conductor answered to a change (the cluster's
// status then), or follows the operation with --wait.
func (g *globals) accepted(ctx context.Context, s *session, c *objects.Cluster, kind string, w waitFlags) error {
	if w.wait {
		return g.wait(ctx, g.clusterOperation(s, c, kind, w))
	}
	return g.print(table{header: []string{"UUID", "NAME", "STATUS"},
		rows:  [][]string{{cell(c.UUID), cell(c.Name), cell(c.Status)}},
		value: map[string]any{"uuid": objects.Deref(c.UUID), "name": objects.Deref(c.Name), "status": c.Status}})
}

// decodeCluster reads the cluster a change returned; when it returned none
// (None), fallback stands for it.
func decodeCluster(raw json.RawMessage, fallback *objects.Cluster) (*objects.Cluster, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return fallback, nil
	}
	return objects.DecodeAs[*objects.Cluster](raw)
}

func clusterCreateCmd(g *globals) *cobra.Command {
	var name, template, keypair, flavor, masterFlavor, fixedNet, fixedSubnet, discovery string
	var labels []string
	var merge, fipOn, fipOff, lbOn, lbOff bool
	var masters, nodes, createTimeout int
	var volume int64
	var w waitFlags
	c := &cobra.Command{
		Use:   "create NAME --cluster-template TEMPLATE",
		Short: "Create a cluster (cluster_create, as magnum-api does for POST /v1/clusters)",
		Long: `Create a cluster from a cluster template, with the flags of "openstack coe cluster create".
magnum-api's checks are made first (name, counts, labels, the template, a master
load balancer for more than one master, a name no other cluster has): bad input
is refused with exit 2 and nothing is sent. The conductor answers once the
driver took the create up; a refusal is printed and exits 1.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			fs := cmd.Flags()
			if len(a) == 1 {
				if fs.Changed("name") && name != a[0] {
					return usagef("the cluster is named twice: %q and --name %q", a[0], name)
				}
				name = a[0]
			}
			if err := checkClusterName(name); err != nil {
				return err
			}
			if template == "" {
				return usagef("--cluster-template is required")
			}
			for _, chk := range []error{atLeast("node-count", int64(nodes), 0), atLeast("master-count", int64(masters), 1),
				atLeast("create-timeout", int64(createTimeout), 0), exclusive(fs, "floating-ip-enabled", "floating-ip-disabled"),
				exclusive(fs, "master-lb-enabled", "master-lb-disabled"), w.check()} {
				if chk != nil {
					return chk
				}
			}
			if fs.Changed("docker-volume-size") {
				if err := atLeast("docker-volume-size", volume, 1); err != nil {
					return err
				}
			}
			if lbOff && masters > 1 {
				return usagef("--master-count can only be 1 when the master load balancer is disabled")
			}
			lbl, err := parseLabels(labels...)
			if err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
				ct, err := getTemplate(ctx, s, template)
				if err != nil {
					return err
				}
				if ct.Hidden && !g.isAdmin() {
					return usagef("cluster template %s is hidden: only an admin may create clusters from it", template)
				}
				project, user := g.requestProject()
				cl := &objects.Cluster{
					UUID: objects.Str(newUUID()), Name: objects.Str(name), ClusterTemplateID: ct.UUID,
					ProjectID: optional(project), UserID: optional(user),
					Keypair: pick(keypair, ct.KeypairID), FlavorID: pick(flavor, ct.FlavorID),
					MasterFlavorID: pick(masterFlavor, ct.MasterFlavorID), DockerVolumeSize: ct.DockerVolumeSize,
					FixedNetwork: pick(fixedNet, ct.FixedNetwork), FixedSubnet: pick(fixedSubnet, ct.FixedSubnet),
					DiscoveryURL: optional(discovery), CreateTimeout: objects.Int(int64(createTimeout)),
					FloatingIPEnabled: ct.FloatingIPEnabled, MasterLBEnabled: ct.MasterLBEnabled,
				}
				// magnum-api: the template's labels unless some are given,
				// then those alone, or merged over the template's.
				switch {
				case len(lbl) == 0:
					cl.Labels = mergeLabels(ct.Labels, nil)
				case merge:
					cl.Labels = mergeLabels(ct.Labels, lbl)
				default:
					cl.Labels = lbl
				}
				if fs.Changed("docker-volume-size") {
					cl.DockerVolumeSize = objects.Int(volume)
				}
				switch {
				case fipOn:
					cl.FloatingIPEnabled = true
				case fipOff:
					cl.FloatingIPEnabled = false
				}
				switch {
				case lbOn:
					cl.MasterLBEnabled = true
				case lbOff:
					cl.MasterLBEnabled = false
				}
				if masters > 1 && !cl.MasterLBEnabled {
					return usagef("master_count must be 1 when master_lb_enabled is False (template %s has no master load "+
						"balancer: --master-lb-enabled)", template)
				}
				// The name must find this cluster alone later on.
				pctx := g.requestContext(ctx, false)
				switch other, err := classAction[*objects.Cluster](pctx, s, objects.NameCluster, "get_by_name", name); {
				case err == nil:
					return usagef("a cluster named %s already exists (%s): choose another name", name, objects.Deref(other.UUID))
				case isClass(err, exception.ClassConflict):
					return usagef("clusters named %s already exist: choose another name", name)
				case !isClass(err, exception.ClassClusterNotFound):
					return err
				}
				to := createTimeout
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().ClusterCreate(pctx, p[0], masters, nodes, &to)
					return err
				}); err != nil {
					return err
				}
				created, err := decodeCluster(raw, cl)
				if err != nil {
					return err
				}
				return g.accepted(ctx, s, created, "CREATE", w)
			})(cmd, a)
		},
	}
	f := c.Flags()
	f.StringVar(&name, "name", "", "cluster name (or the argument)")
	f.StringVar(&template, "cluster-template", "", "cluster template name, uuid or id")
	f.StringVar(&template, "template", "", "the same as --cluster-template")
	f.StringVar(&keypair, "keypair", "", "keypair (default: the template's)")
	f.StringVar(&flavor, "flavor", "", "worker flavor (default: the template's)")
	f.StringVar(&masterFlavor, "master-flavor", "", "master flavor (default: the template's)")
	f.StringVar(&fixedNet, "fixed-network", "", "private network (default: the template's)")
	f.StringVar(&fixedSubnet, "fixed-subnet", "", "private subnet (default: the template's)")
	f.StringVar(&discovery, "discovery-url", "", "custom discovery URL")
	f.StringArrayVar(&labels, "labels", nil, "labels as key=value, or key=value,key2=value2 (repeatable); they replace "+
		"the template's unless --merge-labels")
	f.BoolVar(&merge, "merge-labels", false, "merge --labels over the template's labels")
	f.Int64Var(&volume, "docker-volume-size", 0, "docker volume size in GB (default: the template's)")
	f.IntVar(&masters, "master-count", 1, "number of masters")
	f.IntVar(&nodes, "node-count", 1, "number of workers")
	f.BoolVar(&fipOn, "floating-ip-enabled", false, "give the cluster floating IPs (default: the template's)")
	f.BoolVar(&fipOff, "floating-ip-disabled", false, "give the cluster no floating IP (default: the template's)")
	f.BoolVar(&lbOn, "master-lb-enabled", false, "give the masters a load balancer (default: the template's)")
	f.BoolVar(&lbOff, "master-lb-disabled", false, "give the masters no load balancer (default: the template's)")
	// Not --timeout: that is the global flag (how long to wait for the
	// conductor), which a local flag of the same name would hide.
	f.IntVar(&createTimeout, "create-timeout", 60, "create timeout in minutes (the cluster's create_timeout; "+
		"openstack coe cluster create's --timeout)")
	w.register(f, "the cluster is CREATE_COMPLETE")
	return c
}

func pick(flag string, dflt *string) *string {
	if flag != "" {
		return &flag
	}
	return dflt
}

func mergeLabels(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// getCluster finds a cluster by name, uuid or id, as Cluster.get and
// get_by_name do for magnum-api.
func getCluster(ctx context.Context, s *session, ident string) (*objects.Cluster, error) {
	method := "get_by_name"
	if looksLikeUUID(ident) || isDigits(ident) {
		method = "get"
	}
	return classAction[*objects.Cluster](ctx, s, objects.NameCluster, method, ident)
}

// getTemplate finds a cluster template by name, uuid or id, as
// api_utils.get_resource does (the Python ClusterTemplate.get takes no
// name).
func getTemplate(ctx context.Context, s *session, ident string) (*objects.ClusterTemplate, error) {
	method := "get_by_name"
	if looksLikeUUID(ident) || isDigits(ident) {
		method = "get"
	}
	return classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, method, ident)
}

func looksLikeUUID(s string) bool {
	return len(s) == 36 && strings.Count(s, "-") == 4
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func clusterListCmd(g *globals) *cobra.Command {
	var status []string
	c := &cobra.Command{
		Use: "list", Short: "List clusters", Args: args(0, 0),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			kwargs := map[string]any{}
			if len(status) > 0 {
				kwargs["filters"] = map[string]any{"status": status}
			}
			cls, err := classList[*objects.Cluster](ctx, s, objects.NameCluster, "list", []any{}, kwargs)
			if err != nil {
				return err
			}
			t := table{header: []string{"UUID", "NAME", "STATUS", "HEALTH", "API ADDRESS"}}
			var vals []map[string]any
			for _, c := range cls {
				t.rows = append(t.rows, []string{cell(c.UUID), cell(c.Name), cell(c.Status), cell(c.HealthStatus), cell(c.APIAddress)})
				vals = append(vals, fieldsOf(c))
			}
			t.value = vals
			return g.print(t)
		}),
	}
	c.Flags().StringSliceVar(&status, "status", nil, "only clusters in these statuses")
	return c
}

func clusterShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use: "show NAME|UUID|ID", Short: "Show a cluster, with its status_reason and health_status_reason", Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			return g.print(showTable(c, "status_reason", "health_status", "health_status_reason"))
		}),
	}
}

func clusterUpdateCmd(g *globals) *cobra.Command {
	var nodes int
	var w waitFlags
	c := &cobra.Command{
		Use:   "update NAME|UUID --node-count N",
		Short: "Change the default worker count (cluster_update, PATCH /v1/clusters)",
		Long: `Change the node count of the cluster's default worker nodegroup, as "openstack coe
cluster update CLUSTER replace node_count=N" does. When the count is already N,
nothing is changed and magnumctl says so (exit 0).`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !cmd.Flags().Changed("node-count") {
				return usagef("--node-count is required")
			}
			if err := atLeast("node-count", int64(nodes), 0); err != nil {
				return err
			}
			if err := w.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				// magnum-api sends the health fields as they are.
				var reason json.RawMessage
				if cl.HealthStatusReason != nil {
					if reason, err = json.Marshal(cl.HealthStatusReason); err != nil {
						return err
					}
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().ClusterUpdate(ctx, p[0], nodes, optional(cl.HealthStatus), reason)
					return err
				}); err != nil {
					return err
				}
				if len(raw) == 0 || string(raw) == "null" {
					_, err := fmt.Fprintf(g.out, "nothing to change: the default worker nodegroup of %s already has %d node(s)\n",
						clusterLabel(cl), nodes)
					return err
				}
				updated, err := decodeCluster(raw, cl)
				if err != nil {
					return err
				}
				return g.accepted(ctx, s, updated, "UPDATE", w)
			})(cmd, a)
		},
	}
	c.Flags().IntVar(&nodes, "node-count", 1, "new worker count of the default worker nodegroup")
	w.register(c.Flags(), "the cluster is UPDATE_COMPLETE")
	return c
}

// nodegroupFor returns the named nodegroup of a cluster, or its default
// worker nodegroup when name is empty.
func nodegroupFor(ctx context.Context, s *session, cl *objects.Cluster, name string) (*objects.NodeGroup, error) {
	if name != "" {
		return classAction[*objects.NodeGroup](ctx, s, objects.NameNodeGroup, "get", objects.Deref(cl.UUID), name)
	}
	ngs, err := classList[*objects.NodeGroup](ctx, s, objects.NameNodeGroup, "list", []any{objects.Deref(cl.UUID)}, map[string]any{})
	if err != nil {
		return nil, err
	}
	for _, ng := range ngs {
		if ng.IsDefault && ng.Role != objects.RoleMaster {
			return ng, nil
		}
	}
	return nil, fmt.Errorf("%s has no default worker nodegroup", clusterLabel(cl))
}

func clusterResizeCmd(g *globals) *cobra.Command {
	var nodes int
	var ngName string
	var remove []string
	var w waitFlags
	c := &cobra.Command{
		Use:   "resize NAME|UUID NODE_COUNT",
		Short: "Resize one nodegroup (cluster_resize, POST /v1/clusters/CLUSTER/actions/resize)",
		Long: `Resize a nodegroup (the default worker one unless --nodegroup), as "openstack coe
cluster resize CLUSTER NODE_COUNT" does; the count may also be given as
--node-count. A count outside the nodegroup's min/max node count is refused
before anything is sent, as magnum-api refuses it.`,
		Args: args(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 2 {
				n, err := parseCount(a[1])
				if err != nil {
					return err
				}
				if cmd.Flags().Changed("node-count") && n != nodes {
					return usagef("the node count is given twice: %s and --node-count %d", a[1], nodes)
				}
				nodes = n
			} else if !cmd.Flags().Changed("node-count") {
				return usagef("the node count is required: %s CLUSTER NODE_COUNT", cmd.CommandPath())
			}
			if err := atLeast("node-count", int64(nodes), 0); err != nil {
				return err
			}
			if err := w.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				ng, err := nodegroupFor(ctx, s, cl, ngName)
				if err != nil {
					return err
				}
				if ng.Role != objects.RoleMaster && (int64(nodes) < ng.MinNodeCount ||
					(derefInt(ng.MaxNodeCount) > 0 && int64(nodes) > derefInt(ng.MaxNodeCount))) {
					max := "no maximum"
					if m := derefInt(ng.MaxNodeCount); m > 0 {
						max = fmt.Sprintf("at most %d", m)
					}
					return usagef("nodegroup %s takes at least %d node(s) and %s, not %d (its min_node_count and max_node_count)",
						ng.Name, ng.MinNodeCount, max, nodes)
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl, ng}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().ClusterResize(ctx, p[0], nodes, remove, p[1])
					return err
				}); err != nil {
					return err
				}
				resized, err := decodeCluster(raw, cl)
				if err != nil {
					return err
				}
				return g.accepted(ctx, s, resized, "UPDATE", w)
			})(cmd, a)
		},
	}
	c.Flags().IntVar(&nodes, "node-count", 1, "new node count of the nodegroup (or the second argument)")
	c.Flags().StringVar(&ngName, "nodegroup", "", "nodegroup name or uuid (default: the default worker nodegroup)")
	c.Flags().StringSliceVar(&remove, "nodes-to-remove", nil, "nodes to remove first when shrinking (server IDs; repeatable)")
	w.register(c.Flags(), "the cluster is UPDATE_COMPLETE")
	return c
}

// parseCount reads a count argument.
func parseCount(s string) (int, error) {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != strings.TrimPrefix(s, "+") {
		return 0, usagef("%q is not a node count", s)
	}
	return n, nil
}

func clusterUpgradeCmd(g *globals) *cobra.Command {
	var template, ngName string
	var batch int
	var w waitFlags
	c := &cobra.Command{
		Use:   "upgrade NAME|UUID TEMPLATE",
		Short: "Upgrade a cluster or nodegroup to a template (cluster_upgrade)",
		Args:  args(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 2 {
				if cmd.Flags().Changed("template") && template != a[1] {
					return usagef("the template is given twice: %s and --template %s", a[1], template)
				}
				template = a[1]
			}
			if template == "" {
				return usagef("the target template is required: %s CLUSTER TEMPLATE", cmd.CommandPath())
			}
			if err := atLeast("max-batch-size", int64(batch), 1); err != nil {
				return err
			}
			if err := w.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				ct, err := getTemplate(ctx, s, template)
				if err != nil {
					return err
				}
				ng, err := nodegroupFor(ctx, s, cl, ngName)
				if err != nil {
					return err
				}
				if ngName != "" && !ng.IsDefault && objects.Deref(ct.UUID) != objects.Deref(cl.ClusterTemplateID) {
					return usagef("nodegroup %s can be upgraded only to the cluster's template (%s), as magnum-api refuses "+
						"otherwise (InvalidClusterTemplateForUpgrade)", ng.Name, objects.Deref(cl.ClusterTemplateID))
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl, ct, ng}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().ClusterUpgrade(ctx, p[0], p[1], batch, p[2])
					return err
				}); err != nil {
					return err
				}
				upgraded, err := decodeCluster(raw, cl)
				if err != nil {
					return err
				}
				return g.accepted(ctx, s, upgraded, "UPDATE", w)
			})(cmd, a)
		},
	}
	c.Flags().StringVar(&template, "template", "", "target cluster template (or the second argument)")
	c.Flags().StringVar(&ngName, "nodegroup", "", "nodegroup to upgrade (default: the default worker nodegroup)")
	c.Flags().IntVar(&batch, "max-batch-size", 1, "nodes upgraded at once")
	w.register(c.Flags(), "the cluster is UPDATE_COMPLETE")
	return c
}

func clusterDeleteCmd(g *globals) *cobra.Command {
	var w waitFlags
	c := &cobra.Command{
		Use: "delete NAME|UUID...", Short: "Delete clusters (cluster_delete)", Args: args(1, -1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := w.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				var errs []error
				for _, ident := range args {
					if err := g.deleteCluster(ctx, s, ident, w); err != nil {
						if len(args) == 1 {
							return err
						}
						_, _ = fmt.Fprintln(g.errOut, "magnumctl: "+explain(err))
						errs = append(errs, err)
					}
				}
				if len(errs) > 0 {
					return &failedSome{n: len(errs), of: len(args), first: errs[0]}
				}
				return nil
			})(cmd, a)
		},
	}
	w.register(c.Flags(), "the cluster is gone")
	return c
}

func (g *globals) deleteCluster(ctx context.Context, s *session, ident string, w waitFlags) error {
	cl, err := getCluster(ctx, s, ident)
	if err != nil {
		return err
	}
	if err := s.change().ClusterDelete(ctx, objects.Deref(cl.UUID)); err != nil {
		return err
	}
	if w.wait {
		return g.wait(ctx, g.clusterOperation(s, cl, "DELETE", w))
	}
	return g.print(table{header: []string{"UUID", "NAME", "DELETING"}, rows: [][]string{{cell(cl.UUID), cell(cl.Name), "true"}},
		value: map[string]any{"uuid": objects.Deref(cl.UUID), "name": objects.Deref(cl.Name), "deleting": true}})
}

// failedSome is several requests of which some failed (each was printed).
type failedSome struct {
	n, of int
	first error
}

func (e *failedSome) Error() string { return fmt.Sprintf("%d of %d requests failed", e.n, e.of) }

func (e *failedSome) Unwrap() error { return e.first }

func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
