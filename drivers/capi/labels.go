package capi

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/openstack/magnum-conductor/api/exception"
)

// LabelType is the type of a label value.
type LabelType string

// Label types.
const (
	LabelString  LabelType = "string"  // restricted to [A-Za-z0-9._:/@-]
	LabelInt     LabelType = "int"     // base 10, within [Min, Max]
	LabelBool    LabelType = "bool"    // true/false (Python's "True"/"False" accepted)
	LabelVersion LabelType = "version" // Kubernetes version vMAJOR.MINOR.PATCH
	LabelCIDR    LabelType = "cidr"    // an IP prefix
	LabelCIDRs   LabelType = "cidrs"   // comma-separated IP prefixes
	LabelList    LabelType = "list"    // comma-separated strings (LabelString rules); see SpaceSeparated
	LabelEnum    LabelType = "enum"    // one of Enum
	// LabelPairs is a comma-separated list whose items are strings
	// (LabelString rules) or key=value pairs of them.
	LabelPairs LabelType = "pairs"
)

// LabelSpec declares one label the driver reads.
type LabelSpec struct {
	Name    string
	Type    LabelType
	Default string // applied when the label is absent; "" means no value
	Enum    []string
	Min     *int64
	Max     *int64
	Help    string
	// Variable is the ClusterClass variable that carries the label to the
	// nodes; "" when the driver itself applies it. A cluster whose class
	// does not declare it cannot apply the label (see LabelWarnings).
	Variable string
	// SpaceSeparated lets a LabelList also be separated by white space
	// (magnum-capi-helm writes extra_network_names so). Other lists keep
	// a space inside an item, which the item's rules then refuse.
	SpaceSeparated bool
}

// LabelSchema is the set of labels the driver understands. Labels not in
// the schema never reach a template; LabelWarnings reports them.
type LabelSchema []LabelSpec

func i64(v int64) *int64 { return &v }

