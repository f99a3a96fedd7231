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
	// Help says what the label does here, for operators: the label table
	// of docs/capi-driver.md is generated from the schema (make docs),
	// so it is written as that table's cell (Markdown, `code` spans).
	Help string
	// Unset says what applies when the label is absent and Default is
	// "" (for the documentation only).
	Unset string
	// Anchors says how the two Cluster API anchors, vexxhost's
	// magnum-cluster-api ("mcapi") and magnum-capi-helm ("capi-helm"),
	// read the label: "same" when both read it as this driver does (for
	// the documentation only).
	Anchors string
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

// proxyHelp ends the help of http_proxy and https_proxy.
const proxyHelp = " (systemd drop-ins); the cluster's own networks, `localhost`, `127.0.0.1`, " +
	"`169.254.169.254`, `.svc` and `.<dns_cluster_domain>` are never proxied"

// DefaultLabelSchema returns the labels the driver understands by default.
func DefaultLabelSchema() LabelSchema {
	const mcapi, mcapiOIDC, mcapiAudit = "mcapi same", "mcapi same (`openidConnect`)", "mcapi same"
	return append(LabelSchema{
		{Name: "kube_tag", Type: LabelVersion, Default: "v1.33.4", Anchors: "mcapi same; capi-helm reads the image's `kube_version`",
			Help: "Kubernetes version: `spec.topology.version`; the image's `kube_version`, when set, must be its minor (see *Images and flavors*)"},
		{Name: "availability_zone", Type: LabelString, Anchors: "same",
			Help: "Nova availability zone of the worker nodes: the MachineDeployment's failure domain"},
		{Name: "control_plane_availability_zones", Type: LabelList, Anchors: mcapi,
			Help: "failure domains of the control plane: the OpenStackCluster's control-plane availability zones"},
		{Name: "boot_volume_size", Type: LabelInt, Default: "0", Min: i64(0), Max: i64(16384), Anchors: "same",
			Help: "root volume of the machines, in GiB; `0` boots from the image. A nodegroup's own value overrides the cluster's for its machines"},
		{Name: "boot_volume_type", Type: LabelString, Anchors: "same",
			Help: "Cinder volume type of the root volume; a nodegroup's own value overrides the cluster's for its machines"},
		{Name: "etcd_volume_size", Type: LabelInt, Default: "0", Min: i64(0), Max: i64(1024), Variable: "etcdVolume",
			Anchors: "mcapi same; capi-helm also `etcd_blockdevice_*`",
			Help: "GiB of etcd's own Cinder volume: the control plane's `/dev/vdb`, ext4 `etcd_disk` at `/var/lib/etcd`, " +
				"data in `/var/lib/etcd/data`; `0`: etcd on the root disk"},
		{Name: "etcd_volume_type", Type: LabelString, Variable: "etcdVolume", Anchors: mcapi,
			Help: "Cinder volume type of etcd's volume"},
		{Name: "docker_volume_type", Type: LabelString, Variable: "containerVolume", Anchors: mcapi,
			Help: "Cinder volume type of the container runtime volume at `/var/lib/containerd` (the next disk after etcd's), " +
				"whose size is the template's, cluster's or nodegroup's `docker_volume_size` field"},
		{Name: "fixed_subnet_cidr", Type: LabelCIDR, Default: "10.0.0.0/24", Anchors: "same",
			Help: "the cluster's managed subnet"},
		{Name: "calico_ipv4pool", Type: LabelCIDR, Default: "10.100.0.0/16", Anchors: "same",
			Help: "the pod network: the Cluster's `clusterNetwork.pods` (unless `network_driver=cilium` sets `cilium_ipv4pool`) and Calico's IP pool"},
		{Name: "service_cluster_ip_range", Type: LabelCIDR, Default: "10.254.0.0/16", Anchors: "same",
			Help: "the Cluster's service network"},
		{Name: "dns_cluster_domain", Type: LabelString, Default: "cluster.local", Anchors: "same",
			Help: "the Cluster's service domain"},
		{Name: "network_driver", Type: LabelEnum, Enum: []string{"calico", "cilium"}, Default: "calico", Anchors: "same",
			Help: "the CNI add-on: `calico` (Tigera's operator chart, IP-in-IP, the protocol CAPO's security groups open) or " +
				"`cilium`; anything else is refused at create"},
		{Name: "octavia_provider", Type: LabelEnum, Enum: []string{"amphora", "ovn"}, Default: "amphora", Anchors: "same",
			Help: "Octavia provider of the API load balancer, and `lb-provider` of Services of type LoadBalancer"},
		{Name: "master_lb_floating_ip_enabled", Type: LabelBool, Unset: "the cluster's `floating_ip_enabled`", Anchors: "same",
			Help: "a floating IP on the API load balancer (see *Private clusters*)"},
		{Name: "api_master_lb_allowed_cidrs", Type: LabelCIDRs, Unset: "open", Anchors: "capi-helm same; mcapi declined it",
			Help: "CIDRs allowed to reach the API load balancer, plus `[capi_driver] management_cidrs` when not open"},
		{Name: "auto_healing_enabled", Type: LabelBool, Default: "true", Anchors: "same (cluster only)",
			Help: "MachineHealthChecks of the control plane and the workers (classes that define them: v2 on). A worker " +
				"nodegroup's own value overrides the cluster's for its MachineDeployment (`false`: no health check for that " +
				"nodegroup; `true`: one even when the cluster has them off); the control plane's follows the cluster's"},
		{Name: "auto_scaling_enabled", Type: LabelBool, Default: "false", Anchors: "same",
			Help: "the cluster-autoscaler sizes the nodegroups between `min_node_count` and `max_node_count` (capacity " +
				"annotations from the flavor; see *Autoscaling*); a nodegroup's own value overrides the cluster's"},
		{Name: "min_node_count", Type: LabelInt, Min: i64(0), Max: i64(1000), Anchors: "same",
			Help: "smallest size of an autoscaled nodegroup"},
		{Name: "max_node_count", Type: LabelInt, Min: i64(1), Max: i64(1000), Anchors: "same",
			Help: "largest size of an autoscaled nodegroup"},
		{Name: "autoscaler_tag", Type: LabelString, Unset: "`v<Kubernetes minor>.0`", Anchors: "same",
			Help: "cluster-autoscaler image tag (the image is `[capi_driver] autoscaler_image`)"},

		// Nodes behind a proxy, and registries (class magnum-v3).
		{Name: "http_proxy", Type: LabelString, Variable: "proxy", Anchors: "mcapi same (`systemdProxyConfig`); capi-helm none",
			Help: "HTTP proxy of containerd and the kubelet" + proxyHelp},
		{Name: "https_proxy", Type: LabelString, Variable: "proxy", Anchors: "mcapi same (`systemdProxyConfig`); capi-helm none",
			Help: "HTTPS proxy of containerd and the kubelet" + proxyHelp},
		{Name: "no_proxy", Type: LabelList, Variable: "proxy", Anchors: "mcapi same (`systemdProxyConfig`); capi-helm none",
			Help: "hosts not proxied, beside the cluster's own networks, `localhost`, `127.0.0.1`, `169.254.169.254`, `.svc` " +
				"and `.<dns_cluster_domain>`"},
		// container_infra_prefix (addOnLabelSpecs) is also kubeadm's imageRepository (v3).
		{Name: "registry_mirrors", Type: LabelPairs, Variable: "registries",
			Anchors: "this driver's; mcapi configures containerd through `containerdConfig`",
			Help:    "containerd mirrors, as `certs.d/<registry>/hosts.toml`: `<registry>=<mirror URL>` pairs, or a URL mirroring `docker.io`"},
		{Name: "insecure_registry", Type: LabelList, Variable: "registries", Anchors: "Heat's name; mcapi none",
			Help: "registries (`host[:port]`) whose `hosts.toml` tries HTTPS without verification, then HTTP"},
		// Nova server groups of the control plane and of each nodegroup
		// (a nodegroup label overrides it for the nodegroup; class magnum-v3).
		{Name: "server_group_policies", Type: LabelEnum, Enum: []string{"soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity"},
			Default: "soft-anti-affinity", Variable: "controlPlaneServerGroup",
			Anchors: "mcapi same (groups `<stack_id>`, `<stack_id>-<ng>`); capi-helm none",
			Help: "policy of the Nova server group of the control plane and of one group per nodegroup; a nodegroup's own " +
				"value overrides it for its group, which is deleted with the nodegroup (a failure is logged: the " +
				"cluster's delete sweeps the rest)"},
		// Worker nodes' labels and taints (cluster or nodegroup; class magnum-v3).
		{Name: "node_labels", Type: LabelPairs, Variable: "nodeLabels", Anchors: "this driver's",
			Help: "`key=value,…`: the worker nodes' kubelet `--node-labels`; a nodegroup's own replace the cluster's; " +
				"domains the kubelet may not label (`kubernetes.io`, `k8s.io` but `node.` and `kubelet.`) are refused"},
		{Name: "node_taints", Type: LabelPairs, Variable: "nodeTaints", Anchors: "this driver's",
			Help: "`key[=value]:Effect,…`: kubeadm taints of the worker nodes; a nodegroup's own replace the cluster's"},
		// Extra networks of worker nodes (cluster or nodegroup) and the
		// kubelets' TLS cipher suites (class magnum-v4).
		extraNetworkNamesSpec(),
		{Name: "extra_network_name", Type: LabelString, Variable: "extraNetworks", Anchors: "capi-helm's older label; mcapi none",
			Help: "one extra network (magnum-capi-helm's older label); counts only when `extra_network_names` is unset"},
		{Name: "kubelet_tls_cipher_suites", Type: LabelList, Variable: "kubeletTLSCipherSuites", Unset: "the kubelet's",
			Anchors: "mcapi same (its default is a restricted list; here unset keeps the kubelet's defaults)",
			Help:    "every kubelet's `--tls-cipher-suites` (control plane and workers)"},
		// API server (class magnum-v3).
		{Name: "api_server_cert_sans", Type: LabelList, Variable: "apiServer", Anchors: mcapi,
			Help: "extra subject alternative names of the API server certificate"},
		{Name: "api_server_tls_cipher_suites", Type: LabelList, Variable: "apiServer", Anchors: mcapi,
			Help: "the API server's `--tls-cipher-suites`"},
		{Name: "admission_control_list", Type: LabelList, Variable: "apiServer",
			Anchors: "mcapi same (it always adds `NodeRestriction`; kubeadm enables it by default)",
			Help:    "admission plugins enabled beside the defaults: the API server's `--enable-admission-plugins`"},
		{Name: "keystone_auth_enabled", Type: LabelBool, Default: "true", Variable: "apiServer", Anchors: "same",
			Help: "the k8s-keystone-auth token and authorization webhook: its kubeconfig on control-plane nodes " +
				"(`https://127.0.0.1:8443/webhook`), `--authentication-token-webhook-config-file`, " +
				"`--authorization-mode=Node,RBAC,Webhook`, `--authorization-webhook-config-file`; the add-ons run the " +
				"keystone-auth pod (see the add-ons' *Who gets into a workload cluster*)"},
		{Name: "oidc_issuer_url", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC,
			Help: "the API server's `--oidc-issuer-url`; the other `oidc_*` labels apply only with an issuer"},
		{Name: "oidc_client_id", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC, Help: "`--oidc-client-id`"},
		{Name: "oidc_username_claim", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC, Help: "`--oidc-username-claim`"},
		{Name: "oidc_username_prefix", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC, Help: "`--oidc-username-prefix`"},
		{Name: "oidc_groups_claim", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC, Help: "`--oidc-groups-claim`"},
		{Name: "oidc_groups_prefix", Type: LabelString, Variable: "apiServer", Anchors: mcapiOIDC, Help: "`--oidc-groups-prefix`"},
		{Name: "oidc_required_claims", Type: LabelPairs, Variable: "apiServer", Anchors: mcapiOIDC,
			Help: "`claim=value,…` pairs: `--oidc-required-claim`"},
		{Name: "audit_log_enabled", Type: LabelBool, Default: "false", Variable: "auditLog", Anchors: mcapiAudit,
			Help: "an audit policy (metadata only for Secrets, ConfigMaps, TokenReviews), its log under `/var/log/kubernetes/audit`"},
		{Name: "audit_log_maxage", Type: LabelInt, Default: "30", Min: i64(0), Max: i64(3650), Variable: "auditLog", Anchors: mcapiAudit,
			Help: "days an audit log file is kept"},
		{Name: "audit_log_maxbackup", Type: LabelInt, Default: "10", Min: i64(0), Max: i64(1000), Variable: "auditLog", Anchors: mcapiAudit,
			Help: "audit log files kept"},
		{Name: "audit_log_maxsize", Type: LabelInt, Default: "100", Min: i64(0), Max: i64(100000), Variable: "auditLog", Anchors: mcapiAudit,
			Help: "MiB an audit log file grows to before it is rotated"},
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
