package capi

// addOnLabelSpecs are the labels of the add-ons (addons.go), named as
// magnum-cluster-api names them (network_driver, calico_ipv4pool and
// octavia_provider are in DefaultLabelSchema).
func addOnLabelSpecs() LabelSchema {
	const chart = "the chart's appVersion"
	return LabelSchema{
		{Name: "calico_tag", Type: LabelString, Unset: "the version table's", Anchors: "mcapi",
			Help: "Calico version (the tigera-operator chart's)"},
		{Name: "cilium_tag", Type: LabelString, Unset: "the version table's", Anchors: "mcapi",
			Help: "Cilium version (its chart's)"},
		{Name: "cilium_ipv4pool", Type: LabelCIDR, Unset: "`calico_ipv4pool`", Anchors: "mcapi",
			Help: "the pod network with `network_driver=cilium` (the Cluster's `clusterNetwork.pods`)"},
		{Name: "cloud_provider_tag", Type: LabelString, Unset: chart, Anchors: "mcapi",
			Help: "openstack-cloud-controller-manager image tag (and k8s-keystone-auth's); the CCM runs with `--cluster-name=<Cluster name>`"},
		{Name: "octavia_lb_algorithm", Type: LabelEnum, Enum: []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"},
			Unset: "`ROUND_ROBIN` (`SOURCE_IP_PORT` with `octavia_provider=ovn`)", Anchors: "mcapi",
			Help: "`lb-method` of Services of type LoadBalancer"},
		{Name: "octavia_lb_healthcheck", Type: LabelBool, Default: "true", Anchors: "mcapi",
			Help: "`create-monitor`: a health monitor per load balancer pool"},
		{Name: "cinder_csi_enabled", Type: LabelBool, Default: "true", Anchors: "mcapi",
			Help: "the Cinder CSI plugin (`--cluster=<Cluster name>`) and its StorageClasses (see the add-ons' *StorageClasses*)"},
		{Name: "cinder_csi_plugin_tag", Type: LabelString, Unset: chart, Anchors: "mcapi",
			Help: "cinder-csi-plugin image tag"},
		{Name: "manila_csi_enabled", Type: LabelBool, Default: "false", Anchors: "mcapi",
			Help: "the Manila CSI plugin, with csi-driver-nfs as its NFS node plugin, and its StorageClasses"},
		{Name: "manila_csi_plugin_tag", Type: LabelString, Unset: chart, Anchors: "this driver's",
			Help: "manila-csi-plugin image tag"},
		{Name: "nfs_csi_plugin_tag", Type: LabelString, Unset: "the chart's (`v4.11.0`)", Anchors: "this driver's",
			Help: "image tag of csi-driver-nfs's `nfsplugin`, the NFS node plugin delivered with Manila CSI"},
		{Name: "metrics_server_enabled", Type: LabelBool, Default: "true", Anchors: "this driver's",
			Help: "metrics-server (`--kubelet-insecure-tls`: kubelets serve self-signed certificates)"},
		{Name: "metrics_server_tag", Type: LabelString, Unset: chart, Anchors: "this driver's",
			Help: "metrics-server image tag"},
		{Name: "container_infra_prefix", Type: LabelString, Unset: "`[capi_driver] addon_image_registry`", Anchors: "mcapi, Magnum",
			Help: "registry (and path) every add-on image comes from; also kubeadm's `imageRepository` (control-plane " +
				"images, pause) on classes v3 on"},
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
