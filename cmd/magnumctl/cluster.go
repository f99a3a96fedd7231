package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

func clusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Clusters"}
	cmd.AddCommand(clusterCreateCmd(g), clusterListCmd(g), clusterShowCmd(g), clusterUpdateCmd(g),
		clusterResizeCmd(g), clusterUpgradeCmd(g), clusterDeleteCmd(g))
	return cmd
}

func clusterCreateCmd(g *globals) *cobra.Command {
	var name, template, keypair, flavor, masterFlavor, labels string
	var masters, nodes, timeout int
	var wait bool
	c := &cobra.Command{
		Use:   "create",
		Short: "Create a cluster (the cluster_create cast magnum-api sends for POST /v1/clusters)",
		Args:  cobra.NoArgs,
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			lbl, err := parseLabels(labels)
			if err != nil {
				return err
			}
			ct, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get", template)
			if err != nil {
				return err
			}
			cl := &objects.Cluster{
				UUID: objects.Str(newUUID()), Name: objects.Str(name), ClusterTemplateID: ct.UUID,
				ProjectID: optional(g.projectID), UserID: optional(g.userID),
				Keypair: pick(keypair, ct.KeypairID), FlavorID: pick(flavor, ct.FlavorID),
				MasterFlavorID: pick(masterFlavor, ct.MasterFlavorID), DockerVolumeSize: ct.DockerVolumeSize,
				Labels: mergeLabels(ct.Labels, lbl), CreateTimeout: objects.Int(int64(timeout)),
				FloatingIPEnabled: ct.FloatingIPEnabled, MasterLBEnabled: ct.MasterLBEnabled,
			}
			prim, err := primitive(cl)
			if err != nil {
				return err
			}
			to := timeout
			if err := s.api.ClusterCreateAsync(ctx, prim, masters, nodes, &to); err != nil {
				return err
			}
			if wait {
				return g.watch(cmd.Context(), objects.Deref(cl.UUID), objects.CreateInProgress) //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
			}
			return g.print(table{header: []string{"UUID", "NAME", "ACCEPTED"},
				rows:  [][]string{{objects.Deref(cl.UUID), name, "true"}},
				value: map[string]any{"uuid": objects.Deref(cl.UUID), "name": name}})
		}),
	}
	f := c.Flags()
	f.StringVar(&name, "name", "", "cluster name")
	f.StringVar(&template, "template", "", "cluster template name, uuid or id")
	f.StringVar(&keypair, "keypair", "", "keypair (default: the template's)")
	f.StringVar(&flavor, "flavor", "", "worker flavor (default: the template's)")
	f.StringVar(&masterFlavor, "master-flavor", "", "master flavor (default: the template's)")
	f.StringVar(&labels, "labels", "", "labels as key=value,... merged over the template's")
	f.IntVar(&masters, "master-count", 1, "number of masters")
	f.IntVar(&nodes, "node-count", 1, "number of workers")
	// Not --timeout: that is the global flag (how long to wait for the
	// conductor), which a local flag of the same name would hide.
	f.IntVar(&timeout, "create-timeout", 60, "create timeout in minutes (the cluster's create_timeout)")
	f.BoolVar(&wait, "wait", false, "watch the status until the operation ends")
	_ = c.MarkFlagRequired("name")
	_ = c.MarkFlagRequired("template")
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

// deleteCompleteGrace is how long watch keeps polling a cluster in
// DELETE_COMPLETE for its row to go: the conductor deletes the row right
// after writing that status, in the same sync cycle.
const deleteCompleteGrace = 30 * time.Second

