package capi

import (
	"slices"

	"github.com/openstack/magnum-conductor/api/objects"
)

// extraNetworkNamesSpec is the extra_network_names label, of a cluster or
// of a nodegroup: comma- or space-separated, as magnum-capi-helm writes it.
func extraNetworkNamesSpec() LabelSpec {
	return LabelSpec{Name: "extra_network_names", Type: LabelList, SpaceSeparated: true, Variable: "extraNetworks",
		Anchors: "capi-helm same (it deprecates `extra_network_name`); mcapi none",
		Help: "Neutron networks (by name, comma- or space-separated) on each of which worker nodes get a port after their " +
			"port on the cluster's network, e.g. for CephFS or a storage network; a nodegroup's own replace the " +
			"cluster's. The control plane gets none"}
}

// extraNetworks is the extraNetworks variable (class magnum-v4): the
// networks of extra_network_names, else the one of extra_network_name
// (magnum-capi-helm's older label, which the newer wins over, as there),
// never nil (the class wants an array).
func extraNetworks(names []string, single string) []string {
	out := []string{}
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 && single != "" {
		out = append(out, single)
	}
	return out
}

// nodeGroupExtraNetworks is a worker nodegroup's own extraNetworks, when
// it sets extra_network_names or extra_network_name (else the cluster's
// applies). Its labels are checked by the rules of the cluster's.
func nodeGroupExtraNetworks(ng *objects.NodeGroup) ([]namedValue, error) {
	rawList, hasList := ng.Labels["extra_network_names"]
	rawOne, hasOne := ng.Labels["extra_network_name"]
	if (!hasList || rawList == "") && (!hasOne || rawOne == "") {
		return nil, nil
	}
	list, err := extraNetworkNamesSpec().parse(rawList)
	if err != nil {
		return nil, invalid("Invalid value %q for label extra_network_names of nodegroup %s: %v.", rawList, ng.Name, err)
	}
	one, err := (LabelSpec{Type: LabelString}).parse(rawOne)
	if err != nil {
		return nil, invalid("Invalid value %q for label extra_network_name of nodegroup %s: %v.", rawOne, ng.Name, err)
	}
	names, _ := list.([]string)
	return []namedValue{{"extraNetworks", extraNetworks(names, one.(string))}}, nil
}
