// Package conductorapi is the Go twin of magnum/conductor/api.py: a typed
// client for the conductor's RPC methods. Objects travel as
// oslo.versionedobjects primitives (json.RawMessage); this package does not
// interpret them.
package conductorapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openstack/magnum-conductor/api/oslo"
)

// DefaultTopic is [conductor] topic's default.
const DefaultTopic = "magnum-conductor"

// Transport is what the API needs from an RPC client (*oslo.Client).
type Transport interface {
	Call(ctx context.Context, t oslo.Target, method string, args any, co ...oslo.CallOptions) (json.RawMessage, error)
	Cast(ctx context.Context, t oslo.Target, method string, args any) error
}

// API is magnum.conductor.api.API (plus ListenerAPI.ping_conductor and the
// 2026.x methods credential_rotate, object_class_action_versions and
// object_backport_versions).
type API struct {
	tr     Transport
	target oslo.Target
	co     []oslo.CallOptions
}

// New returns the API for topic ("" means "magnum-conductor") on the control
// exchange.
func New(tr Transport, topic string) *API {
	if topic == "" {
		topic = DefaultTopic
	}
	return &API{tr: tr, target: oslo.Target{Topic: topic}}
}

// WithServer returns a copy that addresses one conductor (ListenerAPI's
// server=).
func (a *API) WithServer(server string) *API {
	b := *a
	b.target.Server = server
	return &b
}

// WithCallOptions returns a copy whose calls use co (a timeout of their
// own, oslo's call monitor).
func (a *API) WithCallOptions(co oslo.CallOptions) *API {
	b := *a
	b.co = []oslo.CallOptions{co}
	return &b
}

func (a *API) call(ctx context.Context, method string, args any) (json.RawMessage, error) {
	return a.tr.Call(ctx, a.target, method, args, a.co...)
}

func (a *API) cast(ctx context.Context, method string, args any) error {
	return a.tr.Cast(ctx, a.target, method, args)
}

// obj makes a missing object primitive travel as null (Python None).
func obj(o json.RawMessage) json.RawMessage {
	if len(o) == 0 {
		return json.RawMessage("null")
	}
	return o
}

// ---- Clusters. The struct field order is the order Python sends kwargs.

type clusterCreateArgs struct {
	Cluster       json.RawMessage `json:"cluster"`
	MasterCount   int             `json:"master_count"`
	NodeCount     int             `json:"node_count"`
	CreateTimeout *int            `json:"create_timeout"`
}

// ClusterCreate is cluster_create (call); it returns the Cluster primitive.
func (a *API) ClusterCreate(ctx context.Context, cluster json.RawMessage, masterCount, nodeCount int, createTimeout *int) (json.RawMessage, error) {
	return a.call(ctx, "cluster_create", clusterCreateArgs{obj(cluster), masterCount, nodeCount, createTimeout})
}

// ClusterCreateAsync is cluster_create_async (cast).
func (a *API) ClusterCreateAsync(ctx context.Context, cluster json.RawMessage, masterCount, nodeCount int, createTimeout *int) error {
	return a.cast(ctx, "cluster_create", clusterCreateArgs{obj(cluster), masterCount, nodeCount, createTimeout})
}

type uuidArgs struct {
	UUID string `json:"uuid"`
}

// ClusterDelete is cluster_delete (call).
func (a *API) ClusterDelete(ctx context.Context, uuid string) error {
	_, err := a.call(ctx, "cluster_delete", uuidArgs{uuid})
	return err
}

// ClusterDeleteAsync is cluster_delete_async (cast).
func (a *API) ClusterDeleteAsync(ctx context.Context, uuid string) error {
	return a.cast(ctx, "cluster_delete", uuidArgs{uuid})
}

type clusterUpdateArgs struct {
	Cluster            json.RawMessage `json:"cluster"`
	NodeCount          int             `json:"node_count"`
	HealthStatus       *string         `json:"health_status"`
	HealthStatusReason json.RawMessage `json:"health_status_reason"`
}

type clusterUpdateAsyncArgs struct {
	clusterUpdateArgs
	Rollback bool `json:"rollback"`
}

// ClusterUpdate is cluster_update (call, no rollback on the wire). It
// returns the Cluster primitive, or null when nothing changed.
func (a *API) ClusterUpdate(ctx context.Context, cluster json.RawMessage, nodeCount int, healthStatus *string, healthStatusReason json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "cluster_update", clusterUpdateArgs{obj(cluster), nodeCount, healthStatus, obj(healthStatusReason)})
}

