package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// coes are the ClusterType values magnum-api takes.
var coes = []string{"kubernetes", "swarm", "swarm-mode", "mesos", "dcos"}

// templateFlags are the fields of "openstack coe cluster template create",
// named as it names them.
type templateFlags struct {
	name, coe, image, externalNet, keypair, fixedNet, fixedSubnet, networkDriver, volumeDriver, driver string
	dns, flavor, masterFlavor, storageDriver, httpProxy, httpsProxy, noProxy, insecureRegistry         string
	serverType, distro                                                                                 string
	labels, tags                                                                                       []string
	volume                                                                                             int64
	public, hidden, visible, tlsDisabled, registry, masterLB, fipOn, fipOff                            bool
}

func (t *templateFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&t.name, "name", "", "template name (or the argument)")
	f.StringVar(&t.coe, "coe", "kubernetes", "container orchestration engine: kubernetes (swarm, swarm-mode, mesos, dcos)")
	f.StringVar(&t.image, "image", "", "image name or uuid of the nodes (required)")
	f.StringVar(&t.externalNet, "external-network", "", "external network name or uuid")
	f.StringVar(&t.keypair, "keypair", "", "SSH keypair name or uuid")
	f.StringVar(&t.fixedNet, "fixed-network", "", "private network name or uuid")
	f.StringVar(&t.fixedSubnet, "fixed-subnet", "", "private subnet name or uuid")
	f.StringVar(&t.networkDriver, "network-driver", "", "network driver")
	f.StringVar(&t.volumeDriver, "volume-driver", "", "volume driver")
	f.StringVar(&t.driver, "driver", "", "Magnum driver of the template's clusters (2026.x)")
	f.StringVar(&t.dns, "dns-nameserver", "8.8.8.8", "DNS nameserver of the clusters' subnet")
	f.StringVar(&t.flavor, "flavor", "m1.medium", "worker flavor")
	f.StringVar(&t.masterFlavor, "master-flavor", "", "master flavor")
	f.Int64Var(&t.volume, "docker-volume-size", 0, "docker volume size in GB (none when not given)")
	f.StringVar(&t.storageDriver, "docker-storage-driver", "overlay2", "docker storage driver")
	f.StringVar(&t.httpProxy, "http-proxy", "", "http_proxy of the nodes")
	f.StringVar(&t.httpsProxy, "https-proxy", "", "https_proxy of the nodes")
	f.StringVar(&t.noProxy, "no-proxy", "", "no_proxy of the nodes")
	f.StringArrayVar(&t.labels, "labels", nil, "labels as key=value, or key=value,key2=value2 (repeatable)")
	f.BoolVar(&t.tlsDisabled, "tls-disabled", false, "disable TLS in the clusters")
	f.BoolVar(&t.public, "public", false, "make the template public")
	f.BoolVar(&t.registry, "registry-enabled", false, "enable the docker registry in the clusters")
	f.StringVar(&t.insecureRegistry, "insecure-registry", "", "URL of an insecure docker registry")
	f.StringVar(&t.serverType, "server-type", "vm", "server type: vm or bm")
	f.BoolVar(&t.masterLB, "master-lb-enabled", false, "give the clusters' masters a load balancer")
	f.BoolVar(&t.fipOn, "floating-ip-enabled", false, "give the clusters floating IPs (the default)")
	f.BoolVar(&t.fipOff, "floating-ip-disabled", false, "give the clusters no floating IP")
	f.BoolVar(&t.hidden, "hidden", false, "hide the template")
	f.BoolVar(&t.visible, "visible", false, "do not hide the template (the default)")
	f.StringArrayVar(&t.tags, "tags", nil, "tags (repeatable, or comma-separated)")
	// magnum-api takes cluster_distro from the image's os_distro property
	// in Glance; magnumctl does not read Glance, so it is given here.
	f.StringVar(&t.distro, "os-distro", "", "cluster_distro: the image's os_distro (magnum-api reads it from Glance)")
	f.StringVar(&t.distro, "os", "", "the same as --os-distro")
}

