package capi

// addOnLabelSpecs are the labels of the add-ons (addons.go), named as
// magnum-cluster-api names them (network_driver, calico_ipv4pool and
// octavia_provider are in DefaultLabelSchema).
func addOnLabelSpecs() LabelSchema {
	return LabelSchema{
		{Name: "calico_tag", Type: LabelString, Help: "Calico version (the tigera-operator chart's); default from the version table"},
		{Name: "cilium_tag", Type: LabelString, Help: "Cilium version (its chart's); default from the version table"},
		{Name: "cilium_ipv4pool", Type: LabelCIDR, Help: "Cilium's pod network (network_driver=cilium)"},
		{Name: "cloud_provider_tag", Type: LabelString, Help: "openstack-cloud-controller-manager image tag"},
		{Name: "octavia_lb_algorithm", Type: LabelEnum, Enum: []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"},
			Help: "lb-method of Services of type LoadBalancer; default ROUND_ROBIN, SOURCE_IP_PORT with octavia_provider=ovn"},
		{Name: "octavia_lb_healthcheck", Type: LabelBool, Default: "true", Help: "create a health monitor per load balancer pool"},
		{Name: "cinder_csi_enabled", Type: LabelBool, Default: "true"},
		{Name: "cinder_csi_plugin_tag", Type: LabelString, Help: "cinder-csi-plugin image tag"},
		{Name: "manila_csi_enabled", Type: LabelBool, Default: "false"},
		{Name: "manila_csi_plugin_tag", Type: LabelString, Help: "manila-csi-plugin image tag"},
		{Name: "nfs_csi_plugin_tag", Type: LabelString, Help: "nfsplugin image tag of csi-driver-nfs, the NFS node plugin delivered with Manila CSI"},
		{Name: "metrics_server_enabled", Type: LabelBool, Default: "true"},
		{Name: "metrics_server_tag", Type: LabelString, Help: "metrics-server image tag"},
		{Name: "container_infra_prefix", Type: LabelString, Help: "registry (and path) every add-on image is pulled from"},
	}
}

// podCIDR is the Cluster's pod network: cilium_ipv4pool with
// network_driver=cilium when set (as magnum-cluster-api), else
// calico_ipv4pool (10.100.0.0/16 by default).
func podCIDR(l Labels) string {
	if l.String("network_driver") == "cilium" && l.String("cilium_ipv4pool") != "" {
		return l.String("cilium_ipv4pool")
	}
	return l.String("calico_ipv4pool")
}
