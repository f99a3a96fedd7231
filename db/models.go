package db

import (
	"time"

	"github.com/openstack/magnum-conductor/api/objects"
)

// GORM models of Magnum's tables at alembic head b3e1cf4a2d5e. The fields
// for created_at/updated_at are not named CreatedAt/UpdatedAt so that GORM
// does not manage them: the store sets them (naive UTC), as oslo.db's
// TimestampMixin does. Nullable tinyint booleans are *bool; a NULL reads as
// the object's default.

type clusterRow struct {
	ID                  int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created             *time.Time `gorm:"column:created_at"`
	Updated             *time.Time `gorm:"column:updated_at"`
	UUID                *string    `gorm:"column:uuid"`
	Name                *string    `gorm:"column:name"`
	ClusterTemplateID   *string    `gorm:"column:cluster_template_id"`
	APIAddress          *string    `gorm:"column:api_address"`
	StackID             *string    `gorm:"column:stack_id"`
	ProjectID           *string    `gorm:"column:project_id"`
	UserID              *string    `gorm:"column:user_id"`
	Status              *string    `gorm:"column:status"`
	DiscoveryURL        *string    `gorm:"column:discovery_url"`
	StatusReason        *string    `gorm:"column:status_reason"`
	CACertRef           *string    `gorm:"column:ca_cert_ref"`
	MagnumCertRef       *string    `gorm:"column:magnum_cert_ref"`
	CreateTimeout       *int64     `gorm:"column:create_timeout"`
	CoeVersion          *string    `gorm:"column:coe_version"`
	ContainerVersion    *string    `gorm:"column:container_version"`
	Keypair             *string    `gorm:"column:keypair"`
	DockerVolumeSize    *int64     `gorm:"column:docker_volume_size"`
	Labels              jsonDict   `gorm:"column:labels"`
	MasterFlavorID      *string    `gorm:"column:master_flavor_id"`
	FlavorID            *string    `gorm:"column:flavor_id"`
	HealthStatus        *string    `gorm:"column:health_status"`
	HealthStatusReason  jsonDict   `gorm:"column:health_status_reason"`
	FixedNetwork        *string    `gorm:"column:fixed_network"`
	FixedSubnet         *string    `gorm:"column:fixed_subnet"`
	FloatingIPEnabled   *bool      `gorm:"column:floating_ip_enabled"`
	MasterLBEnabled     *bool      `gorm:"column:master_lb_enabled"`
	EtcdCACertRef       *string    `gorm:"column:etcd_ca_cert_ref"`
	FrontProxyCACertRef *string    `gorm:"column:front_proxy_ca_cert_ref"`
}

func (clusterRow) TableName() string { return "cluster" }

func clusterColumns() []string {
	return []string{"created_at", "updated_at", "id", "uuid", "name", "cluster_template_id",
		"api_address", "stack_id", "project_id", "user_id", "status", "discovery_url", "status_reason",
		"ca_cert_ref", "magnum_cert_ref", "create_timeout", "coe_version", "container_version", "keypair",
		"docker_volume_size", "labels", "master_flavor_id", "flavor_id", "health_status", "health_status_reason",
		"fixed_network", "fixed_subnet", "floating_ip_enabled", "master_lb_enabled", "etcd_ca_cert_ref",
		"front_proxy_ca_cert_ref"}
}

