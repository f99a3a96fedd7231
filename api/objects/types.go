package objects

import "time"

// Field conventions (reference §B.3): a nullable scalar is a pointer (nil is
// null or unset); a non-nullable scalar is a value; enums are strings where ""
// means null; dicts and lists are Go maps and slices where nil means null.
// The `ovo` tag names the field on the wire; `since` is the first object
// version that carries it, `until` the last one.

// Cluster statuses (magnum.objects.fields.ClusterStatus).
const (
	CreateInProgress   = "CREATE_IN_PROGRESS"
	CreateFailed       = "CREATE_FAILED"
	CreateComplete     = "CREATE_COMPLETE"
	UpdateInProgress   = "UPDATE_IN_PROGRESS"
	UpdateFailed       = "UPDATE_FAILED"
	UpdateComplete     = "UPDATE_COMPLETE"
	DeleteInProgress   = "DELETE_IN_PROGRESS"
	DeleteFailed       = "DELETE_FAILED"
	DeleteComplete     = "DELETE_COMPLETE"
	ResumeComplete     = "RESUME_COMPLETE"
	ResumeFailed       = "RESUME_FAILED"
	RestoreComplete    = "RESTORE_COMPLETE"
	RollbackInProgress = "ROLLBACK_IN_PROGRESS"
	RollbackFailed     = "ROLLBACK_FAILED"
	RollbackComplete   = "ROLLBACK_COMPLETE"
	SnapshotComplete   = "SNAPSHOT_COMPLETE"
	CheckComplete      = "CHECK_COMPLETE"
	AdoptComplete      = "ADOPT_COMPLETE"
)

// ClusterStatuses lists every valid ClusterStatus value.
var ClusterStatuses = []string{
	CreateInProgress, CreateFailed, CreateComplete, UpdateInProgress, UpdateFailed, UpdateComplete,
	DeleteInProgress, DeleteFailed, DeleteComplete, ResumeComplete, ResumeFailed, RestoreComplete,
	RollbackInProgress, RollbackFailed, RollbackComplete, SnapshotComplete, CheckComplete, AdoptComplete,
}

// Cluster health statuses (ClusterHealthStatus).
const (
	Healthy   = "HEALTHY"
	Unhealthy = "UNHEALTHY"
	Unknown   = "UNKNOWN"
)

// Nodegroup roles used by the code; anything but master counts as a worker.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
)

// Cluster is magnum.objects.cluster.Cluster (1.23 in 15.0.1 and 2026.1,
// 1.24 in 2026.2, which drops the four trust fields).
type Cluster struct {
	Meta `ovo:"-"`

	ID                  int64             `ovo:"id"`
	UUID                *string           `ovo:"uuid"`
	Name                *string           `ovo:"name"`
	ProjectID           *string           `ovo:"project_id"`
	UserID              *string           `ovo:"user_id"`
	ClusterTemplateID   *string           `ovo:"cluster_template_id"`
	Keypair             *string           `ovo:"keypair"`
	DockerVolumeSize    *int64            `ovo:"docker_volume_size"`
	Labels              map[string]string `ovo:"labels"`
	MasterFlavorID      *string           `ovo:"master_flavor_id"`
	FlavorID            *string           `ovo:"flavor_id"`
	StackID             *string           `ovo:"stack_id"`
	Status              string            `ovo:"status,enum=ClusterStatus"`
	StatusReason        *string           `ovo:"status_reason"`
	HealthStatus        string            `ovo:"health_status,enum=ClusterHealthStatus"`
	HealthStatusReason  map[string]string `ovo:"health_status_reason"`
	CreateTimeout       *int64            `ovo:"create_timeout"`
	APIAddress          *string           `ovo:"api_address"`
	DiscoveryURL        *string           `ovo:"discovery_url"`
	CACertRef           *string           `ovo:"ca_cert_ref"`
	MagnumCertRef       *string           `ovo:"magnum_cert_ref"`
	EtcdCACertRef       *string           `ovo:"etcd_ca_cert_ref"`
	FrontProxyCACertRef *string           `ovo:"front_proxy_ca_cert_ref"`
	TrustID             *string           `ovo:"trust_id,until=1.23"`
	TrusteeUsername     *string           `ovo:"trustee_username,until=1.23"`
	TrusteePassword     *string           `ovo:"trustee_password,until=1.23,secret"`
	TrusteeUserID       *string           `ovo:"trustee_user_id,until=1.23"`
	CoeVersion          *string           `ovo:"coe_version"`
	ContainerVersion    *string           `ovo:"container_version"`
	FixedNetwork        *string           `ovo:"fixed_network"`
	FixedSubnet         *string           `ovo:"fixed_subnet"`
	FloatingIPEnabled   bool              `ovo:"floating_ip_enabled,default=true"`
	MasterLBEnabled     bool              `ovo:"master_lb_enabled,default=false"`
	CreatedAt           *time.Time        `ovo:"created_at"`
	UpdatedAt           *time.Time        `ovo:"updated_at"`
	ClusterTemplate     *ClusterTemplate  `ovo:"cluster_template,object"`
}

