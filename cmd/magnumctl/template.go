package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/objects"
)

func templateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Aliases: []string{"cluster-template"}, Short: "Cluster templates"}

	var ct objects.ClusterTemplate
	var name, coe, serverType, distro, image, flavor, masterFlavor, extNet, keypair, driver, labels string
	var public bool
	var volume int64
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a cluster template (ClusterTemplate.create through the indirection API)",
		Args:  cobra.NoArgs,
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			lbl, err := parseLabels(labels)
			if err != nil {
				return err
			}
			ct.UUID = objects.Str(newUUID())
			ct.Name = objects.Str(name)
			ct.Coe = coe
			ct.ServerType = objects.Str(serverType)
			ct.ClusterDistro = objects.Str(distro)
			ct.ImageID = objects.Str(image)
			ct.FlavorID = objects.Str(flavor)
			ct.MasterFlavorID = objects.Str(masterFlavor)
			ct.ExternalNetworkID = objects.Str(extNet)
			ct.KeypairID = objects.Str(keypair)
			if driver != "" {
				ct.Driver = objects.Str(driver)
			}
			ct.Labels = lbl
			ct.Public = public
			if volume > 0 {
				ct.DockerVolumeSize = objects.Int(volume)
			}
			ct.ProjectID = optional(g.projectID)
			ct.UserID = optional(g.userID)
			created, err := instanceAction(ctx, s, &ct, "create")
			if err != nil {
				return err
			}
			return g.print(showTable(created))
		}),
	}
	f := create.Flags()
	f.StringVar(&name, "name", "", "template name")
	f.StringVar(&coe, "coe", "kubernetes", "container orchestration engine")
	f.StringVar(&serverType, "server-type", "vm", "server type: vm or bm")
	f.StringVar(&distro, "os", "", "cluster_distro (the os of the driver key)")
	f.StringVar(&image, "image", "", "image id")
	f.StringVar(&flavor, "flavor", "", "worker flavor")
	f.StringVar(&masterFlavor, "master-flavor", "", "master flavor")
	f.StringVar(&extNet, "external-network", "", "external network id")
	f.StringVar(&keypair, "keypair", "", "keypair id")
	f.StringVar(&driver, "driver", "", "driver name (2026.x templates)")
	f.StringVar(&labels, "labels", "", "labels as key=value,key2=value2")
	f.BoolVar(&public, "public", false, "make the template public")
	f.Int64Var(&volume, "docker-volume-size", 0, "docker volume size in GB")
	_ = create.MarkFlagRequired("name")

	list := &cobra.Command{
		Use: "list", Short: "List cluster templates", Args: cobra.NoArgs,
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
			cts, err := classList[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "list", []any{}, map[string]any{})
			if err != nil {
				return err
			}
			t := table{header: []string{"UUID", "NAME", "COE", "SERVER TYPE", "OS", "DRIVER", "PUBLIC"}}
			var vals []map[string]any
			for _, c := range cts {
				t.rows = append(t.rows, []string{cell(c.UUID), cell(c.Name), cell(c.Coe), cell(c.ServerType),
					cell(c.ClusterDistro), cell(c.Driver), fmt.Sprint(c.Public)})
				vals = append(vals, fieldsOf(c))
			}
			t.value = vals
			return g.print(t)
		}),
	}
	show := &cobra.Command{
		Use: "show NAME|UUID|ID", Short: "Show a cluster template", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get", args[0])
			if err != nil {
				return err
			}
			return g.print(showTable(c))
		}),
	}
	del := &cobra.Command{
		Use: "delete NAME|UUID|ID", Short: "Delete a cluster template that no cluster uses", Args: cobra.ExactArgs(1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get", args[0])
			if err != nil {
				return err
			}
			if _, err := instanceAction(ctx, s, c, "destroy"); err != nil {
				return err
			}
			return g.print(table{header: []string{"DELETED"}, rows: [][]string{{cell(c.UUID)}},
				value: map[string]any{"deleted": objects.Deref(c.UUID)}})
		}),
	}
	cmd.AddCommand(create, list, show, del)
	return cmd
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// parseLabels reads "k=v,k2=v2" (the magnum CLI's --labels syntax).
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &usageError{fmt.Sprintf("--labels: %q is not key=value", kv)}
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}