type clusterTemplateRow struct {
	ID                  int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created             *time.Time `gorm:"column:created_at"`
	Updated             *time.Time `gorm:"column:updated_at"`
	UUID                *string    `gorm:"column:uuid"`
	Name                *string    `gorm:"column:name"`
	FlavorID            *string    `gorm:"column:flavor_id"`
	KeypairID           *string    `gorm:"column:keypair_id"`
	ImageID             *string    `gorm:"column:image_id"`
	ExternalNetworkID   *string    `gorm:"column:external_network_id"`
	DNSNameserver       *string    `gorm:"column:dns_nameserver"`
	APIServerPort       *int64     `gorm:"column:apiserver_port"`
	ProjectID           *string    `gorm:"column:project_id"`
	UserID              *string    `gorm:"column:user_id"`
	DockerVolumeSize    *int64     `gorm:"column:docker_volume_size"`
	FixedNetwork        *string    `gorm:"column:fixed_network"`
	MasterFlavorID      *string    `gorm:"column:master_flavor_id"`
	ClusterDistro       *string    `gorm:"column:cluster_distro"`
	Coe                 *string    `gorm:"column:coe"`
	HTTPProxy           *string    `gorm:"column:http_proxy"`
	HTTPSProxy          *string    `gorm:"column:https_proxy"`
	NoProxy             *string    `gorm:"column:no_proxy"`
	RegistryEnabled     *bool      `gorm:"column:registry_enabled"`
	NetworkDriver       *string    `gorm:"column:network_driver"`
	Labels              jsonDict   `gorm:"column:labels"`
	TLSDisabled         *bool      `gorm:"column:tls_disabled"`
	Public              *bool      `gorm:"column:public"`
	ServerType          *string    `gorm:"column:server_type"`
	VolumeDriver        *string    `gorm:"column:volume_driver"`
	InsecureRegistry    *string    `gorm:"column:insecure_registry"`
	DockerStorageDriver *string    `gorm:"column:docker_storage_driver"`
	MasterLBEnabled     *bool      `gorm:"column:master_lb_enabled"`
	FixedSubnet         *string    `gorm:"column:fixed_subnet"`
	FloatingIPEnabled   *bool      `gorm:"column:floating_ip_enabled"`
	Hidden              *bool      `gorm:"column:hidden"`
	Tags                *string    `gorm:"column:tags"`
	Driver              *string    `gorm:"column:driver"`
}

func (clusterTemplateRow) TableName() string { return "cluster_template" }

func clusterTemplateColumns() []string {
	return []string{"created_at", "updated_at", "id", "uuid", "name", "flavor_id",
		"keypair_id", "image_id", "external_network_id", "dns_nameserver", "apiserver_port", "project_id",
		"user_id", "docker_volume_size", "fixed_network", "master_flavor_id", "cluster_distro", "coe",
		"http_proxy", "https_proxy", "no_proxy", "registry_enabled", "network_driver", "labels", "tls_disabled",
		"public", "server_type", "volume_driver", "insecure_registry", "docker_storage_driver",
		"master_lb_enabled", "fixed_subnet", "floating_ip_enabled", "hidden", "tags", "driver"}
}

type nodeGroupRow struct {
	ID               int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created          *time.Time `gorm:"column:created_at"`
	Updated          *time.Time `gorm:"column:updated_at"`
	UUID             string     `gorm:"column:uuid"`
	Name             string     `gorm:"column:name"`
	ClusterID        string     `gorm:"column:cluster_id"`
	ProjectID        string     `gorm:"column:project_id"`
	DockerVolumeSize *int64     `gorm:"column:docker_volume_size"`
	Labels           jsonDict   `gorm:"column:labels"`
	FlavorID         *string    `gorm:"column:flavor_id"`
	ImageID          *string    `gorm:"column:image_id"`
	NodeAddresses    jsonList   `gorm:"column:node_addresses"`
	NodeCount        *int64     `gorm:"column:node_count"`
	MaxNodeCount     *int64     `gorm:"column:max_node_count"`
	MinNodeCount     *int64     `gorm:"column:min_node_count"`
	Role             *string    `gorm:"column:role"`
	IsDefault        *bool      `gorm:"column:is_default"`
	StackID          *string    `gorm:"column:stack_id"`
	Status           *string    `gorm:"column:status"`
	StatusReason     *string    `gorm:"column:status_reason"`
	Version          *string    `gorm:"column:version"`
	NodeLabels       jsonDict   `gorm:"column:node_labels"`
	NodeTaints       jsonDicts  `gorm:"column:node_taints"`
}

func (nodeGroupRow) TableName() string { return "nodegroup" }

