package capi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/objects"
)

// namedValue is a topology variable before it is encoded.
type namedValue struct {
	name string
	v    any
}

// variables lists the variables a bundle version's ClusterClass declares.
func (s classSet) variables(version string) (map[string]bool, error) {
	objs, err := s.bundle(version)
	if err != nil {
		return nil, err
	}
	cc := &clusterv1.ClusterClass{}
	if err := fromUnstructured(objs[len(objs)-1].Object, cc); err != nil {
		return nil, fmt.Errorf("capi: ClusterClass bundle %s: %w", version, err)
	}
	out := map[string]bool{}
	for _, v := range cc.Spec.Variables {
		out[v.Name] = true
	}
	if cc.Spec.ControlPlane.HealthCheck.IsDefined() {
		out[variableHealthCheck] = true
	}
	for _, md := range cc.Spec.Workers.MachineDeployments {
		if md.HealthCheck.IsDefined() {
			out[variableHealthCheck] = true
		}
	}
	return out, nil
}

// dockerHub is the registry images without a host come from, and the
// server containerd pulls them from.
const (
	dockerHub       = "docker.io"
	dockerHubServer = "https://registry-1.docker.io"
)

// optionVariables are the node and API-server options of the labels
// (class magnum-v3 and later): every one is always set, empty when its
// labels are unset, so that the class's templates never read a missing
// value. clusterNets are the node, pod and service CIDRs and the DNS
// domain, which are never proxied.
func optionVariables(l Labels, c *objects.Cluster, t *objects.ClusterTemplate, clusterNets []string) []namedValue {
	proxy := map[string]any{"http": l.String("http_proxy"), "https": l.String("https_proxy"), "noProxy": ""}
	if l.String("http_proxy") != "" || l.String("https_proxy") != "" {
		noProxy := []string{"localhost", "127.0.0.1", "169.254.169.254", ".svc"}
		for _, n := range clusterNets {
			if n != "" {
				noProxy = append(noProxy, n)
			}
		}
		for _, h := range l.List("no_proxy") {
			if !slices.Contains(noProxy, h) {
				noProxy = append(noProxy, h)
			}
		}
		proxy["noProxy"] = strings.Join(noProxy, ",")
	}

	type registry struct {
		mirrors  []string
		insecure bool
	}
	regs := map[string]*registry{}
	reg := func(host string) *registry {
		if regs[host] == nil {
			regs[host] = &registry{}
		}
		return regs[host]
	}
	for _, item := range l.List("registry_mirrors") {
		host, mirror, ok := strings.Cut(item, "=")
		if !ok {
			host, mirror = dockerHub, item
		}
		r := reg(host)
		r.mirrors = append(r.mirrors, mirror)
	}
	for _, host := range l.List("insecure_registry") {
		reg(host).insecure = true
	}
	registries := []any{}
	for _, host := range slices.Sorted(maps.Keys(regs)) {
		r := regs[host]
		server := "https://" + host
		if host == dockerHub {
			server = dockerHubServer
		}
		mirrors := make([]any, 0, len(r.mirrors))
		for _, m := range r.mirrors {
			mirrors = append(mirrors, m)
		}
		registries = append(registries, map[string]any{"host": host, "server": server, "mirrors": mirrors, "insecure": r.insecure})
	}

	keystone, _ := l.Bool("keystone_auth_enabled")
	audit, _ := l.Bool("audit_log_enabled")
	maxAge, _ := l.Int("audit_log_maxage")
	maxBackup, _ := l.Int("audit_log_maxbackup")
	maxSize, _ := l.Int("audit_log_maxsize")
	return []namedValue{
		{"proxy", proxy},
		{"imageRepository", strings.TrimSuffix(l.String("container_infra_prefix"), "/")},
		{"registries", registries},
		{"apiServer", map[string]any{
			"certSANs":         l.List("api_server_cert_sans"),
			"tlsCipherSuites":  l.List("api_server_tls_cipher_suites"),
			"admissionPlugins": l.List("admission_control_list"),
			"keystoneAuth":     keystone,
			"oidc": map[string]any{
				"issuerURL":      l.String("oidc_issuer_url"),
				"clientID":       l.String("oidc_client_id"),
				"usernameClaim":  l.String("oidc_username_claim"),
				"usernamePrefix": l.String("oidc_username_prefix"),
				"groupsClaim":    l.String("oidc_groups_claim"),
				"groupsPrefix":   l.String("oidc_groups_prefix"),
				"requiredClaims": l.List("oidc_required_claims"),
			},
		}},
		{"auditLog", map[string]any{"enabled": audit, "maxAge": maxAge, "maxBackup": maxBackup, "maxSize": maxSize}},
		{"etcdVolume", volume(l, "etcd_volume_size", "etcd_volume_type")},
		{"containerVolume", containerVolume(l, c.DockerVolumeSize, t.DockerVolumeSize)},
		{"extraNetworks", extraNetworks(l.List("extra_network_names"), l.String("extra_network_name"))},
		{"kubeletTLSCipherSuites", strings.Join(l.List("kubelet_tls_cipher_suites"), ",")},
	}
}