// DefaultLabelSchema returns the labels the driver understands by default.
func DefaultLabelSchema() LabelSchema {
	return append(LabelSchema{
		{Name: "kube_tag", Type: LabelVersion, Default: "v1.33.4", Help: "Kubernetes version"},
		{Name: "availability_zone", Type: LabelString, Help: "Nova AZ of worker nodes"},
		{Name: "control_plane_availability_zones", Type: LabelList, Help: "failure domains of the control plane"},
		{Name: "boot_volume_size", Type: LabelInt, Default: "0", Min: i64(0), Max: i64(16384), Help: "root volume GiB; 0 boots from the image"},
		{Name: "boot_volume_type", Type: LabelString, Help: "Cinder volume type of the root volume"},
		{Name: "etcd_volume_size", Type: LabelInt, Default: "0", Min: i64(0), Max: i64(1024), Variable: "etcdVolume", Help: "GiB of etcd's own Cinder volume; 0: etcd on the root disk"},
		{Name: "etcd_volume_type", Type: LabelString, Variable: "etcdVolume", Help: "Cinder volume type of etcd's volume"},
		{Name: "docker_volume_type", Type: LabelString, Variable: "containerVolume", Help: "Cinder volume type of the container runtime volume (docker_volume_size)"},
		{Name: "fixed_subnet_cidr", Type: LabelCIDR, Default: "10.0.0.0/24"},
		{Name: "calico_ipv4pool", Type: LabelCIDR, Default: "10.100.0.0/16"},
		{Name: "service_cluster_ip_range", Type: LabelCIDR, Default: "10.254.0.0/16"},
		{Name: "dns_cluster_domain", Type: LabelString, Default: "cluster.local"},
		{Name: "network_driver", Type: LabelEnum, Enum: []string{"calico", "cilium"}, Default: "calico"},
		{Name: "octavia_provider", Type: LabelEnum, Enum: []string{"amphora", "ovn"}, Default: "amphora"},
		{Name: "master_lb_floating_ip_enabled", Type: LabelBool},
		{Name: "api_master_lb_allowed_cidrs", Type: LabelCIDRs},
		{Name: "auto_healing_enabled", Type: LabelBool, Default: "true"},
		{Name: "auto_scaling_enabled", Type: LabelBool, Default: "false"},
		{Name: "min_node_count", Type: LabelInt, Min: i64(0), Max: i64(1000)},
		{Name: "max_node_count", Type: LabelInt, Min: i64(1), Max: i64(1000)},
		{Name: "autoscaler_tag", Type: LabelString, Help: "cluster-autoscaler image tag; default v<kube minor>.0"},

		// Nodes behind a proxy, and registries (class magnum-v3).
		{Name: "http_proxy", Type: LabelString, Variable: "proxy", Help: "HTTP proxy of containerd and the kubelet"},
		{Name: "https_proxy", Type: LabelString, Variable: "proxy", Help: "HTTPS proxy of containerd and the kubelet"},
		{Name: "no_proxy", Type: LabelList, Variable: "proxy", Help: "hosts not proxied, beside the cluster's own networks"},
		// container_infra_prefix (addOnLabelSpecs) is also kubeadm's imageRepository (v3).
		{Name: "registry_mirrors", Type: LabelPairs, Variable: "registries", Help: "containerd mirrors: <registry>=<mirror URL>, or a URL mirroring docker.io"},
		{Name: "insecure_registry", Type: LabelList, Variable: "registries", Help: "registries (host[:port]) reached over HTTP or without TLS verification"},
		// Nova server groups of the control plane and of each nodegroup
		// (a nodegroup label overrides it for the nodegroup; class magnum-v3).
		{Name: "server_group_policies", Type: LabelEnum, Enum: []string{"soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity"},
			Default: "soft-anti-affinity", Variable: "controlPlaneServerGroup"},
		// Worker nodes' labels and taints (cluster or nodegroup; class magnum-v3).
		{Name: "node_labels", Type: LabelPairs, Variable: "nodeLabels", Help: "key=value labels the kubelet sets on worker nodes"},
		{Name: "node_taints", Type: LabelPairs, Variable: "nodeTaints", Help: "key[=value]:Effect taints of worker nodes"},
		// Extra networks of worker nodes (cluster or nodegroup) and the
		// kubelets' TLS cipher suites (class magnum-v4).
		extraNetworkNamesSpec(),
		{Name: "extra_network_name", Type: LabelString, Variable: "extraNetworks", Help: "one extra network (magnum-capi-helm's older label); extra_network_names wins"},
		{Name: "kubelet_tls_cipher_suites", Type: LabelList, Variable: "kubeletTLSCipherSuites", Help: "the kubelets' --tls-cipher-suites"},
		// API server (class magnum-v3).
		{Name: "api_server_cert_sans", Type: LabelList, Variable: "apiServer", Help: "extra subject alternative names of the API server certificate"},
		{Name: "api_server_tls_cipher_suites", Type: LabelList, Variable: "apiServer"},
		{Name: "admission_control_list", Type: LabelList, Variable: "apiServer", Help: "admission plugins enabled beside the defaults"},
		{Name: "keystone_auth_enabled", Type: LabelBool, Default: "true", Variable: "apiServer", Help: "k8s-keystone-auth token and authorization webhook"},
		{Name: "oidc_issuer_url", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_client_id", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_username_claim", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_username_prefix", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_groups_claim", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_groups_prefix", Type: LabelString, Variable: "apiServer"},
		{Name: "oidc_required_claims", Type: LabelPairs, Variable: "apiServer", Help: "claim=value pairs"},
		{Name: "audit_log_enabled", Type: LabelBool, Default: "false", Variable: "auditLog"},
		{Name: "audit_log_maxage", Type: LabelInt, Default: "30", Min: i64(0), Max: i64(3650), Variable: "auditLog", Help: "days"},
		{Name: "audit_log_maxbackup", Type: LabelInt, Default: "10", Min: i64(0), Max: i64(1000), Variable: "auditLog"},
		{Name: "audit_log_maxsize", Type: LabelInt, Default: "100", Min: i64(0), Max: i64(100000), Variable: "auditLog", Help: "MiB"},
	}, append(addOnLabelSpecs(), healingLabelSpecs()...)...)
}

// withDefaults returns a copy of the schema with the given values as the
// defaults of their labels (site-wide defaults).
func (s LabelSchema) withDefaults(defaults map[string]string) LabelSchema {
	if len(defaults) == 0 {
		return s
	}
	out := slices.Clone(s)
	for i, l := range out {
		if v, ok := defaults[l.Name]; ok {
			out[i].Default = strings.TrimSpace(v)
		}
	}
	return out
}

var (
	labelNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	labelStringRE = regexp.MustCompile(`^[A-Za-z0-9._:/@-]*$`)
	versionRE     = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)
)