// template checks the flags as magnum-api checks a template and returns it.
func (t *templateFlags) template(c *cobra.Command, a []string) (*objects.ClusterTemplate, error) {
	fs := c.Flags()
	if len(a) == 1 {
		if fs.Changed("name") && t.name != a[0] {
			return nil, usagef("the template is named twice: %q and --name %q", a[0], t.name)
		}
		t.name = a[0]
	}
	if err := checkName("cluster template", t.name); err != nil {
		return nil, err
	}
	if !slices.Contains(coes, t.coe) {
		return nil, usagef("--coe %q is not one of %v", t.coe, coes)
	}
	if t.image == "" {
		return nil, usagef("--image is required")
	}
	if t.serverType != "vm" && t.serverType != "bm" {
		return nil, usagef("--server-type %q is not vm or bm", t.serverType)
	}
	for _, pair := range [][2]string{{"floating-ip-enabled", "floating-ip-disabled"}, {"hidden", "visible"}} {
		if err := exclusive(fs, pair[0], pair[1]); err != nil {
			return nil, err
		}
	}
	if fs.Changed("docker-volume-size") {
		if err := atLeast("docker-volume-size", t.volume, 1); err != nil {
			return nil, err
		}
	}
	lbl, err := parseLabels(t.labels...)
	if err != nil {
		return nil, err
	}
	ct := &objects.ClusterTemplate{
		UUID: objects.Str(newUUID()), Name: objects.Str(t.name), Coe: t.coe, ImageID: objects.Str(t.image),
		KeypairID: optional(t.keypair), ExternalNetworkID: optional(t.externalNet), FixedNetwork: optional(t.fixedNet),
		FixedSubnet: optional(t.fixedSubnet), NetworkDriver: optional(t.networkDriver), VolumeDriver: optional(t.volumeDriver),
		Driver: optional(t.driver), DNSNameserver: optional(t.dns), FlavorID: optional(t.flavor),
		MasterFlavorID: optional(t.masterFlavor), DockerStorageDriver: optional(t.storageDriver),
		HTTPProxy: optional(t.httpProxy), HTTPSProxy: optional(t.httpsProxy), NoProxy: optional(t.noProxy),
		Labels: lbl, TLSDisabled: t.tlsDisabled, Public: t.public, RegistryEnabled: t.registry,
		InsecureRegistry: optional(t.insecureRegistry), ServerType: objects.Str(t.serverType),
		MasterLBEnabled: t.masterLB, FloatingIPEnabled: !t.fipOff, Hidden: t.hidden && !t.visible,
		ClusterDistro: optional(t.distro),
	}
	if fs.Changed("docker-volume-size") {
		ct.DockerVolumeSize = objects.Int(t.volume)
	}
	if tags := joinTags(t.tags); tags != "" {
		ct.Tags = objects.Str(tags)
	}
	return ct, nil
}

func templateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Aliases: []string{"cluster-template"}, Short: "Cluster templates"}

	var tf templateFlags
	create := &cobra.Command{
		Use:   "create NAME --image IMAGE [flags]",
		Short: "Create a cluster template (ClusterTemplate.create through the indirection API)",
		Long: `Create a cluster template with the flags of "openstack coe cluster template create"
(and its defaults: floating IPs enabled, no master load balancer, flavor
m1.medium, DNS 8.8.8.8). The Cluster API driver needs floating IPs or a master
load balancer to reach a cluster's API.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			ct, err := tf.template(cmd, a)
			if err != nil {
				return err
			}
			return g.session(func(ctx context.Context, s *session, cmd *cobra.Command, _ []string) error {
				if (ct.Public || ct.Hidden) && !g.isAdmin() {
					return usagef("only an admin may make a template public or hidden (magnum-api's ClusterTemplatePublishDenied)")
				}
				switch _, err := classAction[*objects.ClusterTemplate](ctx, s, objects.NameClusterTemplate, "get_by_name", tf.name); {
				case err == nil, isClass(err, exception.ClassConflict):
					return usagef("a cluster template named %s already exists: choose another name", tf.name)
				case !isClass(err, exception.ClassClusterTemplateNotFound):
					return err
				}
				project, user := g.requestProject()
				ct.ProjectID, ct.UserID = optional(project), optional(user)
				created, err := instanceAction(ctx, s, ct, "create")
				if err != nil {
					return err
				}
				return g.print(showTable(created))
			})(cmd, a)
		},
	}
	tf.register(create)

	list := &cobra.Command{
		Use: "list", Short: "List cluster templates", Args: args(0, 0),
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
		Use: "show NAME|UUID|ID", Short: "Show a cluster template", Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := getTemplate(ctx, s, args[0])
			if err != nil {
				return err
			}
			return g.print(showTable(c))
		}),
	}
	del := &cobra.Command{
		Use: "delete NAME|UUID|ID", Short: "Delete a cluster template that no cluster uses", Args: args(1, 1),
		RunE: g.session(func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error {
			c, err := getTemplate(ctx, s, args[0])
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
