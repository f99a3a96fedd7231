package capi

import (
	"slices"
	"strings"

	"github.com/openstack/magnum-conductor/api/objects"
)

// apiFloatingIP reports whether the cluster's API gets a floating IP:
// floating_ip_enabled, or with a load balancer the
// master_lb_floating_ip_enabled label when set.
func apiFloatingIP(c *objects.Cluster, l Labels) bool {
	if b, ok := l.Bool("master_lb_floating_ip_enabled"); ok && c.MasterLBEnabled {
		return b
	}
	return c.FloatingIPEnabled
}

// allowedCIDRs is the load balancer's allowed list: the cluster's, plus
// the management cluster's egress prefixes so that Cluster API is never
// locked out of the cluster it manages. An empty list allows every source
// and stays empty.
func allowedCIDRs(cluster, management []string) []string {
	if len(cluster) == 0 {
		return cluster
	}
	out := slices.Clone(cluster)
	for _, m := range management {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// checkAPIReachable refuses a cluster whose API the management cluster
// could not reach: without a floating IP the API listens on the cluster's
// private network only, which the management cluster reaches only when
// the operator routes it there (ManagementNetworkRouted).
func (o Options) checkAPIReachable(c *objects.Cluster, l Labels) error {
	if apiFloatingIP(c, l) || o.ManagementNetworkRouted {
		return nil
	}
	return invalid("The cluster's API would have no floating IP (floating_ip_enabled or master_lb_floating_ip_enabled is false), " +
		"and the Cluster API management cluster cannot reach a private API: this cloud does not route the management " +
		"cluster to tenant networks ([capi_driver] management_network_routed is false). Enable the floating IP, or ask " +
		"the operator.")
}

// checkBootstrap refuses an OS the classes cannot bootstrap: they write
// cloud-init (kubeadm's default format); Flatcar Container Linux reads
// Ignition only, so its servers would boot and never join. The template
// keeps routing to this driver (its (vm, flatcar) key is kept so that
// existing templates stay valid); the create says why it cannot work.
func checkBootstrap(t *objects.ClusterTemplate) error {
	if t != nil && strings.HasPrefix(strings.ToLower(deref(t.ClusterDistro)), "flatcar") {
		return invalid("The Cluster API driver bootstraps nodes with cloud-init; Flatcar Container Linux "+
			"(cluster_distro %s) needs Ignition, which its ClusterClass does not write. Use an Ubuntu or Rocky Linux image.",
			deref(t.ClusterDistro))
	}
	return nil
}
