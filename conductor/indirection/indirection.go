// Package indirection serves oslo.versionedobjects' indirection RPC methods
// (magnum/conductor/handlers/indirection_api.py): a standalone magnum-api
// runs every remotable of its objects here, on the conductor's database.
//
// All six methods of every supported release are served:
// object_class_action and object_backport (15.0.1),
// object_class_action_versions and object_backport_versions (2026.x), and
// object_action. Exceptions go back as their original class, as
// ExpectedException makes them.
package indirection

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/pyjson"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
)

// Store is the part of db.Store the remotables use.
type Store interface {
	CreateCluster(ctx context.Context, c *objects.Cluster) error
	GetClusterByID(ctx context.Context, id int64) (*objects.Cluster, error)
	GetClusterByUUID(ctx context.Context, uuid string) (*objects.Cluster, error)
	GetClusterByName(ctx context.Context, name string) (*objects.Cluster, error)
	ListClusters(ctx context.Context, opts db.ListOpts, f db.ClusterFilters) ([]*objects.Cluster, error)
	CountClusters(ctx context.Context, f db.ClusterFilters) (int64, error)
	ClusterStats(ctx context.Context, projectID string) (clusters, nodes int64, err error)
	SaveCluster(ctx context.Context, c *objects.Cluster) error
	DestroyCluster(ctx context.Context, uuid string) error

	CreateClusterTemplate(ctx context.Context, t *objects.ClusterTemplate) error
	GetClusterTemplateByID(ctx context.Context, id int64) (*objects.ClusterTemplate, error)
	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*objects.ClusterTemplate, error)
	GetClusterTemplateByName(ctx context.Context, name string) (*objects.ClusterTemplate, error)
	ListClusterTemplates(ctx context.Context, opts db.ListOpts, f db.ClusterTemplateFilters) ([]*objects.ClusterTemplate, error)
	SaveClusterTemplate(ctx context.Context, t *objects.ClusterTemplate) error
	DestroyClusterTemplate(ctx context.Context, uuid string) error

	CreateNodeGroup(ctx context.Context, n *objects.NodeGroup) error
	GetNodeGroupByID(ctx context.Context, clusterUUID string, id int64) (*objects.NodeGroup, error)
	GetNodeGroupByUUID(ctx context.Context, clusterUUID, uuid string) (*objects.NodeGroup, error)
	GetNodeGroupByName(ctx context.Context, clusterUUID, name string) (*objects.NodeGroup, error)
	ListNodeGroups(ctx context.Context, clusterUUID string, opts db.ListOpts, f db.NodeGroupFilters) ([]*objects.NodeGroup, error)
	CountNodeGroups(ctx context.Context, clusterUUID string) (int64, error)
	SaveNodeGroup(ctx context.Context, n *objects.NodeGroup) error
	DestroyNodeGroup(ctx context.Context, clusterUUID, uuid string) error
	UpdateNodeGroupValues(ctx context.Context, clusterUUID, ident string, values map[string]any) (*objects.NodeGroup, error)

	CreateX509KeyPair(ctx context.Context, k *objects.X509KeyPair) error
	GetX509KeyPairByID(ctx context.Context, id int64) (*objects.X509KeyPair, error)
	GetX509KeyPairByUUID(ctx context.Context, uuid string) (*objects.X509KeyPair, error)
	ListX509KeyPairs(ctx context.Context, opts db.ListOpts, f db.X509KeyPairFilters) ([]*objects.X509KeyPair, error)
	SaveX509KeyPair(ctx context.Context, k *objects.X509KeyPair) error
	DestroyX509KeyPair(ctx context.Context, uuid string) error

	GetMagnumServiceByHostAndBinary(ctx context.Context, host, binary string) (*objects.MagnumService, error)
	CreateMagnumService(ctx context.Context, m *objects.MagnumService) error
	ListMagnumServices(ctx context.Context, opts db.ListOpts) ([]*objects.MagnumService, error)
	SaveMagnumService(ctx context.Context, m *objects.MagnumService) error
	DestroyMagnumService(ctx context.Context, id int64) error

	CreateQuota(ctx context.Context, q *objects.Quota) error
	GetQuotaByProjectResource(ctx context.Context, project, resource string) (*objects.Quota, error)
	GetQuotaByID(ctx context.Context, id int64) (*objects.Quota, error)
	ListQuotas(ctx context.Context, opts db.ListOpts, f db.QuotaFilters) ([]*objects.Quota, error)
	ListQuotasByProject(ctx context.Context, project string) ([]*objects.Quota, error)
	UpdateQuota(ctx context.Context, project string, values map[string]any) (*objects.Quota, error)
	DeleteQuota(ctx context.Context, project, resource string) error

	CreateFederation(ctx context.Context, f *objects.Federation) error
	GetFederationByID(ctx context.Context, id int64) (*objects.Federation, error)
	GetFederationByUUID(ctx context.Context, uuid string) (*objects.Federation, error)
	GetFederationByName(ctx context.Context, name string) (*objects.Federation, error)
	ListFederations(ctx context.Context, opts db.ListOpts, f db.FederationFilters) ([]*objects.Federation, error)
	CountFederations(ctx context.Context, f db.FederationFilters) (int64, error)
	SaveFederation(ctx context.Context, f *objects.Federation) error
	DestroyFederation(ctx context.Context, uuid string) error
}