// ClusterTemplate is magnum.objects.cluster_template.ClusterTemplate
// (1.20 in 15.0.1, 1.21 from 2026.1 with `driver`).
type ClusterTemplate struct {
	Meta `ovo:"-"`

	ID                  int64             `ovo:"id"`
	UUID                *string           `ovo:"uuid"`
	ProjectID           *string           `ovo:"project_id"`
	UserID              *string           `ovo:"user_id"`
	Name                *string           `ovo:"name"`
	ImageID             *string           `ovo:"image_id"`
	FlavorID            *string           `ovo:"flavor_id"`
	MasterFlavorID      *string           `ovo:"master_flavor_id"`
	KeypairID           *string           `ovo:"keypair_id"`
	DNSNameserver       *string           `ovo:"dns_nameserver"`
	ExternalNetworkID   *string           `ovo:"external_network_id"`
	FixedNetwork        *string           `ovo:"fixed_network"`
	FixedSubnet         *string           `ovo:"fixed_subnet"`
	NetworkDriver       *string           `ovo:"network_driver"`
	VolumeDriver        *string           `ovo:"volume_driver"`
	APIServerPort       *int64            `ovo:"apiserver_port"`
	DockerVolumeSize    *int64            `ovo:"docker_volume_size"`
	DockerStorageDriver *string           `ovo:"docker_storage_driver"`
	ClusterDistro       *string           `ovo:"cluster_distro"`
	Coe                 string            `ovo:"coe,enum=ClusterType"`
	HTTPProxy           *string           `ovo:"http_proxy"`
	HTTPSProxy          *string           `ovo:"https_proxy"`
	NoProxy             *string           `ovo:"no_proxy"`
	RegistryEnabled     bool              `ovo:"registry_enabled,default=false"`
	Labels              map[string]string `ovo:"labels"`
	TLSDisabled         bool              `ovo:"tls_disabled,default=false"`
	Public              bool              `ovo:"public,default=false"`
	ServerType          *string           `ovo:"server_type"`
	InsecureRegistry    *string           `ovo:"insecure_registry"`
	MasterLBEnabled     bool              `ovo:"master_lb_enabled,default=false"`
	FloatingIPEnabled   bool              `ovo:"floating_ip_enabled,default=true"`
	Hidden              bool              `ovo:"hidden,default=false"`
	Tags                *string           `ovo:"tags"`
	Driver              *string           `ovo:"driver,since=1.21"`
	CreatedAt           *time.Time        `ovo:"created_at"`
	UpdatedAt           *time.Time        `ovo:"updated_at"`
}

// NodeGroup is magnum.objects.nodegroup.NodeGroup (1.1 in 15.0.1 and 2026.1,
// 1.2 in 2026.2 with node_labels and node_taints).
type NodeGroup struct {
	Meta `ovo:"-"`

	ID               int64             `ovo:"id"`
	UUID             string            `ovo:"uuid"`
	Name             string            `ovo:"name"`
	ClusterID        string            `ovo:"cluster_id"`
	ProjectID        string            `ovo:"project_id"`
	DockerVolumeSize *int64            `ovo:"docker_volume_size"`
	Labels           map[string]string `ovo:"labels"`
	FlavorID         *string           `ovo:"flavor_id"`
	ImageID          *string           `ovo:"image_id"`
	NodeAddresses    []string          `ovo:"node_addresses"`
	NodeCount        int64             `ovo:"node_count,default=1"`
	Role             string            `ovo:"role"`
	MaxNodeCount     *int64            `ovo:"max_node_count"`
	MinNodeCount     int64             `ovo:"min_node_count,default=0"`
	IsDefault        bool              `ovo:"is_default,default=false"`
	StackID          *string           `ovo:"stack_id"`
	Status           string            `ovo:"status,enum=ClusterStatus"`
	StatusReason     *string           `ovo:"status_reason"`
	Version          *string           `ovo:"version"`
	NodeLabels       map[string]string `ovo:"node_labels,since=1.2"`
	NodeTaints       []map[string]any  `ovo:"node_taints,since=1.2"`
	CreatedAt        *time.Time        `ovo:"created_at"`
	UpdatedAt        *time.Time        `ovo:"updated_at"`
}