func nodeGroupColumns() []string {
	return []string{"created_at", "updated_at", "id", "uuid", "name", "cluster_id",
		"project_id", "docker_volume_size", "labels", "flavor_id", "image_id", "node_addresses", "node_count",
		"max_node_count", "min_node_count", "role", "is_default", "stack_id", "status", "status_reason",
		"version", "node_labels", "node_taints"}
}

type x509KeyPairRow struct {
	ID                   int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created              *time.Time `gorm:"column:created_at"`
	Updated              *time.Time `gorm:"column:updated_at"`
	UUID                 *string    `gorm:"column:uuid"`
	Certificate          *string    `gorm:"column:certificate"`
	PrivateKey           *string    `gorm:"column:private_key"`
	ProjectID            *string    `gorm:"column:project_id"`
	UserID               *string    `gorm:"column:user_id"`
	Intermediates        *string    `gorm:"column:intermediates"`
	PrivateKeyPassphrase *string    `gorm:"column:private_key_passphrase"`
}

func (x509KeyPairRow) TableName() string { return "x509keypair" }

func x509KeyPairColumns() []string {
	return []string{"id", "created_at", "updated_at", "uuid", "certificate", "private_key",
		"project_id", "user_id", "intermediates", "private_key_passphrase"}
}

type magnumServiceRow struct {
	ID             int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created        *time.Time `gorm:"column:created_at"`
	Updated        *time.Time `gorm:"column:updated_at"`
	ReportCount    int64      `gorm:"column:report_count"`
	Host           *string    `gorm:"column:host"`
	Binary         *string    `gorm:"column:binary"`
	Disabled       *bool      `gorm:"column:disabled"`
	DisabledReason *string    `gorm:"column:disabled_reason"`
	LastSeenUp     *time.Time `gorm:"column:last_seen_up"`
	ForcedDown     *bool      `gorm:"column:forced_down"`
}

func (magnumServiceRow) TableName() string { return "magnum_service" }

func magnumServiceColumns() []string {
	return []string{"created_at", "updated_at", "id", "report_count", "host", "binary",
		"disabled", "disabled_reason", "last_seen_up", "forced_down"}
}

type quotaRow struct {
	ID        int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created   *time.Time `gorm:"column:created_at"`
	Updated   *time.Time `gorm:"column:updated_at"`
	ProjectID *string    `gorm:"column:project_id"`
	Resource  *string    `gorm:"column:resource"`
	HardLimit int64      `gorm:"column:hard_limit"`
}

func (quotaRow) TableName() string { return "quotas" }

func quotaColumns() []string {
	return []string{"id", "created_at", "updated_at", "project_id", "resource", "hard_limit"}
}

type federationRow struct {
	ID            int64      `gorm:"column:id;primaryKey;autoIncrement"`
	Created       *time.Time `gorm:"column:created_at"`
	Updated       *time.Time `gorm:"column:updated_at"`
	ProjectID     *string    `gorm:"column:project_id"`
	UUID          *string    `gorm:"column:uuid"`
	Name          *string    `gorm:"column:name"`
	HostClusterID *string    `gorm:"column:hostcluster_id"`
	MemberIDs     jsonList   `gorm:"column:member_ids"`
	Status        *string    `gorm:"column:status"`
	StatusReason  *string    `gorm:"column:status_reason"`
	Properties    jsonDict   `gorm:"column:properties"`
}

func (federationRow) TableName() string { return "federation" }

func federationColumns() []string {
	return []string{"created_at", "updated_at", "id", "project_id", "uuid", "name",
		"hostcluster_id", "member_ids", "status", "status_reason", "properties"}
}

// Conversions. Enum strings map "" to NULL; timestamps are naive UTC.

func enumPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func enumVal(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func boolPtr(b bool) *bool { return &b }

func timePtr(t time.Time) *time.Time { return &t }

func boolVal(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func intVal(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func dictOrNil(m map[string]string) jsonDict {
	if m == nil {
		return nil
	}
	return jsonDict(m)
}

func clusterToRow(c *objects.Cluster) *clusterRow {
	return &clusterRow{
		ID: c.ID, Created: utcPtr(c.CreatedAt), Updated: utcPtr(c.UpdatedAt), UUID: c.UUID, Name: c.Name,
		ClusterTemplateID: c.ClusterTemplateID, APIAddress: c.APIAddress, StackID: c.StackID,
		ProjectID: c.ProjectID, UserID: c.UserID, Status: enumPtr(c.Status), DiscoveryURL: c.DiscoveryURL,
		StatusReason: c.StatusReason, CACertRef: c.CACertRef, MagnumCertRef: c.MagnumCertRef,
		CreateTimeout: c.CreateTimeout, CoeVersion: c.CoeVersion, ContainerVersion: c.ContainerVersion,
		Keypair: c.Keypair, DockerVolumeSize: c.DockerVolumeSize, Labels: dictOrNil(c.Labels),
		MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID, HealthStatus: enumPtr(c.HealthStatus),
		HealthStatusReason: dictOrNil(c.HealthStatusReason), FixedNetwork: c.FixedNetwork,
		FixedSubnet: c.FixedSubnet, FloatingIPEnabled: boolPtr(c.FloatingIPEnabled),
		MasterLBEnabled: boolPtr(c.MasterLBEnabled), EtcdCACertRef: c.EtcdCACertRef,
		FrontProxyCACertRef: c.FrontProxyCACertRef,
	}
}

func (r *clusterRow) toObject() *objects.Cluster {
	c := &objects.Cluster{
		ID: r.ID, UUID: r.UUID, Name: r.Name, ProjectID: r.ProjectID, UserID: r.UserID,
		ClusterTemplateID: r.ClusterTemplateID, Keypair: r.Keypair, DockerVolumeSize: r.DockerVolumeSize,
		Labels: r.Labels, MasterFlavorID: r.MasterFlavorID, FlavorID: r.FlavorID, StackID: r.StackID,
		Status: enumVal(r.Status), StatusReason: r.StatusReason, HealthStatus: enumVal(r.HealthStatus),
		HealthStatusReason: r.HealthStatusReason, CreateTimeout: r.CreateTimeout, APIAddress: r.APIAddress,
		DiscoveryURL: r.DiscoveryURL, CACertRef: r.CACertRef, MagnumCertRef: r.MagnumCertRef,
		EtcdCACertRef: r.EtcdCACertRef, FrontProxyCACertRef: r.FrontProxyCACertRef, CoeVersion: r.CoeVersion,
		ContainerVersion: r.ContainerVersion, FixedNetwork: r.FixedNetwork, FixedSubnet: r.FixedSubnet,
		FloatingIPEnabled: boolVal(r.FloatingIPEnabled, true), MasterLBEnabled: boolVal(r.MasterLBEnabled, false),
		CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
	return c
}

func clusterTemplateToRow(t *objects.ClusterTemplate) *clusterTemplateRow {
	return &clusterTemplateRow{
		ID: t.ID, Created: utcPtr(t.CreatedAt), Updated: utcPtr(t.UpdatedAt), UUID: t.UUID, Name: t.Name,
		FlavorID: t.FlavorID, KeypairID: t.KeypairID, ImageID: t.ImageID, ExternalNetworkID: t.ExternalNetworkID,
		DNSNameserver: t.DNSNameserver, APIServerPort: t.APIServerPort, ProjectID: t.ProjectID, UserID: t.UserID,
		DockerVolumeSize: t.DockerVolumeSize, FixedNetwork: t.FixedNetwork, MasterFlavorID: t.MasterFlavorID,
		ClusterDistro: t.ClusterDistro, Coe: enumPtr(t.Coe), HTTPProxy: t.HTTPProxy, HTTPSProxy: t.HTTPSProxy,
		NoProxy: t.NoProxy, RegistryEnabled: boolPtr(t.RegistryEnabled), NetworkDriver: t.NetworkDriver,
		Labels: dictOrNil(t.Labels), TLSDisabled: boolPtr(t.TLSDisabled), Public: boolPtr(t.Public),
		ServerType: t.ServerType, VolumeDriver: t.VolumeDriver, InsecureRegistry: t.InsecureRegistry,
		DockerStorageDriver: t.DockerStorageDriver, MasterLBEnabled: boolPtr(t.MasterLBEnabled),
		FixedSubnet: t.FixedSubnet, FloatingIPEnabled: boolPtr(t.FloatingIPEnabled), Hidden: boolPtr(t.Hidden),
		Tags: t.Tags, Driver: t.Driver,
	}
}

func (r *clusterTemplateRow) toObject() *objects.ClusterTemplate {
	return &objects.ClusterTemplate{
		ID: r.ID, UUID: r.UUID, ProjectID: r.ProjectID, UserID: r.UserID, Name: r.Name, ImageID: r.ImageID,
		FlavorID: r.FlavorID, MasterFlavorID: r.MasterFlavorID, KeypairID: r.KeypairID,
		DNSNameserver: r.DNSNameserver, ExternalNetworkID: r.ExternalNetworkID, FixedNetwork: r.FixedNetwork,
		FixedSubnet: r.FixedSubnet, NetworkDriver: r.NetworkDriver, VolumeDriver: r.VolumeDriver,
		APIServerPort: r.APIServerPort, DockerVolumeSize: r.DockerVolumeSize,
		DockerStorageDriver: r.DockerStorageDriver, ClusterDistro: r.ClusterDistro, Coe: enumVal(r.Coe),
		HTTPProxy: r.HTTPProxy, HTTPSProxy: r.HTTPSProxy, NoProxy: r.NoProxy,
		RegistryEnabled: boolVal(r.RegistryEnabled, false), Labels: r.Labels,
		TLSDisabled: boolVal(r.TLSDisabled, false), Public: boolVal(r.Public, false), ServerType: r.ServerType,
		InsecureRegistry: r.InsecureRegistry, MasterLBEnabled: boolVal(r.MasterLBEnabled, false),
		FloatingIPEnabled: boolVal(r.FloatingIPEnabled, true), Hidden: boolVal(r.Hidden, false), Tags: r.Tags,
		Driver: r.Driver, CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}

func nodeGroupToRow(n *objects.NodeGroup) *nodeGroupRow {
	var addrs jsonList
	if n.NodeAddresses != nil {
		addrs = jsonList(n.NodeAddresses)
	}
	var taints jsonDicts
	if n.NodeTaints != nil {
		taints = jsonDicts(n.NodeTaints)
	}
	role := n.Role
	return &nodeGroupRow{
		ID: n.ID, Created: utcPtr(n.CreatedAt), Updated: utcPtr(n.UpdatedAt), UUID: n.UUID, Name: n.Name,
		ClusterID: n.ClusterID, ProjectID: n.ProjectID, DockerVolumeSize: n.DockerVolumeSize,
		Labels: dictOrNil(n.Labels), FlavorID: n.FlavorID, ImageID: n.ImageID, NodeAddresses: addrs,
		NodeCount: objects.Int(n.NodeCount), MaxNodeCount: n.MaxNodeCount, MinNodeCount: objects.Int(n.MinNodeCount),
		Role: &role, IsDefault: boolPtr(n.IsDefault), StackID: n.StackID, Status: enumPtr(n.Status),
		StatusReason: n.StatusReason, Version: n.Version, NodeLabels: dictOrNil(n.NodeLabels), NodeTaints: taints,
	}
}

func (r *nodeGroupRow) toObject() *objects.NodeGroup {
	var addrs []string
	if r.NodeAddresses != nil {
		addrs = []string(r.NodeAddresses)
	}
	var taints []map[string]any
	if r.NodeTaints != nil {
		taints = []map[string]any(r.NodeTaints)
	}
	return &objects.NodeGroup{
		ID: r.ID, UUID: r.UUID, Name: r.Name, ClusterID: r.ClusterID, ProjectID: r.ProjectID,
		DockerVolumeSize: r.DockerVolumeSize, Labels: r.Labels, FlavorID: r.FlavorID, ImageID: r.ImageID,
		NodeAddresses: addrs, NodeCount: intVal(r.NodeCount, 1), Role: enumVal(r.Role),
		MaxNodeCount: r.MaxNodeCount, MinNodeCount: intVal(r.MinNodeCount, 0),
		IsDefault: boolVal(r.IsDefault, false), StackID: r.StackID, Status: enumVal(r.Status),
		StatusReason: r.StatusReason, Version: r.Version, NodeLabels: r.NodeLabels, NodeTaints: taints,
		CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}

func x509KeyPairToRow(k *objects.X509KeyPair) *x509KeyPairRow {
	return &x509KeyPairRow{
		ID: k.ID, Created: utcPtr(k.CreatedAt), Updated: utcPtr(k.UpdatedAt), UUID: k.UUID,
		Certificate: k.Certificate, PrivateKey: k.PrivateKey, ProjectID: k.ProjectID, UserID: k.UserID,
		Intermediates: k.Intermediates, PrivateKeyPassphrase: k.PrivateKeyPassphrase,
	}
}

func (r *x509KeyPairRow) toObject() *objects.X509KeyPair {
	return &objects.X509KeyPair{
		ID: r.ID, UUID: r.UUID, Certificate: r.Certificate, PrivateKey: r.PrivateKey,
		Intermediates: r.Intermediates, PrivateKeyPassphrase: r.PrivateKeyPassphrase, ProjectID: r.ProjectID,
		UserID: r.UserID, CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}

func magnumServiceToRow(m *objects.MagnumService) *magnumServiceRow {
	return &magnumServiceRow{
		ID: m.ID, Created: utcPtr(m.CreatedAt), Updated: utcPtr(m.UpdatedAt), ReportCount: m.ReportCount,
		Host: m.Host, Binary: m.Binary, Disabled: boolPtr(m.Disabled), DisabledReason: m.DisabledReason,
		LastSeenUp: utcPtr(m.LastSeenUp), ForcedDown: boolPtr(m.ForcedDown),
	}
}

func (r *magnumServiceRow) toObject() *objects.MagnumService {
	return &objects.MagnumService{
		ID: r.ID, Host: r.Host, Binary: r.Binary, Disabled: boolVal(r.Disabled, false),
		DisabledReason: r.DisabledReason, LastSeenUp: utcPtr(r.LastSeenUp), ForcedDown: boolVal(r.ForcedDown, false),
		ReportCount: r.ReportCount, CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}

func quotaToRow(q *objects.Quota) *quotaRow {
	return &quotaRow{
		ID: q.ID, Created: utcPtr(q.CreatedAt), Updated: utcPtr(q.UpdatedAt), ProjectID: objects.Str(q.ProjectID),
		Resource: objects.Str(q.Resource), HardLimit: q.HardLimit,
	}
}

func (r *quotaRow) toObject() *objects.Quota {
	return &objects.Quota{
		ID: r.ID, ProjectID: objects.Deref(r.ProjectID), Resource: objects.Deref(r.Resource), HardLimit: r.HardLimit,
		CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}

func federationToRow(f *objects.Federation) *federationRow {
	var members jsonList
	if f.MemberIDs != nil {
		members = jsonList(f.MemberIDs)
	}
	return &federationRow{
		ID: f.ID, Created: utcPtr(f.CreatedAt), Updated: utcPtr(f.UpdatedAt), ProjectID: f.ProjectID, UUID: f.UUID,
		Name: f.Name, HostClusterID: f.HostClusterID, MemberIDs: members, Status: enumPtr(f.Status),
		StatusReason: f.StatusReason, Properties: dictOrNil(f.Properties),
	}
}

func (r *federationRow) toObject() *objects.Federation {
	var members []string
	if r.MemberIDs != nil {
		members = []string(r.MemberIDs)
	}
	return &objects.Federation{
		ID: r.ID, UUID: r.UUID, Name: r.Name, ProjectID: r.ProjectID, HostClusterID: r.HostClusterID,
		MemberIDs: members, Status: enumVal(r.Status), StatusReason: r.StatusReason, Properties: r.Properties,
		CreatedAt: utcPtr(r.Created), UpdatedAt: utcPtr(r.Updated),
	}
}
