package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
)

func nodegroupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "nodegroup", Short: "Nodegroups of a cluster"}

	var name, flavor, role, labels string
	var count, minCount, maxCount int64
	create := &cobra.Command{
		Use: "create CLUSTER", Short: "Add a nodegroup (nodegroup_create cast)", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			lbl, err := parseLabels(labels)
			if err != nil {
				return err
			}
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ng := &objects.NodeGroup{
				UUID: newUUID(), Name: name, ClusterID: objects.Deref(cl.UUID), ProjectID: objects.Deref(cl.ProjectID),
				FlavorID: pick(flavor, cl.FlavorID), NodeCount: count, Role: role, MinNodeCount: minCount,
				Labels: mergeLabels(cl.Labels, lbl), DockerVolumeSize: cl.DockerVolumeSize,
			}
			if maxCount > 0 {
				ng.MaxNodeCount = objects.Int(maxCount)
			}
			cp, err := primitive(cl)
			if err != nil {
				return err
			}
			np, err := primitive(ng)
			if err != nil {
				return err
			}
			if err := s.api.NodeGroupCreateAsync(ctx, cp, np); err != nil {
				return err
			}
			return g.print(table{header: []string{"UUID", "NAME", "ACCEPTED"}, rows: [][]string{{ng.UUID, name, "true"}},
				value: map[string]any{"uuid": ng.UUID, "name": name}})
		}),
	}
	f := create.Flags()
	f.StringVar(&name, "name", "", "nodegroup name")
	f.StringVar(&flavor, "flavor", "", "flavor (default: the cluster's)")
	f.StringVar(&role, "role", "worker", "role")
	f.StringVar(&labels, "labels", "", "labels as key=value,... merged over the cluster's")
	f.Int64Var(&count, "node-count", 1, "node count")
	f.Int64Var(&minCount, "min-nodes", 0, "minimum node count (autoscaler)")
	f.Int64Var(&maxCount, "max-nodes", 0, "maximum node count (autoscaler); 0 for none")
	_ = create.MarkFlagRequired("name")

	list := &cobra.Command{
		Use: "list CLUSTER", Short: "List the nodegroups of a cluster", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ngs, err := classList[*objects.NodeGroup](ctx, s, objects.NameNodeGroup, "list", []any{objects.Deref(cl.UUID)}, map[string]any{})
			if err != nil {
				return err
			}
			t := table{header: []string{"UUID", "NAME", "ROLE", "DEFAULT", "NODES", "MIN", "MAX", "STATUS"}}
			var vals []map[string]any
			for _, ng := range ngs {
				t.rows = append(t.rows, []string{ng.UUID, ng.Name, ng.Role, fmt.Sprint(ng.IsDefault), fmt.Sprint(ng.NodeCount),
					fmt.Sprint(ng.MinNodeCount), cell(ng.MaxNodeCount), cell(ng.Status)})
				vals = append(vals, fieldsOf(ng))
			}
			t.value = vals
			return g.print(t)
		}),
	}

	var uMin, uMax int64
	update := &cobra.Command{
		Use: "update CLUSTER NODEGROUP", Short: "Change a nodegroup's autoscaling bounds (nodegroup_update cast)", Args: cobra.ExactArgs(2),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ng, err := nodegroupFor(ctx, s, cl, args[1])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("min-nodes") {
				ng.MinNodeCount = uMin
			}
			if cmd.Flags().Changed("max-nodes") {
				ng.MaxNodeCount = objects.Int(uMax)
			}
			cp, err := primitive(cl)
			if err != nil {
				return err
			}
			np, err := primitive(ng)
			if err != nil {
				return err
			}
			if err := s.api.NodeGroupUpdateAsync(ctx, cp, np); err != nil {
				return err
			}
			return g.print(table{header: []string{"UUID", "ACCEPTED"}, rows: [][]string{{ng.UUID, "true"}},
				value: map[string]any{"uuid": ng.UUID, "accepted": true}})
		}),
	}
	update.Flags().Int64Var(&uMin, "min-nodes", 0, "new minimum node count")
	update.Flags().Int64Var(&uMax, "max-nodes", 0, "new maximum node count")

	del := &cobra.Command{
		Use: "delete CLUSTER NODEGROUP", Short: "Delete a nodegroup (nodegroup_delete cast)", Args: cobra.ExactArgs(2),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			cl, err := getCluster(ctx, s, args[0])
			if err != nil {
				return err
			}
			ng, err := nodegroupFor(ctx, s, cl, args[1])
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
			if err := s.api.NodeGroupDeleteAsync(ctx, cp, np); err != nil {
				return err
			}
			return g.print(table{header: []string{"UUID", "ACCEPTED"}, rows: [][]string{{ng.UUID, "true"}},
				value: map[string]any{"uuid": ng.UUID, "accepted": true}})
		}),
	}
	cmd.AddCommand(create, list, update, del)
	return cmd
}