// LabelWarnings reports the labels of a cluster the driver will not apply:
// those it does not understand, and those whose variable the cluster's
// class (declared: its variables) does not declare. A label set to its
// default, or to nothing, is not reported. The warnings name labels,
// never their values (a proxy URL may hold a password).
func (s LabelSchema) LabelWarnings(raw map[string]string, declared map[string]bool, classVersion string) []string {
	var unknown, unapplied []string
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		i := slices.IndexFunc(s, func(l LabelSpec) bool { return l.Name == name })
		if i < 0 {
			unknown = append(unknown, name)
			continue
		}
		l := s[i]
		if l.Variable == "" || declared[l.Variable] || raw[name] == "" || raw[name] == l.Default {
			continue
		}
		unapplied = append(unapplied, name)
	}
	var out []string
	if len(unknown) > 0 {
		out = append(out, "labels not understood by the Cluster API driver, ignored: "+strings.Join(unknown, ", "))
	}
	if len(unapplied) > 0 {
		out = append(out, fmt.Sprintf("labels not applied by ClusterClass %s (an upgrade to a newer class applies them): %s",
			className(classVersion), strings.Join(unapplied, ", ")))
	}
	return out
}

// annotationLabelWarnings holds, on the Cluster, the label warnings of its
// last apply ("; "-separated), which the status sync appends to the
// cluster's status_reason.
const annotationLabelWarnings = "magnum.openstack.org/label-warnings"

// noteLabelWarnings records in ann the warnings about the cluster's labels
// on class version (none: the annotation is removed), and logs them (at
// every apply: create, update, resize, upgrade).
func (d *Driver) noteLabelWarnings(ctx context.Context, c *objects.Cluster, t *objects.ClusterTemplate, ngs []*objects.NodeGroup,
	version string, ann map[string]string) error {
	declared, err := d.classes.variables(version)
	if err != nil {
		return err
	}
	merged := mergedLabels(c, t)
	all := d.opts.Labels.LabelWarnings(merged, declared, version)
	all = append(all, d.opts.Labels.healingLabelWarnings(merged, ngs, declared)...)
	for _, ng := range ngs {
		all = append(all, d.opts.Labels.nodeGroupLabelWarnings(ng, merged, declared, version)...)
	}
	w := strings.Join(all, "; ")
	if w != "" {
		d.log.WarnContext(ctx, "cluster labels not applied", append(d.logAttrs(ctx, c), "warning", w)...)
	}
	if w == "" {
		delete(ann, annotationLabelWarnings)
	} else {
		ann[annotationLabelWarnings] = w
	}
	return nil
}

// withLabelWarnings appends the Cluster's label and image warnings, then
// the further warnings given (the add-ons'), to a status reason.
func withLabelWarnings(reason string, cl *clusterv1.Cluster, more ...string) string {
	var ws []string
	if cl != nil {
		for _, k := range []string{annotationLabelWarnings, annotationImageWarnings} {
			if v := cl.Annotations[k]; v != "" {
				ws = append(ws, v)
			}
		}
	}
	for _, v := range more {
		if v != "" {
			ws = append(ws, v)
		}
	}
	w := strings.Join(ws, "; ")
	switch {
	case w == "":
		return reason
	case reason == "":
		return "Warning: " + w
	}
	return reason + " (warning: " + w + ")"
}

// volume is a {size, type} volume variable from a size and a type label.
func volume(l Labels, sizeLabel, typeLabel string) map[string]any {
	size, _ := l.Int(sizeLabel)
	return map[string]any{"size": size, "type": l.String(typeLabel)}
}

// containerVolume is the container runtime volume: the first
// docker_volume_size set (nodegroup, cluster, template; 0: none) and the
// docker_volume_type label.
func containerVolume(l Labels, sizes ...*int64) map[string]any {
	var size int64
	for _, s := range sizes {
		if s != nil && *s > 0 {
			size = *s
			break
		}
	}
	return map[string]any{"size": size, "type": l.String("docker_volume_type")}
}

// nodeGroupOverrides are a worker nodegroup's own variables: its boot
// volume (boot_volume_size, boot_volume_type labels on the nodegroup,
// the cluster's where unset) and container runtime volume (its
// docker_volume_size), when the class declares them. A nodegroup label is
// checked by the rules of the cluster label.
func nodeGroupOverrides(l Labels, ng *objects.NodeGroup, declared map[string]bool) ([]namedValue, error) {
	var out []namedValue
	own := map[string]any{}
	for _, name := range []string{"boot_volume_size", "boot_volume_type"} {
		raw, ok := ng.Labels[name]
		if !ok || raw == "" {
			continue
		}
		i := slices.IndexFunc(DefaultLabelSchema(), func(s LabelSpec) bool { return s.Name == name })
		v, err := DefaultLabelSchema()[i].parse(raw)
		if err != nil {
			return nil, invalid("Invalid value %q for label %s of nodegroup %s: %v.", raw, name, ng.Name, err)
		}
		own[name] = v
	}
	if len(own) > 0 {
		size, _ := l.Int("boot_volume_size")
		if n, ok := own["boot_volume_size"].(int64); ok {
			size = n
		}
		typ := l.String("boot_volume_type")
		if s, ok := own["boot_volume_type"].(string); ok {
			typ = s
		}
		out = append(out, namedValue{"bootVolume", map[string]any{"size": size, "type": typ}})
	}
	if ng.DockerVolumeSize != nil && *ng.DockerVolumeSize > 0 && declared["containerVolume"] {
		out = append(out, namedValue{"containerVolume", containerVolume(l, ng.DockerVolumeSize)})
	}
	return out, nil
}
