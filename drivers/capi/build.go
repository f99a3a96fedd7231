package capi

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// spec is everything a desired Cluster is built from.
type spec struct {
	Cluster      *objects.Cluster
	Template     *objects.ClusterTemplate
	NodeGroups   []*objects.NodeGroup // live ones; deleting ones are skipped
	Labels       Labels
	Namespace    string
	Name         string
	ClassVersion string
	// Classes holds the bundle of ClassVersion (nil: the embedded ones).
	Classes      classSet
	IdentityRef  string // the cloud-credentials Secret name
	Annotations  map[string]string
	MaxBatchSize int // 0: CAPI's default rollout
	// ManagementCIDRs are the management cluster's egress prefixes,
	// added to a non-empty api_master_lb_allowed_cidrs.
	ManagementCIDRs []string
	// ServerGroups are the Nova server group ids of the control plane
	// (key serverGroupControlPlane) and of each MachineDeployment (its
	// name); none: machines in no server group.
	ServerGroups map[string]string
	// Capacity are the capacity annotations of autoscaled
	// MachineDeployments, by name.
	Capacity map[string]map[string]string
}

func ownerLabels(c *objects.Cluster) map[string]string {
	return map[string]string{LabelClusterUUID: deref(c.UUID), LabelProjectID: sanitize(deref(c.ProjectID), 63)}
}

func firstNonEmpty(vals ...*string) string {
	for _, v := range vals {
		if v != nil && *v != "" {
			return *v
		}
	}
	return ""
}

func variable(name string, v any) (clusterv1.ClusterVariable, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return clusterv1.ClusterVariable{}, err
	}
	return clusterv1.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}}, nil
}

func invalid(format string, args ...any) error {
	return exception.ClassInvalidParameterValue.New(map[string]any{"err": fmt.Sprintf(format, args...)})
}

// isAutoscaled reports whether a nodegroup is handed to the autoscaler.
func isAutoscaled(l Labels, ng *objects.NodeGroup) bool {
	if v, ok := ng.Labels["auto_scaling_enabled"]; ok {
		return strings.EqualFold(v, "true")
	}
	b, _ := l.Bool("auto_scaling_enabled")
	return b
}

func autoscalerRange(l Labels, ng *objects.NodeGroup) (int64, int64) {
	minN := ng.MinNodeCount
	if minN < 1 {
		if v, ok := l.Int("min_node_count"); ok {
			minN = v
		}
	}
	maxN := deref(ng.MaxNodeCount)
	if maxN == 0 {
		if v, ok := l.Int("max_node_count"); ok {
			maxN = v
		} else {
			maxN = max(ng.NodeCount, minN+1)
		}
	}
	return minN, maxN
}

