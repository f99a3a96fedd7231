package capi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openstack/magnum-conductor/api/objects"
)

// workerNodeGroupLabels are the labels a worker nodegroup may set for
// itself (each over the cluster's); every other label is the cluster's.
var workerNodeGroupLabels = []string{
	"availability_zone", "auto_scaling_enabled", "boot_volume_size", "boot_volume_type",
	"server_group_policies", "node_labels", "node_taints", "extra_network_names", "extra_network_name",
	"auto_healing_enabled", "auto_healing_unhealthy_timeout", "auto_healing_node_startup_timeout", "auto_healing_max_unhealthy",
}

// nodeGroupLabelWarnings reports a nodegroup's labels that are not
// applied: those the driver does not understand (unless the cluster has
// them too, which its own warning names), those that only apply to the
// whole cluster and that the nodegroup sets to another value than the
// cluster's (raw: the cluster's labels over its template's), its own
// labels whose variable the cluster's class does not declare, and its own
// auto-healing labels when auto-healing is off for it (its own
// auto_healing_enabled, else the cluster's). Magnum copies the cluster's
// labels into its nodegroups', so only differences are reported. Names
// only, never values.
func (s LabelSchema) nodeGroupLabelWarnings(ng *objects.NodeGroup, raw map[string]string, declared map[string]bool, classVersion string) []string {
	var unknown, clusterWide, unapplied, healingOff []string
	healing, healingOK := s.autoHealing(raw, ng)
	for _, name := range slices.Sorted(maps.Keys(ng.Labels)) {
		v := ng.Labels[name]
		i := slices.IndexFunc(s, func(l LabelSpec) bool { return l.Name == name })
		if i < 0 {
			if _, reported := raw[name]; !reported {
				unknown = append(unknown, name)
			}
			continue
		}
		own := ng.Role != objects.RoleMaster && slices.Contains(workerNodeGroupLabels, name)
		switch {
		case !own && v != raw[name] && !(v == s[i].Default && raw[name] == ""):
			clusterWide = append(clusterWide, name)
		case own && s[i].Variable != "" && !declared[s[i].Variable] && v != "" && v != s[i].Default && v != raw[name]:
			unapplied = append(unapplied, name)
		case own && slices.Contains(workerHealingLabels, name) && healingOK && !healing && v != "" && v != s[i].Default && v != raw[name]:
			healingOff = append(healingOff, name)
		}
	}
	var out []string
	if len(unknown) > 0 {
		out = append(out, fmt.Sprintf("labels of nodegroup %s not understood by the Cluster API driver, ignored: %s",
			ng.Name, strings.Join(unknown, ", ")))
	}
	if len(clusterWide) > 0 {
		out = append(out, fmt.Sprintf("labels of nodegroup %s that only the cluster sets, ignored: %s",
			ng.Name, strings.Join(clusterWide, ", ")))
	}
	if len(unapplied) > 0 {
		out = append(out, fmt.Sprintf("labels of nodegroup %s not applied by ClusterClass %s (an upgrade to a newer class applies them): %s",
			ng.Name, className(classVersion), strings.Join(unapplied, ", ")))
	}
	if len(healingOff) > 0 {
		out = append(out, fmt.Sprintf("labels of nodegroup %s %s: %s", ng.Name, healingOffWarning, strings.Join(healingOff, ", ")))
	}
	return out
}