// ClusterUpdateAsync is cluster_update_async (cast, with rollback).
func (a *API) ClusterUpdateAsync(ctx context.Context, cluster json.RawMessage, nodeCount int, healthStatus *string, healthStatusReason json.RawMessage, rollback bool) error {
	return a.cast(ctx, "cluster_update", clusterUpdateAsyncArgs{clusterUpdateArgs{obj(cluster), nodeCount, healthStatus, obj(healthStatusReason)}, rollback})
}

type clusterResizeArgs struct {
	Cluster       json.RawMessage `json:"cluster"`
	NodeCount     int             `json:"node_count"`
	NodesToRemove []string        `json:"nodes_to_remove"`
	NodeGroup     json.RawMessage `json:"nodegroup"`
}

func resizeArgs(cluster json.RawMessage, nodeCount int, nodesToRemove []string, nodegroup json.RawMessage) clusterResizeArgs {
	if nodesToRemove == nil {
		nodesToRemove = []string{}
	}
	return clusterResizeArgs{obj(cluster), nodeCount, nodesToRemove, obj(nodegroup)}
}

// ClusterResize is cluster_resize (call; Python's rollback argument is not
// sent).
func (a *API) ClusterResize(ctx context.Context, cluster json.RawMessage, nodeCount int, nodesToRemove []string, nodegroup json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "cluster_resize", resizeArgs(cluster, nodeCount, nodesToRemove, nodegroup))
}

// ClusterResizeAsync is cluster_resize_async (cast).
func (a *API) ClusterResizeAsync(ctx context.Context, cluster json.RawMessage, nodeCount int, nodesToRemove []string, nodegroup json.RawMessage) error {
	return a.cast(ctx, "cluster_resize", resizeArgs(cluster, nodeCount, nodesToRemove, nodegroup))
}

type clusterUpgradeArgs struct {
	Cluster         json.RawMessage `json:"cluster"`
	ClusterTemplate json.RawMessage `json:"cluster_template"`
	MaxBatchSize    int             `json:"max_batch_size"`
	NodeGroup       json.RawMessage `json:"nodegroup"`
}

// ClusterUpgrade is cluster_upgrade (call).
func (a *API) ClusterUpgrade(ctx context.Context, cluster, clusterTemplate json.RawMessage, maxBatchSize int, nodegroup json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "cluster_upgrade", clusterUpgradeArgs{obj(cluster), obj(clusterTemplate), maxBatchSize, obj(nodegroup)})
}

// ClusterUpgradeAsync is cluster_upgrade_async, which magnum implements as a
// call too.
func (a *API) ClusterUpgradeAsync(ctx context.Context, cluster, clusterTemplate json.RawMessage, maxBatchSize int, nodegroup json.RawMessage) (json.RawMessage, error) {
	return a.ClusterUpgrade(ctx, cluster, clusterTemplate, maxBatchSize, nodegroup)
}

// ---- Federations (NotImplementedError on every conductor so far).

type federationCreateArgs struct {
	Federation    json.RawMessage `json:"federation"`
	CreateTimeout *int            `json:"create_timeout"`
}

type federationArgs struct {
	Federation json.RawMessage `json:"federation"`
}

type federationUpdateAsyncArgs struct {
	Federation json.RawMessage `json:"federation"`
	Rollback   bool            `json:"rollback"`
}

// FederationCreate is federation_create (call).
func (a *API) FederationCreate(ctx context.Context, federation json.RawMessage, createTimeout *int) (json.RawMessage, error) {
	return a.call(ctx, "federation_create", federationCreateArgs{obj(federation), createTimeout})
}

// FederationCreateAsync is federation_create_async (cast).
func (a *API) FederationCreateAsync(ctx context.Context, federation json.RawMessage, createTimeout *int) error {
	return a.cast(ctx, "federation_create", federationCreateArgs{obj(federation), createTimeout})
}

// FederationDelete is federation_delete (call).
func (a *API) FederationDelete(ctx context.Context, uuid string) error {
	_, err := a.call(ctx, "federation_delete", uuidArgs{uuid})
	return err
}