func (s LabelSchema) validateSchema() error {
	var errs []error
	seen := map[string]bool{}
	for _, l := range s {
		if !labelNameRE.MatchString(l.Name) {
			errs = append(errs, fmt.Errorf("capi: label schema: bad label name %q", l.Name))
		}
		if seen[l.Name] {
			errs = append(errs, fmt.Errorf("capi: label schema: %q declared twice", l.Name))
		}
		seen[l.Name] = true
		if l.SpaceSeparated && l.Type != LabelList {
			errs = append(errs, fmt.Errorf("capi: label schema: %q: only a list can be space-separated", l.Name))
		}
		if l.Default != "" {
			if _, err := l.parse(l.Default); err != nil {
				errs = append(errs, fmt.Errorf("capi: label schema: default of %q: %w", l.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (l LabelSpec) parse(v string) (any, error) {
	switch l.Type {
	case LabelString:
		if !labelStringRE.MatchString(v) || len(v) > 255 {
			return nil, errors.New("must match [A-Za-z0-9._:/@-]{0,255}")
		}
		return v, nil
	case LabelInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, errors.New("must be an integer")
		}
		if l.Min != nil && n < *l.Min || l.Max != nil && n > *l.Max {
			return nil, fmt.Errorf("must be between %s and %s", bound(l.Min, "-inf"), bound(l.Max, "inf"))
		}
		return n, nil
	case LabelBool:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("must be true or false")
	case LabelVersion:
		if !versionRE.MatchString(v) {
			return nil, errors.New("must be a Kubernetes version like v1.33.4")
		}
		return v, nil
	case LabelCIDR:
		p, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil {
			return nil, errors.New("must be a CIDR like 10.0.0.0/24")
		}
		return p.Masked().String(), nil
	case LabelCIDRs, LabelList, LabelPairs:
		var out []string
		items := strings.Split(v, ",")
		if l.Type == LabelList && l.SpaceSeparated {
			items = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		}
		for _, item := range items {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			sub := LabelSpec{Type: LabelString}
			if l.Type == LabelCIDRs {
				sub.Type = LabelCIDR
			}
			parts := []string{item}
			if l.Type == LabelPairs {
				if k, v, ok := strings.Cut(item, "="); ok {
					parts = []string{strings.TrimSpace(k), strings.TrimSpace(v)}
				}
			}
			var ps []string
			for _, part := range parts {
				p, err := sub.parse(part)
				if err != nil || part == "" {
					if err == nil {
						err = errors.New("empty key or value")
					}
					return nil, fmt.Errorf("item %q: %w", item, err)
				}
				ps = append(ps, p.(string))
			}
			out = append(out, strings.Join(ps, "="))
		}
		return out, nil
	case LabelDuration:
		return l.parseDuration(v)
	case LabelIntOrPercent:
		return l.parseIntOrPercent(v)
	case LabelEnum:
		if !slices.Contains(l.Enum, v) {
			return nil, fmt.Errorf("must be one of %s", strings.Join(l.Enum, ", "))
		}
		return v, nil
	}
	return nil, fmt.Errorf("unknown label type %q", l.Type)
}

func bound(p *int64, inf string) string {
	if p == nil {
		return inf
	}
	return strconv.FormatInt(*p, 10)
}

// Labels holds parsed label values, defaults applied.
type Labels struct {
	values map[string]any
}

// Parse checks labels against the schema. The first invalid label yields
// InvalidParameterValue naming the label, the value and the rule.
func (s LabelSchema) Parse(labels map[string]string) (Labels, error) {
	out := Labels{values: map[string]any{}}
	for _, l := range s {
		raw, ok := labels[l.Name]
		if !ok || raw == "" {
			raw = l.Default
		}
		if raw == "" {
			continue
		}
		v, err := l.parse(raw)
		if err != nil {
			return Labels{}, exception.ClassInvalidParameterValue.New(map[string]any{
				"err": fmt.Sprintf("Invalid value %q for label %s: %v.", raw, l.Name, err)})
		}
		out.values[l.Name] = v
	}
	return out, nil
}

// String returns a string label ("" when unset).
func (l Labels) String(name string) string { s, _ := l.values[name].(string); return s }

// Int returns an integer label and whether it is set.
func (l Labels) Int(name string) (int64, bool) { n, ok := l.values[name].(int64); return n, ok }

// Bool returns a boolean label and whether it is set.
func (l Labels) Bool(name string) (bool, bool) { b, ok := l.values[name].(bool); return b, ok }

// List returns a list label.
//
// An unset list is empty, never nil: the ClusterClass variables are
// `type: array`, and the webhooks refuse null.
func (l Labels) List(name string) []string {
	if s, _ := l.values[name].([]string); s != nil {
		return s
	}
	return []string{}
}
