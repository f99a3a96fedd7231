package conductor

import (
	"context"
	"encoding/json"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
)

// Keyword arguments of each RPC method, named as the Python handlers'
// parameters. Object arguments stay raw until decoded with api/objects;
// `omitempty` marks a parameter with a Python default.
type (
	clusterCreateArgs struct {
		Cluster       json.RawMessage `json:"cluster"`
		MasterCount   int             `json:"master_count"`
		NodeCount     int             `json:"node_count"`
		CreateTimeout *int            `json:"create_timeout"`
	}
	clusterUpdateArgs struct {
		Cluster            json.RawMessage `json:"cluster"`
		NodeCount          int             `json:"node_count"`
		HealthStatus       *string         `json:"health_status"`
		HealthStatusReason map[string]any  `json:"health_status_reason"`
		Rollback           bool            `json:"rollback,omitempty"`
	}
	uuidArgs struct {
		UUID string `json:"uuid"`
	}
	clusterResizeArgs struct {
		Cluster       json.RawMessage `json:"cluster"`
		NodeCount     int             `json:"node_count"`
		NodesToRemove []string        `json:"nodes_to_remove"`
		NodeGroup     json.RawMessage `json:"nodegroup"`
	}
	clusterUpgradeArgs struct {
		Cluster         json.RawMessage `json:"cluster"`
		ClusterTemplate json.RawMessage `json:"cluster_template"`
		MaxBatchSize    int             `json:"max_batch_size"`
		NodeGroup       json.RawMessage `json:"nodegroup"`
		Rollback        bool            `json:"rollback,omitempty"`
	}
	clusterArgs struct {
		Cluster json.RawMessage `json:"cluster"`
	}
	clusterNodeGroupArgs struct {
		Cluster   json.RawMessage `json:"cluster"`
		NodeGroup json.RawMessage `json:"nodegroup"`
	}
	signCertificateArgs struct {
		Cluster     json.RawMessage `json:"cluster"`
		Certificate json.RawMessage `json:"certificate"`
	}
	getCACertificateArgs struct {
		Cluster    json.RawMessage `json:"cluster"`
		CACertType *string         `json:"ca_cert_type,omitempty"`
	}
	federationCreateArgs struct {
		Federation    json.RawMessage `json:"federation"`
		CreateTimeout *int            `json:"create_timeout"`
	}
	federationUpdateArgs struct {
		Federation json.RawMessage `json:"federation"`
		Rollback   bool            `json:"rollback,omitempty"`
	}
)

// EndpointMethods lists the RPC methods Register binds (every handler
// endpoint but the indirection API, which conductor/indirection binds).
func EndpointMethods() []string {
	return []string{
		"cluster_create", "cluster_update", "cluster_delete", "cluster_resize", "cluster_upgrade",
		"ping_conductor", "credential_rotate", "sign_certificate", "get_ca_certificate",
		"rotate_ca_certificate", "federation_create", "federation_update", "federation_delete",
		"nodegroup_create", "nodegroup_update", "nodegroup_delete",
	}
}

// encode returns o's primitive at the version the caller sent it (or the
// newest for an object built here); a nil object is None.
func encode(o objects.Object) (any, error) {
	if o == nil {
		return nil, nil
	}
	return objects.Encode(o, "", nil)
}

// reasonStrings coerces health_status_reason as DictOfStringsField does.
func reasonStrings(m map[string]any) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = exception.PyStr(v)
	}
	return out
}

