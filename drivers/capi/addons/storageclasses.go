package addons

import (
	"iter"
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
// the type's name (see typeClass).
func VolumeTypeClass(volumeType string) string { return typeClass("cinder-", volumeType) }

// typeClass is the StorageClass name of a volume or share type: prefix and
// the type's name in lower case, each run of other characters a dash, cut
// to fit a name ("" when nothing is left of it).
func typeClass(prefix, typ string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(typ), "-"), "-")
	if s == "" {
		return ""
	}
	s = prefix + s
	if len(s) > 253 {
		s = strings.TrimRight(s[:253], "-")
	}
	return s
}

// typeClasses yields each of types with its class name (className's),
// leaving out a type whose name has nothing left and the later of two
// types of one class name (the first keeps it).
func typeClasses(types []string, className func(string) string) iter.Seq2[string, string] {
	return func(yield func(name, typ string) bool) {
		seen := map[string]bool{}
		for _, t := range types {
			name := className(t)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			if !yield(name, t) {
				return
			}
		}
	}
}

// volumeTypeClasses are the StorageClasses of cl's volume types, the
// default one's marked default; none when the types are not known.
func volumeTypeClasses(cl Cluster) []Object {
	var out []Object
	for name, vt := range typeClasses(cl.VolumeTypes, VolumeTypeClass) {
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
	manilaSecret      = "manila-csi-credentials" //nolint:gosec // the name of a Kubernetes Secret, not a credential
)

// ShareTypeClass is the StorageClass name of a share type: manila- and the
// type's name (see typeClass).
func ShareTypeClass(shareType string) string { return typeClass("manila-", shareType) }

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
	for name, st := range typeClasses(cl.ShareTypes, ShareTypeClass) {
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