// X509KeyPair is magnum.objects.x509keypair.X509KeyPair (1.2).
type X509KeyPair struct {
	Meta `ovo:"-"`

	ID                   int64      `ovo:"id"`
	UUID                 *string    `ovo:"uuid"`
	Certificate          *string    `ovo:"certificate"`
	PrivateKey           *string    `ovo:"private_key,secret"`
	Intermediates        *string    `ovo:"intermediates"`
	PrivateKeyPassphrase *string    `ovo:"private_key_passphrase,secret"`
	ProjectID            *string    `ovo:"project_id"`
	UserID               *string    `ovo:"user_id"`
	CreatedAt            *time.Time `ovo:"created_at"`
	UpdatedAt            *time.Time `ovo:"updated_at"`
}

// MagnumService is magnum.objects.magnum_service.MagnumService (1.0).
type MagnumService struct {
	Meta `ovo:"-"`

	ID             int64      `ovo:"id"`
	Host           *string    `ovo:"host"`
	Binary         *string    `ovo:"binary"`
	Disabled       bool       `ovo:"disabled"`
	DisabledReason *string    `ovo:"disabled_reason"`
	LastSeenUp     *time.Time `ovo:"last_seen_up"`
	ForcedDown     bool       `ovo:"forced_down"`
	ReportCount    int64      `ovo:"report_count"`
	CreatedAt      *time.Time `ovo:"created_at"`
	UpdatedAt      *time.Time `ovo:"updated_at"`
}

// Certificate is magnum.objects.certificate.Certificate (1.2). Not persisted.
type Certificate struct {
	Meta `ovo:"-"`

	ProjectID   *string    `ovo:"project_id"`
	UserID      *string    `ovo:"user_id"`
	ClusterUUID *string    `ovo:"cluster_uuid"`
	CSR         *string    `ovo:"csr"`
	PEM         *string    `ovo:"pem"`
	CACertType  *string    `ovo:"ca_cert_type"`
	CreatedAt   *time.Time `ovo:"created_at"`
	UpdatedAt   *time.Time `ovo:"updated_at"`
}

// Quota is magnum.objects.quota.Quota (1.0).
type Quota struct {
	Meta `ovo:"-"`

	ID        int64      `ovo:"id"`
	ProjectID string     `ovo:"project_id"`
	Resource  string     `ovo:"resource"`
	HardLimit int64      `ovo:"hard_limit"`
	CreatedAt *time.Time `ovo:"created_at"`
	UpdatedAt *time.Time `ovo:"updated_at"`
}

// Stats is magnum.objects.stats.Stats (1.0). Not persisted, no timestamps.
type Stats struct {
	Meta `ovo:"-"`

	Clusters int64  `ovo:"clusters"`
	Nodes    *int64 `ovo:"nodes"`
}

// Federation is magnum.objects.federation.Federation (1.0).
type Federation struct {
	Meta `ovo:"-"`

	ID            int64             `ovo:"id"`
	UUID          *string           `ovo:"uuid"`
	Name          *string           `ovo:"name"`
	ProjectID     *string           `ovo:"project_id"`
	HostClusterID *string           `ovo:"hostcluster_id"`
	MemberIDs     []string          `ovo:"member_ids"`
	Status        string            `ovo:"status,enum=FederationStatus"`
	StatusReason  *string           `ovo:"status_reason"`
	Properties    map[string]string `ovo:"properties"`
	CreatedAt     *time.Time        `ovo:"created_at"`
	UpdatedAt     *time.Time        `ovo:"updated_at"`
}

// Str returns a pointer to s, for assigning nullable string fields.
func Str(s string) *string { return &s }

// Int returns a pointer to i, for assigning nullable integer fields.
func Int(i int64) *int64 { return &i }

// Deref returns *p, or "" when p is nil.
func Deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
