package addons

import (
	"fmt"
	"strings"
)

// Credential is an application credential and where to use it.
type Credential struct {
	AuthURL   string
	ID        string
	Secret    string
	Region    string
	Interface string
	// CACert is the cloud's CA bundle ("" for none).
	CACert string
}

// cloudConfigName is the workload cluster Secret (in kube-system) with the
// cloud.conf of the cloud controller manager and the Cinder CSI plugin,
// mounted by both at /etc/config.
const cloudConfigName = "cloud-config"

// CloudConfig is the cloud.conf of cloud-provider-openstack for cl: the
// application credential, and the load balancer options of its labels
// (octavia_provider, octavia_lb_algorithm, octavia_lb_healthcheck).
func CloudConfig(cl Cluster) string {
	c, l := cl.Credential, cl.Labels
	var b strings.Builder
	b.WriteString("[Global]\n")
	fmt.Fprintf(&b, "auth-url=%s\n", c.AuthURL)
	fmt.Fprintf(&b, "application-credential-id=%s\n", c.ID)
	fmt.Fprintf(&b, "application-credential-secret=%s\n", c.Secret)
	if c.Region != "" {
		fmt.Fprintf(&b, "region=%s\n", c.Region)
	}
	if c.CACert != "" {
		b.WriteString("ca-file=/etc/config/ca.crt\n")
	}
	provider := l.String("octavia_provider")
	if provider == "" {
		provider = "amphora"
	}
	method := l.String("octavia_lb_algorithm")
	if method == "" {
		method = "ROUND_ROBIN"
		if provider == "ovn" { // the OVN provider only does SOURCE_IP_PORT
			method = "SOURCE_IP_PORT"
		}
	}
	b.WriteString("\n[LoadBalancer]\n")
	fmt.Fprintf(&b, "lb-provider=%s\nlb-method=%s\n", provider, method)
	fmt.Fprintf(&b, "create-monitor=%t\n", enabled(l, "octavia_lb_healthcheck", true))
	b.WriteString("\n[BlockStorage]\nignore-volume-az=true\n")
	return b.String()
}

// CloudConfigSecret is the kube-system/cloud-config Secret of cl.
func CloudConfigSecret(cl Cluster) Object {
	data := map[string]any{"cloud.conf": CloudConfig(cl)}
	if cl.Credential.CACert != "" {
		data["ca.crt"] = cl.Credential.CACert
	}
	return Object{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"name": cloudConfigName, "namespace": "kube-system"},
		"stringData": data}
}

func calicoValues(cl Cluster, registry string) map[string]any {
	inst := map[string]any{
		"enabled": true,
		"cni":     map[string]any{"type": "Calico"},
		"calicoNetwork": map[string]any{
			"bgp": "Enabled",
			// IP-in-IP: the protocol Cluster API Provider OpenStack's
			// managed security groups open between nodes for Calico.
			"ipPools": []any{map[string]any{"cidr": cl.PodCIDR, "encapsulation": "IPIP", "natOutgoing": "Enabled",
				"nodeSelector": "all()", "blockSize": 26}},
		},
	}
	if registry != "" {
		host, path, _ := strings.Cut(registry, "/")
		inst["registry"] = host + "/"
		inst["imagePath"] = path
	}
	return map[string]any{"installation": inst}
}

func ciliumValues(cl Cluster) map[string]any {
	return map[string]any{
		"ipam": map[string]any{"mode": "cluster-pool",
			"operator": map[string]any{"clusterPoolIPv4PodCIDRList": []any{cl.PodCIDR}}},
		"kubeProxyReplacement": false,
		"operator":             map[string]any{"replicas": 1},
	}
}

func cloudProviderValues(cl Cluster, _ Labels) map[string]any {
	return map[string]any{
		"cluster": map[string]any{"name": cl.Name},
		"secret":  map[string]any{"enabled": true, "create": false, "name": cloudConfigName},
	}
}

func cinderValues(cl Cluster) map[string]any {
	return map[string]any{
		"clusterID": cl.Name,
		"secret":    map[string]any{"enabled": true, "create": false, "hostMount": false, "name": cloudConfigName},
		"storageClass": map[string]any{"enabled": true,
			"delete": map[string]any{"isDefault": !defaultVolumeTypeKnown(cl), "allowVolumeExpansion": true},
			"retain": map[string]any{"isDefault": false, "allowVolumeExpansion": true}},
	}
}

// nfsValues are the values of the csi-driver-nfs chart, whose node plugin
// the Manila CSI plugin forwards NFS mounts to. kubeletDir puts its socket
// where the Manila chart's default shareProtocols forward to
// (/var/lib/kubelet/plugins/csi-nfsplugin/csi.sock). Manila's controller
// provisions the shares and its StorageClasses (shareTypeClasses), so this
// chart's controller, idle, runs once and makes no StorageClass; no
// snapshot controller (nor its CRDs) either. These are the chart's v4.11.0
// defaults, set so that another chart version cannot change them.
func nfsValues() map[string]any {
	return map[string]any{
		"kubeletDir":          "/var/lib/kubelet",
		"controller":          map[string]any{"replicas": 1},
		"storageClass":        map[string]any{"create": false},
		"externalSnapshotter": map[string]any{"enabled": false},
	}
}

// setPath sets v at the path in m, making the tables on the way.
func setPath(m map[string]any, v any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// rewriteImages points every container image of objs at registry: the
// image's name (its last path element) with its tag and digest, under
// registry.
func rewriteImages(objs []Object, registry string) {
	for _, o := range objs {
		for _, spec := range podSpecs(o) {
			for _, key := range []string{"containers", "initContainers", "ephemeralContainers"} {
				cs, _ := spec[key].([]any)
				for _, c := range cs {
					cm, _ := c.(map[string]any)
					if img, _ := cm["image"].(string); img != "" {
						cm["image"] = registry + "/" + img[strings.LastIndex(img, "/")+1:]
					}
				}
			}
		}
	}
}

// podSpecs are the pod specs of a workload object.
func podSpecs(o Object) []map[string]any {
	get := func(m map[string]any, path ...string) map[string]any {
		for _, p := range path {
			m, _ = m[p].(map[string]any)
			if m == nil {
				return nil
			}
		}
		return m
	}
	var out []map[string]any
	for _, path := range [][]string{{"spec"}, {"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}} {
		if o["kind"] == "Pod" != (len(path) == 1) {
			continue
		}
		if s := get(o, path...); s != nil {
			out = append(out, s)
		}
	}
	return out
}
