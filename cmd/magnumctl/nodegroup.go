package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// nodegroupOperation is the wait for an operation of kind on nodegroup ng
// of cluster cl.
func (g *globals) nodegroupOperation(s *session, cl *objects.Cluster, ng *objects.NodeGroup, kind string, w waitFlags) operation {
	cluster := objects.Deref(cl.UUID)
	return operation{kind: kind, subject: fmt.Sprintf("nodegroup %s of %s", ng.Name, clusterLabel(cl)), limit: w.limitFor(kind, 0),
		probe: func(ctx context.Context) (observed, error) {
			n, err := classAction[*objects.NodeGroup](g.requestContext(ctx, true), s, objects.NameNodeGroup, "get_by_uuid", cluster, ng.UUID)
			if isClass(err, exception.ClassNodeGroupNotFound) {
				return observed{gone: true}, nil
			}
			if err != nil {
				return observed{}, err
			}
			return observed{status: n.Status, reason: objects.Deref(n.StatusReason)}, nil
		}}
}

// nodegroupAccepted prints what the conductor answered, or follows the
// operation with --wait.
func (g *globals) nodegroupAccepted(ctx context.Context, s *session, cl *objects.Cluster, ng *objects.NodeGroup, kind string, w waitFlags) error {
	if w.wait {
		return g.wait(ctx, g.nodegroupOperation(s, cl, ng, kind, w))
	}
	return g.print(table{header: []string{"UUID", "NAME", "STATUS"}, rows: [][]string{{ng.UUID, ng.Name, cell(ng.Status)}},
		value: map[string]any{"uuid": ng.UUID, "name": ng.Name, "status": ng.Status}})
}

// checkNodeCounts is magnum-api's _validate_node_count.
func checkNodeCounts(ng *objects.NodeGroup) error {
	if m := derefInt(ng.MaxNodeCount); ng.MaxNodeCount != nil && m > 0 {
		if m < ng.MinNodeCount {
			return usagef("nodegroup %s: min_node_count (%d) should be less or equal to max_node_count (%d)", ng.Name, ng.MinNodeCount, m)
		}
		if ng.NodeCount > m {
			return usagef("nodegroup %s: node_count (%d) should be less or equal to max_node_count (%d)", ng.Name, ng.NodeCount, m)
		}
	}
	if ng.MinNodeCount > ng.NodeCount {
		return usagef("nodegroup %s: min_node_count (%d) should be less or equal to node_count (%d)", ng.Name, ng.MinNodeCount, ng.NodeCount)
	}
	return nil
}

func nodegroupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "nodegroup", Short: "Nodegroups of a cluster"}

	var name, flavor, image, role string
	var labels []string
	var merge bool
	var count, minCount, maxCount, volume int64
	var cw waitFlags
	create := &cobra.Command{
		Use: "create CLUSTER NAME", Short: "Add a nodegroup (nodegroup_create)", Args: args(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			fs := cmd.Flags()
			if len(a) == 2 {
				if fs.Changed("name") && name != a[1] {
					return usagef("the nodegroup is named twice: %q and --name %q", a[1], name)
				}
				name = a[1]
			}
			if err := checkName("nodegroup", name); err != nil {
				return err
			}
			if role == objects.RoleMaster {
				return usagef("master nodegroups cannot be added (magnum-api's CreateMasterNodeGroup)")
			}
			for _, chk := range []error{atLeast("node-count", count, 0), atLeast("min-nodes", minCount, 0),
				atLeast("max-nodes", maxCount, 0), cw.check()} {
				if chk != nil {
					return chk
				}
			}
			if fs.Changed("docker-volume-size") {
				if err := atLeast("docker-volume-size", volume, 1); err != nil {
					return err
				}
			}
			lbl, err := parseLabels(labels...)
			if err != nil {
				return err
			}
			ng := &objects.NodeGroup{UUID: newUUID(), Name: name, NodeCount: count, Role: role, MinNodeCount: minCount}
			if fs.Changed("max-nodes") {
				ng.MaxNodeCount = objects.Int(maxCount)
			}
			if err := checkNodeCounts(ng); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				if objects.Deref(cl.APIAddress) == "" {
					return usagef("%s has no API address yet: a nodegroup is added once it is created "+
						"(magnum-api's ClusterAPIAddressUnavailable)", clusterLabel(cl))
				}
				switch _, err := classAction[*objects.NodeGroup](ctx, s, objects.NameNodeGroup, "get_by_name", objects.Deref(cl.UUID), name); {
				case err == nil:
					return usagef("%s already has a nodegroup named %s", clusterLabel(cl), name)
				case !isClass(err, exception.ClassNodeGroupNotFound):
					return err
				}
				ng.ClusterID, ng.ProjectID = objects.Deref(cl.UUID), objects.Deref(cl.ProjectID)
				ng.FlavorID = pick(flavor, cl.FlavorID)
				ng.DockerVolumeSize = cl.DockerVolumeSize
				if fs.Changed("docker-volume-size") {
					ng.DockerVolumeSize = objects.Int(volume)
				}
				if image != "" {
					ng.ImageID = objects.Str(image)
				} else if ct, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get",
					objects.Deref(cl.ClusterTemplateID)); err == nil {
					ng.ImageID = ct.ImageID
				} else {
					return err
				}
				switch {
				case len(lbl) == 0:
					ng.Labels = mergeLabels(cl.Labels, nil)
				case merge:
					ng.Labels = mergeLabels(cl.Labels, lbl)
				default:
					ng.Labels = lbl
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl, ng}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().NodeGroupCreate(ctx, p[0], p[1])
					return err
				}); err != nil {
					return err
				}
				if created, err := objects.DecodeAs[*objects.NodeGroup](raw); err == nil && created != nil {
					ng = created
				}
				return g.nodegroupAccepted(ctx, s, cl, ng, "CREATE", cw)
			})(cmd, a)
		},
	}
	f := create.Flags()
	f.StringVar(&name, "name", "", "nodegroup name (or the second argument)")
	f.StringVar(&flavor, "flavor", "", "flavor (default: the cluster's)")
	f.StringVar(&image, "image", "", "image (default: the cluster template's)")
	f.StringVar(&role, "role", "worker", "role")
	f.StringArrayVar(&labels, "labels", nil, "labels as key=value, or key=value,key2=value2 (repeatable); they replace "+
		"the cluster's unless --merge-labels")
	f.BoolVar(&merge, "merge-labels", false, "merge --labels over the cluster's labels")
	f.Int64Var(&volume, "docker-volume-size", 0, "docker volume size in GB (default: the cluster's)")
	f.Int64Var(&count, "node-count", 1, "node count")
	f.Int64Var(&minCount, "min-nodes", 0, "minimum node count (autoscaler)")
	f.Int64Var(&maxCount, "max-nodes", 0, "maximum node count (autoscaler); none when not given")
	cw.register(f, "the nodegroup is CREATE_COMPLETE")

	list := &cobra.Command{
		Use: "list CLUSTER", Short: "List the nodegroups of a cluster", Args: args(1, 1),
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
	var uw waitFlags
	update := &cobra.Command{
		Use: "update CLUSTER NODEGROUP", Short: "Change a nodegroup's autoscaling bounds (nodegroup_update)", Args: args(2, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			fs := cmd.Flags()
			if !fs.Changed("min-nodes") && !fs.Changed("max-nodes") {
				return usagef("nothing to update: give --min-nodes or --max-nodes")
			}
			if err := atLeast("min-nodes", uMin, 0); err != nil {
				return err
			}
			if err := atLeast("max-nodes", uMax, 0); err != nil {
				return err
			}
			if err := uw.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				ng, err := nodegroupFor(ctx, s, cl, args[1])
				if err != nil {
					return err
				}
				if fs.Changed("min-nodes") {
					ng.MinNodeCount = uMin
				}
				if fs.Changed("max-nodes") {
					ng.MaxNodeCount = objects.Int(uMax)
				}
				if err := checkNodeCounts(ng); err != nil {
					return err
				}
				var raw json.RawMessage
				if err := s.send([]objects.Object{cl, ng}, func(p []json.RawMessage) (err error) {
					raw, err = s.change().NodeGroupUpdate(ctx, p[0], p[1])
					return err
				}); err != nil {
					return err
				}
				if updated, err := objects.DecodeAs[*objects.NodeGroup](raw); err == nil && updated != nil {
					ng = updated
				}
				return g.nodegroupAccepted(ctx, s, cl, ng, "UPDATE", uw)
			})(cmd, a)
		},
	}
	update.Flags().Int64Var(&uMin, "min-nodes", 0, "new minimum node count")
	update.Flags().Int64Var(&uMax, "max-nodes", 0, "new maximum node count")
	uw.register(update.Flags(), "the nodegroup is UPDATE_COMPLETE")

	var dw waitFlags
	del := &cobra.Command{
		Use: "delete CLUSTER NODEGROUP", Short: "Delete a nodegroup (nodegroup_delete)", Args: args(2, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := dw.check(); err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
				cl, err := getCluster(ctx, s, args[0])
				if err != nil {
					return err
				}
				ng, err := nodegroupFor(ctx, s, cl, args[1])
				if err != nil {
					return err
				}
				if ng.IsDefault {
					return usagef("nodegroup %s is a default nodegroup of %s: it goes with the cluster "+
						"(magnum-api's DeletingDefaultNGNotSupported)", ng.Name, clusterLabel(cl))
				}
				if err := s.send([]objects.Object{cl, ng}, func(p []json.RawMessage) error {
					return s.change().NodeGroupDelete(ctx, p[0], p[1])
				}); err != nil {
					return err
				}
				if dw.wait {
					return g.wait(ctx, g.nodegroupOperation(s, cl, ng, "DELETE", dw))
				}
				return g.print(table{header: []string{"UUID", "NAME", "DELETING"}, rows: [][]string{{ng.UUID, ng.Name, "true"}},
					value: map[string]any{"uuid": ng.UUID, "name": ng.Name, "deleting": true}})
			})(cmd, a)
		},
	}
	dw.register(del.Flags(), "the nodegroup is gone")
	cmd.AddCommand(create, list, update, del)
	return cmd
}