// watch polls the cluster every half second and prints each status change
// until it leaves *_IN_PROGRESS (or is gone, after a delete: DELETE_COMPLETE
// is waited past for up to deleteCompleteGrace).
func (g *globals) watch(parent context.Context, uuid, first string) error {
	s, _, cancel, err := g.connect(parent)
	if err != nil {
		return err
	}
	defer cancel()
	defer s.close()
	last := ""
	var deleteComplete time.Time // when DELETE_COMPLETE was first seen
	// A create is cast: the conductor's handler writes the row, and a
	// lookup can reach the conductor before it has. Until the row is first
	// seen, "not found" is "not yet", for at most the call timeout.
	unseenSince := time.Time{}
	if first == objects.CreateInProgress {
		unseenSince = time.Now()
	}
	if first != "" {
		if _, err := fmt.Fprintf(g.out, "%s  %s\n", time.Now().UTC().Format(time.RFC3339), first); err != nil {
			return err
		}
		last = first
	}
	for {
		ctx, cancelCall := context.WithTimeout(parent, g.timeout)
		ctx = contextFrom(ctx, g)
		c, err := classAction[*objects.Cluster](ctx, s, objects.NameCluster, "get_by_uuid", uuid)
		cancelCall()
		notFound := errors.Is(err, exception.ClassClusterNotFound.New(nil))
		if notFound && !unseenSince.IsZero() && time.Since(unseenSince) < g.timeout {
			select {
			case <-parent.Done():
				return parent.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if notFound {
			_, err := fmt.Fprintf(g.out, "%s  DELETED\n", time.Now().UTC().Format(time.RFC3339))
			return err
		}
		if err != nil {
			return err
		}
		unseenSince = time.Time{}
		if c.Status != last {
			reason := ""
			if c.StatusReason != nil && *c.StatusReason != "" {
				reason = "  " + *c.StatusReason
			}
			if _, err := fmt.Fprintf(g.out, "%s  %s%s\n", time.Now().UTC().Format(time.RFC3339), c.Status, reason); err != nil {
				return err // stdout is gone: stop watching
			}
			last = c.Status
		}
		if c.Status == objects.DeleteComplete && deleteComplete.IsZero() {
			deleteComplete = time.Now()
		}
		waitRowGone := c.Status == objects.DeleteComplete && time.Since(deleteComplete) < deleteCompleteGrace
		if !strings.HasSuffix(c.Status, "_IN_PROGRESS") && !waitRowGone {
			if strings.HasSuffix(c.Status, "_FAILED") {
				return fmt.Errorf("cluster %s ended in %s: %s", uuid, c.Status, objects.Deref(c.StatusReason))
			}
			return nil
		}
		select {
		case <-parent.Done():
			return parent.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func clusterListCmd(g *globals) *cobra.Command {
	var status []string
	c := &cobra.Command{
		Use: "list", Short: "List clusters", Args: cobra.NoArgs,
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
		Use: "show NAME|UUID|ID", Short: "Show a cluster", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			return g.print(showTable(c))
		}),
	}
}

func clusterUpdateCmd(g *globals) *cobra.Command {
	var nodes int
	var wait bool
	c := &cobra.Command{
		Use: "update NAME|UUID", Short: "Change the default worker count (cluster_update cast, PATCH /v1/clusters)", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			prim, err := primitive(cl)
			if err != nil {
				return err
			}
			if err := s.api.ClusterUpdateAsync(ctx, prim, nodes, nil, nil, false); err != nil {
				return err
			}
			return g.accepted(cmd.Context(), cl, wait) //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
		}),
	}
	c.Flags().IntVar(&nodes, "node-count", 1, "new worker count of the default worker nodegroup")
	c.Flags().BoolVar(&wait, "wait", false, "watch the status until the operation ends")
	_ = c.MarkFlagRequired("node-count")
	return c
}

func (g *globals) accepted(ctx context.Context, cl *objects.Cluster, wait bool) error {
	if wait {
		return g.watch(ctx, objects.Deref(cl.UUID), "")
	}
	return g.print(table{header: []string{"UUID", "ACCEPTED"}, rows: [][]string{{objects.Deref(cl.UUID), "true"}},
		value: map[string]any{"uuid": objects.Deref(cl.UUID), "accepted": true}})
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
	return nil, fmt.Errorf("cluster %s has no default worker nodegroup", objects.Deref(cl.UUID))
}

func clusterResizeCmd(g *globals) *cobra.Command {
	var nodes int
	var ngName string
	var remove []string
	var wait bool
	c := &cobra.Command{
		Use: "resize NAME|UUID", Short: "Resize one nodegroup (cluster_resize cast)", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ng, err := nodegroupFor(ctx, s, cl, ngName)
			if err != nil {
				return err
			}
			cp, err := primitive(cl)
			if err != nil {
				return err
			}
			np, err := primitive(ng)
			if err != nil {
				return err
			}
			if remove == nil {
				remove = []string{}
			}
			if err := s.api.ClusterResizeAsync(ctx, cp, nodes, remove, np); err != nil {
				return err
			}
			return g.accepted(cmd.Context(), cl, wait) //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
		}),
	}
	c.Flags().IntVar(&nodes, "node-count", 1, "new node count of the nodegroup")
	c.Flags().StringVar(&ngName, "nodegroup", "", "nodegroup name or uuid (default: the default worker nodegroup)")
	c.Flags().StringSliceVar(&remove, "nodes-to-remove", nil, "nodes to remove first when shrinking")
	c.Flags().BoolVar(&wait, "wait", false, "watch the status until the operation ends")
	_ = c.MarkFlagRequired("node-count")
	return c
}

func clusterUpgradeCmd(g *globals) *cobra.Command {
	var template, ngName string
	var batch int
	var wait bool
	c := &cobra.Command{
		Use: "upgrade NAME|UUID", Short: "Upgrade a cluster or nodegroup to a template (cluster_upgrade call)", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ct, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get", template)
			if err != nil {
				return err
			}
			ng, err := nodegroupFor(ctx, s, cl, ngName)
			if err != nil {
				return err
			}
			var prims [3]json.RawMessage
			for i, o := range []objects.Object{cl, ct, ng} {
				if prims[i], err = primitive(o); err != nil {
					return err
				}
			}
			if _, err := s.api.ClusterUpgrade(ctx, prims[0], prims[1], batch, prims[2]); err != nil {
				return err
			}
			return g.accepted(cmd.Context(), cl, wait) //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
		}),
	}
	c.Flags().StringVar(&template, "template", "", "target cluster template")
	c.Flags().StringVar(&ngName, "nodegroup", "", "nodegroup to upgrade (default: the default worker nodegroup)")
	c.Flags().IntVar(&batch, "max-batch-size", 1, "nodes upgraded at once")
	c.Flags().BoolVar(&wait, "wait", false, "watch the status until the operation ends")
	_ = c.MarkFlagRequired("template")
	return c
}

func clusterDeleteCmd(g *globals) *cobra.Command {
	var wait bool
	c := &cobra.Command{
		Use: "delete NAME|UUID", Short: "Delete a cluster (cluster_delete cast)", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			if err := s.api.ClusterDeleteAsync(ctx, objects.Deref(cl.UUID)); err != nil {
				return err
			}
			if wait {
				return g.watch(cmd.Context(), objects.Deref(cl.UUID), "") //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
			}
			return g.accepted(cmd.Context(), cl, false) //nolint:contextcheck // a wait outlives ctx, the one call's timeout: it starts from the command's context, ctx's parent
		}),
	}
	c.Flags().BoolVar(&wait, "wait", false, "watch until the cluster is gone")
	return c
}
