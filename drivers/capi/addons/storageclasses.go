package addons

import (
	"regexp"
	"slices"
	"strings"
)

// One StorageClass per Cinder volume type the cluster's project sees
// (Cluster.VolumeTypes), named cinder-<type>, with parameter type=<type>;
// the cloud's default type's class is the cluster's default StorageClass.
// The chart's own classes (csi-cinder-sc-delete, -retain: Cinder's
// default type) stay, for the workloads that name them, and are default
// only when the cloud names no default type.

const (
	cinderProvisioner      = "cinder.csi.openstack.org"
	annotationDefaultClass = "storageclass.kubernetes.io/is-default-class"
)

var notDNS = regexp.MustCompile(`[^a-z0-9]+`)

// VolumeTypeClass is the StorageClass name of a volume type: cinder- and
// the type's name in lower case, each run of other characters a dash,
// cut to fit a name ("" when nothing is left of it).
func VolumeTypeClass(volumeType string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(volumeType), "-"), "-")
	if s == "" {
		return ""
	}
	s = "cinder-" + s
	if len(s) > 253 {
		s = strings.TrimRight(s[:253], "-")
	}
	return s
}

// volumeTypeClasses are the StorageClasses of cl's volume types, the
// default one's marked default; none when the types are not known.
func volumeTypeClasses(cl Cluster) []Object {
	var out []Object
	seen := map[string]bool{}
	for _, vt := range cl.VolumeTypes {
		name := VolumeTypeClass(vt)
		if name == "" || seen[name] {
			continue // two types of one class name: the first keeps it
		}
		seen[name] = true
		out = append(out, Object{
			"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": name, "annotations": map[string]any{
				annotationDefaultClass: boolString(vt == cl.DefaultVolumeType)}},
			"provisioner":          cinderProvisioner,
			"parameters":           map[string]any{"type": vt},
			"reclaimPolicy":        "Delete",
			"allowVolumeExpansion": true,
			"volumeBindingMode":    "Immediate",
		})
	}
	return out
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// defaultVolumeTypeKnown reports whether one of cl's volume-type classes
// is the default, so that the chart's own are not.
func defaultVolumeTypeKnown(cl Cluster) bool {
	return cl.DefaultVolumeType != "" && VolumeTypeClass(cl.DefaultVolumeType) != "" && slices.Contains(cl.VolumeTypes, cl.DefaultVolumeType)
}