var _ Store = (*db.Store)(nil)

// classMethod is one remotable classmethod.
type classMethod struct {
	sig signature
	run func(ctx context.Context, b bound) (any, error)
}

// instanceMethod is one remotable instance method (its only parameter is
// the context).
type instanceMethod func(ctx context.Context, o objects.Object) error

// Handler serves the indirection methods.
type Handler struct {
	store    Store
	log      *slog.Logger
	classes  map[string]map[string]classMethod
	instance map[string]map[string]instanceMethod
}

// New returns a Handler on store.
func New(store Store, log *slog.Logger) *Handler {
	h := &Handler{store: store, log: log}
	h.classes = h.classMethods()
	h.instance = h.instanceMethods()
	return h
}

// attributeError is Python's AttributeError for a missing method.
func attributeError(objname, method string, class bool) *exception.Error {
	if class {
		return exception.Builtin("AttributeError",
			fmt.Sprintf("type object '%s' has no attribute '%s'", objname, method))
	}
	return exception.Builtin("AttributeError", fmt.Sprintf("'%s' object has no attribute '%s'", objname, method))
}

func keyError(key string) *exception.Error {
	return exception.Builtin("KeyError", "'"+key+"'")
}

// ObjectClassAction is indirection_api.Handler.object_class_action
// (15.0.1): it runs objname.objmethod(context, *args, **kwargs) and returns
// an object result as its primitive at objver (a list of objects as a list
// of primitives), any other result as is.
func (h *Handler) ObjectClassAction(ctx context.Context, objname, objmethod, objver string,
	args []json.RawMessage, kwargs map[string]json.RawMessage) (any, error) {
	if err := objects.CheckVersion(objname, objver); err != nil {
		return nil, err
	}
	return h.classAction(ctx, objname, objmethod, objver, nil, args, kwargs)
}

// ObjectClassActionVersions is object_class_action_versions (2026.1 and
// later): as ObjectClassAction, with the caller's version manifest
// (object_versions) deciding the versions of the result and its children.
func (h *Handler) ObjectClassActionVersions(ctx context.Context, objname, objmethod string,
	objectVersions map[string]string, args []json.RawMessage, kwargs map[string]json.RawMessage) (any, error) {
	objver, ok := objectVersions[objname]
	if !ok {
		return nil, keyError(objname)
	}
	if err := objects.CheckVersion(objname, objver); err != nil {
		return nil, err
	}
	return h.classAction(ctx, objname, objmethod, objver, objectVersions, args, kwargs)
}

func (h *Handler) classAction(ctx context.Context, objname, objmethod, objver string, manifest map[string]string,
	args []json.RawMessage, kwargs map[string]json.RawMessage) (any, error) {
	m, ok := h.classes[objname][objmethod]
	if !ok {
		return nil, attributeError(objname, objmethod, true)
	}
	b, err := m.sig.bind(args, kwargs)
	if err != nil {
		return nil, err
	}
	h.log.DebugContext(ctx, "object class action", append(request.From(ctx).LogAttrs(),
		"object", objname, "method", objmethod, "version", objver)...)
	res, err := m.run(ctx, b)
	if err != nil {
		return nil, err
	}
	return encodeResult(res, objname, objver, manifest)
}