// FederationDeleteAsync is federation_delete_async (cast).
func (a *API) FederationDeleteAsync(ctx context.Context, uuid string) error {
	return a.cast(ctx, "federation_delete", uuidArgs{uuid})
}

// FederationUpdate is federation_update (call, no rollback).
func (a *API) FederationUpdate(ctx context.Context, federation json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "federation_update", federationArgs{obj(federation)})
}

// FederationUpdateAsync is federation_update_async (cast, with rollback).
func (a *API) FederationUpdateAsync(ctx context.Context, federation json.RawMessage, rollback bool) error {
	return a.cast(ctx, "federation_update", federationUpdateAsyncArgs{obj(federation), rollback})
}

// ---- Certificates and credentials.

type signArgs struct {
	Cluster     json.RawMessage `json:"cluster"`
	Certificate json.RawMessage `json:"certificate"`
}

type getCAArgs struct {
	Cluster    json.RawMessage `json:"cluster"`
	CACertType *string         `json:"ca_cert_type"`
}

type clusterArgs struct {
	Cluster json.RawMessage `json:"cluster"`
}

// SignCertificate is sign_certificate (call); it returns the Certificate
// primitive with pem set.
func (a *API) SignCertificate(ctx context.Context, cluster, certificate json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "sign_certificate", signArgs{obj(cluster), obj(certificate)})
}

// GetCACertificate is get_ca_certificate (call); caCertType nil, "etcd" or
// "front_proxy".
func (a *API) GetCACertificate(ctx context.Context, cluster json.RawMessage, caCertType *string) (json.RawMessage, error) {
	return a.call(ctx, "get_ca_certificate", getCAArgs{obj(cluster), caCertType})
}

// RotateCACertificate is rotate_ca_certificate (call).
func (a *API) RotateCACertificate(ctx context.Context, cluster json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "rotate_ca_certificate", clusterArgs{obj(cluster)})
}

// CredentialRotate is credential_rotate (call; 2026.1 and later).
func (a *API) CredentialRotate(ctx context.Context, cluster json.RawMessage) error {
	_, err := a.call(ctx, "credential_rotate", clusterArgs{obj(cluster)})
	return err
}

// CredentialRotateAsync is credential_rotate_async (cast).
func (a *API) CredentialRotateAsync(ctx context.Context, cluster json.RawMessage) error {
	return a.cast(ctx, "credential_rotate", clusterArgs{obj(cluster)})
}

// ---- Node groups.

type nodegroupArgs struct {
	Cluster   json.RawMessage `json:"cluster"`
	NodeGroup json.RawMessage `json:"nodegroup"`
}

// NodeGroupCreate is nodegroup_create (call).
func (a *API) NodeGroupCreate(ctx context.Context, cluster, nodegroup json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "nodegroup_create", nodegroupArgs{obj(cluster), obj(nodegroup)})
}

// NodeGroupCreateAsync is nodegroup_create_async (cast).
func (a *API) NodeGroupCreateAsync(ctx context.Context, cluster, nodegroup json.RawMessage) error {
	return a.cast(ctx, "nodegroup_create", nodegroupArgs{obj(cluster), obj(nodegroup)})
}

// NodeGroupUpdate is nodegroup_update (call).
func (a *API) NodeGroupUpdate(ctx context.Context, cluster, nodegroup json.RawMessage) (json.RawMessage, error) {
	return a.call(ctx, "nodegroup_update", nodegroupArgs{obj(cluster), obj(nodegroup)})
}

// NodeGroupUpdateAsync is nodegroup_update_async (cast).
func (a *API) NodeGroupUpdateAsync(ctx context.Context, cluster, nodegroup json.RawMessage) error {
	return a.cast(ctx, "nodegroup_update", nodegroupArgs{obj(cluster), obj(nodegroup)})
}

// NodeGroupDelete is nodegroup_delete (call).
func (a *API) NodeGroupDelete(ctx context.Context, cluster, nodegroup json.RawMessage) error {
	_, err := a.call(ctx, "nodegroup_delete", nodegroupArgs{obj(cluster), obj(nodegroup)})
	return err
}

// NodeGroupDeleteAsync is nodegroup_delete_async (cast).
func (a *API) NodeGroupDeleteAsync(ctx context.Context, cluster, nodegroup json.RawMessage) error {
	return a.cast(ctx, "nodegroup_delete", nodegroupArgs{obj(cluster), obj(nodegroup)})
}