// desiredCluster builds the topology Cluster of a Magnum cluster.
func desiredCluster(s spec) (*clusterv1.Cluster, error) {
	c, t, l := s.Cluster, s.Template, s.Labels
	if t == nil {
		t = &objects.ClusterTemplate{}
	}
	var master *objects.NodeGroup
	var workers []*objects.NodeGroup
	for _, ng := range s.NodeGroups {
		if ng.Status == objects.DeleteInProgress || ng.Status == objects.DeleteComplete {
			continue
		}
		if ng.Role == objects.RoleMaster {
			master = ng
		} else {
			workers = append(workers, ng)
		}
	}
	if master == nil {
		return nil, invalid("Cluster %s has no master nodegroup.", deref(c.UUID))
	}
	if master.NodeCount < 1 || master.NodeCount%2 == 0 {
		return nil, invalid("master_count must be odd and at least 1, got %d.", master.NodeCount)
	}
	image := firstNonEmpty(master.ImageID, t.ImageID)
	if image == "" {
		return nil, invalid("The cluster template has no image_id.")
	}
	cpFlavor := firstNonEmpty(master.FlavorID, c.MasterFlavorID, t.MasterFlavorID)
	flavor := firstNonEmpty(c.FlavorID, t.FlavorID)
	if cpFlavor == "" || flavor == "" {
		return nil, invalid("Both master_flavor_id and flavor_id are required.")
	}
	owner := ownerLabels(c)
	labelsWith := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range owner {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	bootSize, _ := l.Int("boot_volume_size")
	fip := apiFloatingIP(c, l)
	dns := []string{} // never null: the variable is an array
	for _, d := range strings.Split(deref(t.DNSNameserver), ",") {
		if d = strings.TrimSpace(d); d != "" {
			dns = append(dns, d)
		}
	}
	vars := []namedValue{
		{"identityRefName", s.IdentityRef},
		{"cloudName", "openstack"},
		{"externalNetworkId", deref(t.ExternalNetworkID)},
		{"fixedNetworkId", firstNonEmpty(c.FixedNetwork, t.FixedNetwork)},
		{"fixedSubnetId", firstNonEmpty(c.FixedSubnet, t.FixedSubnet)},
		{"nodeCidr", l.String("fixed_subnet_cidr")},
		{"dnsNameservers", dns},
		{"apiServerLoadBalancer", map[string]any{
			"enabled": c.MasterLBEnabled, "provider": l.String("octavia_provider"),
			"allowedCIDRs": allowedCIDRs(l.List("api_master_lb_allowed_cidrs"), s.ManagementCIDRs)}},
		{"apiServerFloatingIP", fip},
		{"controlPlaneAvailabilityZones", l.List("control_plane_availability_zones")},
		{"controlPlaneFlavor", cpFlavor},
		{"flavor", flavor},
		{"imageID", image},
		{"sshKeyName", firstNonEmpty(c.Keypair, t.KeypairID)},
		{"bootVolume", map[string]any{"size": bootSize, "type": l.String("boot_volume_type")}},
	}
	// The options of later classes go only to a class that declares
	// them (the Cluster webhook refuses an undeclared variable);
	// LabelWarnings reports the labels an older class does not apply.
	declared, err := s.Classes.variables(s.ClassVersion)
	if err != nil {
		return nil, err
	}
	for _, v := range optionVariables(l, c, t, []string{l.String("fixed_subnet_cidr"), l.String("calico_ipv4pool"),
		l.String("service_cluster_ip_range"), "." + l.String("dns_cluster_domain")}) {
		if declared[v.name] {
			vars = append(vars, v)
		}
	}
	if declared["nodeLabels"] {
		nv, err := nodeLabelVariables(l.List("node_labels"), l.List("node_taints"), "the cluster")
		if err != nil {
			return nil, err
		}
		vars = append(vars, nv...)
	}
	if declared["controlPlaneServerGroup"] {
		vars = append(vars, namedValue{"controlPlaneServerGroup", s.ServerGroups[serverGroupControlPlane]},
			namedValue{"workerServerGroup", ""})
	}
	var cvars []clusterv1.ClusterVariable
	for _, v := range vars {
		cv, err := variable(v.name, v.v)
		if err != nil {
			return nil, err
		}
		cvars = append(cvars, cv)
	}

	// Auto-healing enables the class's MachineHealthChecks; a class
	// without them (magnum-v1) gets none, whatever the label says.
	autoHeal, _ := l.Bool("auto_healing_enabled")
	hc, err := s.Classes.healthChecks(s.ClassVersion)
	if err != nil {
		return nil, err
	}
	heal := healingOf(l)
	cpHealthCheck, err := controlPlaneHealthCheck(autoHeal, hc, heal)
	if err != nil {
		return nil, err
	}
	var mds []clusterv1.MachineDeploymentTopology
	seen := map[string]bool{}
	for _, ng := range workers {
		name := mdNameFor(ng)
		if seen[name] {
			return nil, invalid("Nodegroup names %q collide once sanitised.", ng.Name)
		}
		seen[name] = true
		md := clusterv1.MachineDeploymentTopology{
			Class: workerClass,
			Name:  name,
			Metadata: clusterv1.ObjectMeta{Labels: labelsWith(withNodeLabels(map[string]string{
				LabelNodeGroupUUID: ng.UUID, LabelRole: objects.RoleWorker}, ng))},
			FailureDomain: firstNonEmpty(ptr(ng.Labels["availability_zone"]), ptr(l.String("availability_zone"))),
		}
		ngAutoHeal, ngHeal, err := nodeGroupHealing(ng, autoHeal, heal)
		if err != nil {
			return nil, err
		}
		if md.HealthCheck, err = workerHealthCheck(ngAutoHeal, hc, workerClass, ngHeal); err != nil {
			return nil, err
		}
		if isAutoscaled(l, ng) {
			minN, maxN := autoscalerRange(l, ng)
			md.Metadata.Annotations = map[string]string{
				clusterv1.AutoscalerMinSizeAnnotation: strconv.FormatInt(minN, 10),
				clusterv1.AutoscalerMaxSizeAnnotation: strconv.FormatInt(maxN, 10),
			}
			maps.Copy(md.Metadata.Annotations, s.Capacity[name])
		} else {
			md.Replicas = ptr(int32(ng.NodeCount))
		}
		if s.MaxBatchSize > 0 {
			md.Rollout.Strategy = clusterv1.MachineDeploymentTopologyRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentTopologyRolloutStrategyRollingUpdate{
					MaxSurge: ptr(intstr.FromInt32(int32(s.MaxBatchSize))), MaxUnavailable: ptr(intstr.FromInt32(0)),
				},
			}
		}
		overrides, err := nodeGroupOverrides(l, ng, declared)
		if err != nil {
			return nil, err
		}
		if declared["nodeLabels"] {
			nv, err := nodeGroupLabelVariables(ng)
			if err != nil {
				return nil, err
			}
			overrides = append(overrides, nv...)
		}
		if declared["extraNetworks"] {
			nv, err := nodeGroupExtraNetworks(ng)
			if err != nil {
				return nil, err
			}
			overrides = append(overrides, nv...)
		}
		if id := s.ServerGroups[name]; id != "" && declared["workerServerGroup"] {
			overrides = append(overrides, namedValue{"workerServerGroup", id})
		}
		for _, o := range append([]namedValue{
			{"flavor", firstNonEmpty(ng.FlavorID)}, {"imageID", firstNonEmpty(ng.ImageID)},
		}, overrides...) {
			if str, ok := o.v.(string); ok && str == "" {
				continue
			}
			cv, err := variable(o.name, o.v)
			if err != nil {
				return nil, err
			}
			md.Variables.Overrides = append(md.Variables.Overrides, cv)
		}
		mds = append(mds, md)
	}

	cl := &clusterv1.Cluster{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, Labels: labelsWith(nil), Annotations: s.Annotations,
		},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:          clusterv1.NetworkRanges{CIDRBlocks: []string{podCIDR(l)}},
				Services:      clusterv1.NetworkRanges{CIDRBlocks: []string{l.String("service_cluster_ip_range")}},
				ServiceDomain: l.String("dns_cluster_domain"),
			},
			Topology: clusterv1.Topology{
				ClassRef: clusterv1.ClusterClassRef{Name: className(s.ClassVersion)},
				Version:  l.String("kube_tag"),
				ControlPlane: clusterv1.ControlPlaneTopology{
					Metadata: clusterv1.ObjectMeta{Labels: labelsWith(withNodeLabels(map[string]string{
						LabelNodeGroupUUID: master.UUID, LabelRole: objects.RoleMaster}, master))},
					Replicas:    ptr(int32(master.NodeCount)),
					HealthCheck: cpHealthCheck,
				},
				Workers:   clusterv1.WorkersTopology{MachineDeployments: mds},
				Variables: cvars,
			},
		},
	}
	return cl, nil
}

// withNodeLabels adds to m the labels that end up on the nodegroup's Nodes:
// its name (the sanitised one when the name is no valid label value) and,
// for workers, node-role.kubernetes.io/<role> (when the role makes a valid
// label key; kubeadm gives control-plane nodes their own role label).
func withNodeLabels(m map[string]string, ng *objects.NodeGroup) map[string]string {
	name := ng.Name
	if len(validation.IsValidLabelValue(name)) > 0 {
		name = mdNameFor(ng)
	}
	m[LabelNodeNodeGroup] = name
	if ng.Role != objects.RoleMaster {
		role := ng.Role
		if role == "" {
			role = objects.RoleWorker
		}
		if key := labelNodeRolePrefix + role; len(validation.IsQualifiedName(key)) == 0 {
			m[key] = ""
		}
	}
	return m
}

// toUnstructured converts a typed object through JSON (honouring omitzero),
// without status.
func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func mapWith(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