// encodeResult turns objects (and lists of them) in res into primitives:
// objects of class objname at objver, others at the manifest's version or
// the version their peer speaks.
func encodeResult(res any, objname, objver string, manifest map[string]string) (any, error) {
	// Objects are written straight to Python-layout JSON in a pooled
	// *pyjson.Buffer, already escaped as the reply envelope carries it
	// (a string), which the RPC server copies into the reply as it is and
	// then releases: a list of a few hundred clusters is the largest reply
	// the conductor sends.
	opts := func(o objects.Object) objects.EncodeOptions {
		v := manifest[o.ObjName()]
		if o.ObjName() == objname {
			v = objver
		}
		return objects.EncodeOptions{Version: v, Manifest: manifest, KeepKeys: true, Escaped: true}
	}
	enc := func(o objects.Object) (any, error) {
		buf := pyjson.GetBuffer()
		b, err := objects.AppendPrimitiveJSON(buf.B, o, opts(o))
		if err != nil {
			buf.Release()
			return nil, err
		}
		buf.B, buf.Escaped = b, true
		return buf, nil
	}
	switch x := res.(type) {
	case nil:
		return nil, nil
	case objects.Object:
		if reflect.ValueOf(x).IsNil() {
			return nil, nil
		}
		return enc(x)
	case []objects.Object:
		// One buffer for the whole list, laid out as json.dumps lays out a
		// list: no copy of each primitive into the reply.
		buf := pyjson.GetBuffer()
		out := slices.Grow(buf.B, 1+len(x)*1200)
		out = append(out, '[')
		for i, o := range x {
			if i > 0 {
				out = append(out, ", "...)
			}
			var err error
			if out, err = objects.AppendPrimitiveJSON(out, o, opts(o)); err != nil {
				buf.Release()
				return nil, err
			}
		}
		buf.B, buf.Escaped = append(out, ']'), true
		return buf, nil
	}
	return res, nil
}

// ObjectAction is object_action: it runs objinst.objmethod(context, *args,
// **kwargs) and returns [updates, result], where updates maps every field
// the call set or changed to its primitive, plus "obj_what_changed".
func (h *Handler) ObjectAction(ctx context.Context, objinst json.RawMessage, objmethod string,
	args []json.RawMessage, kwargs map[string]json.RawMessage) (any, error) {
	o, err := objects.Decode(objinst)
	if err != nil {
		return nil, err
	}
	m, ok := h.instance[o.ObjName()][objmethod]
	if !ok {
		return nil, attributeError(o.ObjName(), objmethod, false)
	}
	if _, err := sig(objmethod).bind(args, kwargs); err != nil {
		return nil, err
	}
	h.log.DebugContext(ctx, "object action", append(request.From(ctx).LogAttrs(),
		"object", o.ObjName(), "method", objmethod)...)
	before := objects.Clone(o)
	if err := m(ctx, o); err != nil {
		return nil, err
	}
	updates, err := diff(before, o)
	if err != nil {
		return nil, err
	}
	return []any{updates, nil}, nil
}

// diff is object_action's update list: every field set on after that was
// not set on before or whose primitive differs, and obj_what_changed.
// Cluster.trustee_password is only ever sent as null.
func diff(before, after objects.Object) (map[string]any, error) {
	updates := map[string]any{}
	// Fields the caller's version does not know stay out: a 1.1 NodeGroup
	// has no node_labels to update.
	for _, f := range objects.FieldsAt(after.ObjName(), receivedVersion(after)) {
		p, set, err := objects.FieldPrimitive(after, f, nil)
		if err != nil {
			return nil, err
		}
		if !set {
			continue
		}
		old, wasSet, err := objects.FieldPrimitive(before, f, nil)
		if err != nil {
			return nil, err
		}
		if wasSet && reflect.DeepEqual(old, p) {
			continue
		}
		if p != nil && after.ObjName() != objects.NameX509KeyPair && objects.IsSecret(after.ObjName(), f) {
			continue
		}
		updates[f] = p
	}
	known := objects.FieldsAt(after.ObjName(), receivedVersion(after))
	changed := []string{}
	for _, c := range objects.Changes(after) {
		if slices.Contains(known, c) {
			changed = append(changed, c)
		}
	}
	updates["obj_what_changed"] = changed
	return updates, nil
}

// receivedVersion is the version the peer sent o at.
func receivedVersion(o objects.Object) string {
	if r, ok := o.(interface{ ReceivedVersion() string }); ok {
		return r.ReceivedVersion()
	}
	return ""
}

// ObjectBackport is object_backport (15.0.1, 2026.1): objinst's primitive
// at targetVersion.
func (h *Handler) ObjectBackport(ctx context.Context, objinst json.RawMessage, targetVersion string) (any, error) {
	o, err := objects.Decode(objinst)
	if err != nil {
		return nil, err
	}
	return objects.EncodeWith(o, objects.EncodeOptions{Version: targetVersion, KeepKeys: true})
}

// ObjectBackportVersions is object_backport_versions (2026.2): objinst's
// primitive at the versions of the caller's manifest.
func (h *Handler) ObjectBackportVersions(ctx context.Context, objinst json.RawMessage,
	objectVersions map[string]string) (any, error) {
	o, err := objects.Decode(objinst)
	if err != nil {
		return nil, err
	}
	v, ok := objectVersions[o.ObjName()]
	if !ok {
		return nil, keyError(o.ObjName())
	}
	return objects.EncodeWith(o, objects.EncodeOptions{Version: v, Manifest: objectVersions, KeepKeys: true})
}