// Register binds the handlers into d under their oslo method names. Object
// arguments are decoded with api/objects (a bad primitive fails the request
// before any handler runs) and results are encoded at the caller's version.
func (h *Handlers) Register(d *oslo.Dispatcher) error {
	for name, fn := range map[string]oslo.MethodFunc{
		"cluster_create": oslo.Method(func(ctx context.Context, a clusterCreateArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			out, err := h.ClusterCreate(ctx, c, a.MasterCount, a.NodeCount, a.CreateTimeout)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"cluster_update": oslo.Method(func(ctx context.Context, a clusterUpdateArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			out, err := h.ClusterUpdate(ctx, c, a.NodeCount, objects.Deref(a.HealthStatus),
				reasonStrings(a.HealthStatusReason), a.Rollback)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"cluster_delete": oslo.Method(func(ctx context.Context, a uuidArgs) (any, error) {
			return nil, h.ClusterDelete(ctx, a.UUID)
		}),
		"cluster_resize": oslo.Method(func(ctx context.Context, a clusterResizeArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			ng, err := objects.DecodeNodeGroup(a.NodeGroup)
			if err != nil {
				return nil, err
			}
			out, err := h.ClusterResize(ctx, c, a.NodeCount, a.NodesToRemove, ng)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"cluster_upgrade": oslo.Method(func(ctx context.Context, a clusterUpgradeArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			ct, err := objects.DecodeClusterTemplate(a.ClusterTemplate)
			if err != nil {
				return nil, err
			}
			ng, err := objects.DecodeNodeGroup(a.NodeGroup)
			if err != nil {
				return nil, err
			}
			out, err := h.ClusterUpgrade(ctx, c, ct, a.MaxBatchSize, ng, a.Rollback)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"ping_conductor": oslo.Method(func(ctx context.Context, _ oslo.NoArgs) (any, error) {
			return h.PingConductor(ctx), nil
		}),
		"credential_rotate": oslo.Method(func(ctx context.Context, a clusterArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			return nil, h.CredentialRotate(ctx, c)
		}),
		"sign_certificate": oslo.Method(func(ctx context.Context, a signCertificateArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			cert, err := objects.DecodeCertificate(a.Certificate)
			if err != nil {
				return nil, err
			}
			out, err := h.SignCertificate(ctx, c, cert)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"get_ca_certificate": oslo.Method(func(ctx context.Context, a getCACertificateArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			out, err := h.GetCACertificate(ctx, c, a.CACertType)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"rotate_ca_certificate": oslo.Method(func(ctx context.Context, a clusterArgs) (any, error) {
			c, err := objects.DecodeCluster(a.Cluster)
			if err != nil {
				return nil, err
			}
			out, err := h.RotateCACertificate(ctx, c)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"federation_create": oslo.Method(func(ctx context.Context, a federationCreateArgs) (any, error) {
			f, err := decodeOptionalFederation(a.Federation)
			if err != nil {
				return nil, err
			}
			return nil, h.FederationCreate(ctx, f, a.CreateTimeout)
		}),
		"federation_update": oslo.Method(func(ctx context.Context, a federationUpdateArgs) (any, error) {
			f, err := decodeOptionalFederation(a.Federation)
			if err != nil {
				return nil, err
			}
			return nil, h.FederationUpdate(ctx, f, a.Rollback)
		}),
		"federation_delete": oslo.Method(func(ctx context.Context, a uuidArgs) (any, error) {
			return nil, h.FederationDelete(ctx, a.UUID)
		}),
		"nodegroup_create": oslo.Method(func(ctx context.Context, a clusterNodeGroupArgs) (any, error) {
			c, ng, err := decodeClusterNodeGroup(a)
			if err != nil {
				return nil, err
			}
			out, err := h.NodeGroupCreate(ctx, c, ng)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"nodegroup_update": oslo.Method(func(ctx context.Context, a clusterNodeGroupArgs) (any, error) {
			c, ng, err := decodeClusterNodeGroup(a)
			if err != nil {
				return nil, err
			}
			out, err := h.NodeGroupUpdate(ctx, c, ng)
			if err != nil || out == nil {
				return nil, err
			}
			return encode(out)
		}),
		"nodegroup_delete": oslo.Method(func(ctx context.Context, a clusterNodeGroupArgs) (any, error) {
			c, ng, err := decodeClusterNodeGroup(a)
			if err != nil {
				return nil, err
			}
			return nil, h.NodeGroupDelete(ctx, c, ng)
		}),
	} {
		if err := d.Handle(name, fn); err != nil {
			return err
		}
	}
	return nil
}

func decodeClusterNodeGroup(a clusterNodeGroupArgs) (*objects.Cluster, *objects.NodeGroup, error) {
	c, err := objects.DecodeCluster(a.Cluster)
	if err != nil {
		return nil, nil, err
	}
	ng, err := objects.DecodeNodeGroup(a.NodeGroup)
	if err != nil {
		return nil, nil, err
	}
	return c, ng, nil
}

// decodeOptionalFederation decodes a federation argument. Like Python's
// serializer it passes null through as nil: federation handlers raise
// NotImplementedError whatever they are given.
func decodeOptionalFederation(raw json.RawMessage) (*objects.Federation, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return objects.DecodeFederation(raw)
}
