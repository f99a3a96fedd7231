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

// One StorageClass per Manila share type (Cluster.ShareTypes, when the
// Manila CSI plugin is delivered), manila-<type>, for the chart's NFS
// protocol; the plugin authenticates with the cluster's application
// credential from the Secret kube-system/manila-csi-credentials. None is
// the default class (Cinder's is).
const (
	manilaProvisioner = "nfs.manila.csi.openstack.org"
	manilaSecret      = "manila-csi-credentials"
)

// ShareTypeClass is the StorageClass name of a share type ("" when
// nothing is left of it).
func ShareTypeClass(shareType string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(shareType), "-"), "-")
	if s == "" {
		return ""
	}
	s = "manila-" + s
	if len(s) > 253 {
		s = strings.TrimRight(s[:253], "-")
	}
	return s
}

// shareTypeClasses are the credential Secret and the StorageClasses of
// cl's share types; nothing when there are none.
func shareTypeClasses(cl Cluster) []Object {
	if len(cl.ShareTypes) == 0 {
		return nil
	}
	c := cl.Credential
	data := map[string]any{"os-authURL": c.AuthURL, "os-applicationCredentialID": c.ID, "os-applicationCredentialSecret": c.Secret}
	if c.Region != "" {
		data["os-region"] = c.Region
	}
	if c.Interface != "" {
		data["os-endpointType"] = c.Interface
	}
	if c.CACert != "" {
		data["os-certAuthority"] = c.CACert
	}
	out := []Object{{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": manilaSecret, "namespace": "kube-system"}, "stringData": data}}
	seen := map[string]bool{}
	for _, st := range cl.ShareTypes {
		name := ShareTypeClass(st)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		params := map[string]any{"type": st}
		for _, k := range []string{"provisioner", "node-stage", "node-publish", "controller-expand"} {
			params["csi.storage.k8s.io/"+k+"-secret-name"] = manilaSecret
			params["csi.storage.k8s.io/"+k+"-secret-namespace"] = "kube-system"
		}
		out = append(out, Object{
			"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata":             map[string]any{"name": name},
			"provisioner":          manilaProvisioner,
			"parameters":           params,
			"reclaimPolicy":        "Delete",
			"allowVolumeExpansion": true,
		})
	}
	return out
}