// ---- Listener.

// PingConductor is ListenerAPI.ping_conductor (call); true when a conductor
// answers. Use WithServer to ping one conductor.
func (a *API) PingConductor(ctx context.Context) (bool, error) {
	res, err := a.call(ctx, "ping_conductor", struct{}{})
	if err != nil {
		return false, err
	}
	var ok bool
	if err := json.Unmarshal(res, &ok); err != nil {
		return false, fmt.Errorf("ping_conductor returned %s: %w", res, err)
	}
	return ok, nil
}

// ---- Versioned-object indirection (MagnumObjectIndirectionAPI).

func list(args []any) []any {
	if args == nil {
		return []any{}
	}
	return args
}

func dict(kwargs map[string]any) map[string]any {
	if kwargs == nil {
		return map[string]any{}
	}
	return kwargs
}

type classActionArgs struct {
	ObjName   string         `json:"objname"`
	ObjMethod string         `json:"objmethod"`
	ObjVer    string         `json:"objver"`
	Args      []any          `json:"args"`
	Kwargs    map[string]any `json:"kwargs"`
}

// ObjectClassAction is object_class_action (15.0.1): a remotable
// classmethod. It returns the primitive (or list, or plain value).
func (a *API) ObjectClassAction(ctx context.Context, objname, objmethod, objver string, args []any, kwargs map[string]any) (json.RawMessage, error) {
	return a.call(ctx, "object_class_action", classActionArgs{objname, objmethod, objver, list(args), dict(kwargs)})
}

type classActionVersionsArgs struct {
	ObjName        string            `json:"objname"`
	ObjMethod      string            `json:"objmethod"`
	ObjectVersions map[string]string `json:"object_versions"`
	Args           []any             `json:"args"`
	Kwargs         map[string]any    `json:"kwargs"`
}

// ObjectClassActionVersions is object_class_action_versions (2026.1 and
// later).
func (a *API) ObjectClassActionVersions(ctx context.Context, objname, objmethod string, objectVersions map[string]string, args []any, kwargs map[string]any) (json.RawMessage, error) {
	return a.call(ctx, "object_class_action_versions", classActionVersionsArgs{objname, objmethod, objectVersions, list(args), dict(kwargs)})
}

type objectActionArgs struct {
	ObjInst   json.RawMessage `json:"objinst"`
	ObjMethod string          `json:"objmethod"`
	Args      []any           `json:"args"`
	Kwargs    map[string]any  `json:"kwargs"`
}

// ObjectAction is object_action: a remotable method on objinst. The
// conductor answers [updates, result]; updates maps changed fields to
// primitives plus "obj_what_changed".
func (a *API) ObjectAction(ctx context.Context, objinst json.RawMessage, objmethod string, args []any, kwargs map[string]any) (updates map[string]json.RawMessage, result json.RawMessage, err error) {
	res, err := a.call(ctx, "object_action", objectActionArgs{obj(objinst), objmethod, list(args), dict(kwargs)})
	if err != nil {
		return nil, nil, err
	}
	var pair []json.RawMessage
	if err := json.Unmarshal(res, &pair); err != nil || len(pair) != 2 {
		return nil, nil, fmt.Errorf("object_action returned %.200s, want [updates, result]", res)
	}
	if err := json.Unmarshal(pair[0], &updates); err != nil {
		return nil, nil, fmt.Errorf("object_action updates: %w", err)
	}
	return updates, pair[1], nil
}

type backportArgs struct {
	ObjInst       json.RawMessage `json:"objinst"`
	TargetVersion string          `json:"target_version"`
}

// ObjectBackport is object_backport (15.0.1, 2026.1).
func (a *API) ObjectBackport(ctx context.Context, objinst json.RawMessage, targetVersion string) (json.RawMessage, error) {
	return a.call(ctx, "object_backport", backportArgs{obj(objinst), targetVersion})
}

type backportVersionsArgs struct {
	ObjInst        json.RawMessage   `json:"objinst"`
	ObjectVersions map[string]string `json:"object_versions"`
}

// ObjectBackportVersions is object_backport_versions (master).
func (a *API) ObjectBackportVersions(ctx context.Context, objinst json.RawMessage, objectVersions map[string]string) (json.RawMessage, error) {
	return a.call(ctx, "object_backport_versions", backportVersionsArgs{obj(objinst), objectVersions})
}
