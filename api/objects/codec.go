package objects

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// Keys of an object primitive (serial namespace "magnum_object").
const (
	KeyName      = "magnum_object.name"
	KeyNamespace = "magnum_object.namespace"
	KeyVersion   = "magnum_object.version"
	KeyData      = "magnum_object.data"
	KeyChanges   = "magnum_object.changes"
	Namespace    = "magnum"
)

// EncodeOptions tune Encode.
type EncodeOptions struct {
	// Version is the version to write; "" is the version the object was
	// received at, else the newest.
	Version string
	// Manifest maps class names to the versions to write child objects at
	// (obj_tree_get_versions of the caller), as object_class_action_versions
	// sends it.
	Manifest map[string]string
	// KeepKeys writes the X509KeyPair private key and passphrase. Only the
	// X509KeyPair indirection path sets it. Cluster.trustee_password is
	// never written, whatever the options.
	KeepKeys bool
	// Escaped makes AppendPrimitiveJSON write the JSON text escaped as the
	// body of a JSON string (what pyjson.AppendStringBody makes of it), as
	// oslo's envelope carries a reply: one pass instead of writing the text
	// and escaping it again.
	Escaped bool
}

// Encode returns o's primitive at version (see EncodeOptions.Version) with
// child objects at the versions in manifest (may be nil). Secret fields
// are left out unless their value is null.
func Encode(o Object, version string, manifest map[string]string) (map[string]any, error) {
	return EncodeWith(o, EncodeOptions{Version: version, Manifest: manifest})
}

// EncodeWith is Encode with options.
func EncodeWith(o Object, opts EncodeOptions) (map[string]any, error) {
	if o == nil || reflect.ValueOf(o).IsNil() {
		return nil, nil
	}
	ci := classOf(o)
	v, err := encodeVersion(o, ci, opts)
	if err != nil {
		return nil, err
	}
	data, err := encodeData(o, ci, v, opts)
	if err != nil {
		return nil, err
	}
	prim := map[string]any{
		KeyName: ci.name, KeyNamespace: Namespace, KeyVersion: v.String(), KeyData: data,
	}
	var changes []string
	for _, c := range Changes(o) {
		if _, ok := data[c]; ok {
			changes = append(changes, c)
		}
	}
	if len(changes) > 0 {
		prim[KeyChanges] = changes
	}
	return prim, nil
}

// encodeVersion is the version Encode writes o at: opts.Version, else the
// version o was received at, else the newest.
func encodeVersion(o Object, ci *classInfo, opts EncodeOptions) (version, error) {
	ver := opts.Version
	if ver == "" {
		ver = o.meta().version
	}
	if ver == "" {
		ver = o.ObjVersion()
	}
	return ci.resolve(ver)
}

// encodeData returns the "magnum_object.data" of o at version v.
func encodeData(o Object, ci *classInfo, v version, opts EncodeOptions) (map[string]any, error) {
	data := make(map[string]any, len(ci.fields))
	for i := range ci.fields {
		f := &ci.fields[i]
		if !f.knows(v) || !isSet(o, f) {
			continue
		}
		fv := fieldValue(o, f)
		if f.secret && !isZero(fv) {
			if ci.name != NameX509KeyPair || !opts.KeepKeys {
				continue
			}
		}
		if f.kind == kObject {
			if fv.IsNil() {
				continue
			}
			child := fv.Interface().(Object)
			cv := opts.Manifest[child.ObjName()]
			if cv == "" {
				cv = childVersion(ci.name, v, child)
			}
			copts := opts
			copts.Version = cv
			p, err := EncodeWith(child, copts)
			if err != nil {
				return nil, err
			}
			data[f.name] = p
			continue
		}
		if err := validate(ci, f, fv); err != nil {
			return nil, err
		}
		data[f.name] = primitiveOf(f, fv)
	}
	return data, nil
}

// EncodeJSON is Encode marshalled to JSON.
func EncodeJSON(o Object, version string, manifest map[string]string) ([]byte, error) {
	p, err := Encode(o, version, manifest)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// toMap turns a primitive given as JSON (bytes, json.RawMessage, string)
// or as an already decoded map into a map whose numbers are json.Number.
func toMap(raw any) (map[string]any, error) {
	var b []byte
	switch x := raw.(type) {
	case map[string]any:
		return x, nil
	case []byte:
		b = x
	case json.RawMessage:
		b = x
	case string:
		b = []byte(x)
	default:
		return nil, valueError("An object primitive is required, not a %s", pyTypeName(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, valueError("Invalid object primitive: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, valueError("An object primitive is required, not a %s", pyTypeName(v))
	}
	return m, nil
}

// IsPrimitive reports whether v looks like an object primitive (a map with
// the "magnum_object.name" key), as the serializer checks.
func IsPrimitive(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[KeyName]
	return ok
}

// Decode builds an object from its primitive (JSON bytes, json.RawMessage,
// string or decoded map), as obj_from_primitive does: fields are coerced,
// unknown data keys are ignored, and the declared changes are kept. An
// unknown class gives UnsupportedObjectError and a version newer than ours
// IncompatibleObjectVersion; bad field values give ValueError.
func Decode(raw any) (Object, error) {
	m, err := toMap(raw)
	if err != nil {
		return nil, err
	}
	name, _ := m[KeyName].(string)
	ns, _ := m[KeyNamespace].(string)
	ver, _ := m[KeyVersion].(string)
	if ns != Namespace {
		return nil, UnsupportedObjectError(fmt.Sprintf("%s.%s", ns, name))
	}
	ci, ok := classes[name]
	if !ok {
		return nil, UnsupportedObjectError(name)
	}
	if _, err := ci.resolve(ver); err != nil {
		return nil, err
	}
	o, _ := New(name)
	meta := o.meta()
	meta.version = ver
	meta.base = make(snapshot, len(ci.fields))
	data, ok := m[KeyData].(map[string]any)
	if !ok && m[KeyData] != nil {
		return nil, valueError("Invalid object primitive data for %s", name)
	}
	for i := range ci.fields {
		f := &ci.fields[i]
		rv, present := data[f.name]
		if !present {
			continue
		}
		if err := setField(o, ci, f, rv); err != nil {
			return nil, err
		}
		meta.base.take(f, fieldValue(o, f))
	}
	var changes []string
	switch ch := m[KeyChanges].(type) {
	case []any:
		for _, c := range ch {
			if s, ok := c.(string); ok {
				changes = append(changes, s)
			}
		}
	case []string:
		changes = ch
	}
	for _, s := range changes {
		if _, known := ci.byName[s]; known {
			if meta.declared == nil {
				meta.declared = map[string]bool{}
			}
			meta.declared[s] = true
		}
	}
	return o, nil
}

// DecodeAs decodes a primitive that must be of type T.
func DecodeAs[T Object](raw any) (T, error) {
	var zero T
	o, err := Decode(raw)
	if err != nil {
		return zero, err
	}
	t, ok := o.(T)
	if !ok {
		return zero, valueError("An object of type %s is required, not a %s", zero.ObjName(), o.ObjName())
	}
	return t, nil
}

// DecodeCluster decodes a Cluster primitive.
func DecodeCluster(raw any) (*Cluster, error) { return DecodeAs[*Cluster](raw) }

// DecodeClusterTemplate decodes a ClusterTemplate primitive.
func DecodeClusterTemplate(raw any) (*ClusterTemplate, error) {
	return DecodeAs[*ClusterTemplate](raw)
}

// DecodeNodeGroup decodes a NodeGroup primitive.
func DecodeNodeGroup(raw any) (*NodeGroup, error) { return DecodeAs[*NodeGroup](raw) }

// DecodeX509KeyPair decodes an X509KeyPair primitive.
func DecodeX509KeyPair(raw any) (*X509KeyPair, error) { return DecodeAs[*X509KeyPair](raw) }

// DecodeMagnumService decodes a MagnumService primitive.
func DecodeMagnumService(raw any) (*MagnumService, error) {
	return DecodeAs[*MagnumService](raw)
}

// DecodeCertificate decodes a Certificate primitive.
func DecodeCertificate(raw any) (*Certificate, error) { return DecodeAs[*Certificate](raw) }

// DecodeQuota decodes a Quota primitive.
func DecodeQuota(raw any) (*Quota, error) { return DecodeAs[*Quota](raw) }

// DecodeStats decodes a Stats primitive.
func DecodeStats(raw any) (*Stats, error) { return DecodeAs[*Stats](raw) }

// DecodeFederation decodes a Federation primitive.
func DecodeFederation(raw any) (*Federation, error) { return DecodeAs[*Federation](raw) }

// Clone returns a deep copy of o with the same set fields, changes,
// snapshot and received version (obj_clone). Secrets are copied too.
func Clone[T Object](o T) T {
	ci := classOf(o)
	c, _ := New(ci.name)
	src := reflect.ValueOf(o).Elem()
	dst := reflect.ValueOf(c).Elem()
	for i := range ci.fields {
		f := &ci.fields[i]
		sv := src.Field(f.index)
		dv := dst.Field(f.index)
		if isZero(sv) {
			continue
		}
		switch f.kind {
		case kObject:
			dv.Set(reflect.ValueOf(Clone(sv.Interface().(Object))))
		case kTime:
			t := *sv.Interface().(*time.Time)
			dv.Set(reflect.ValueOf(&t))
		case kString, kInt:
			if f.ptr {
				p := reflect.New(sv.Type().Elem())
				p.Elem().Set(sv.Elem())
				dv.Set(p)
			} else {
				dv.Set(sv)
			}
		case kDictOfStrings, kListOfStrings, kListOfDicts:
			dv.Set(reflect.ValueOf(primitiveOf(f, sv)))
		default:
			dv.Set(sv)
		}
	}
	sm, dm := o.meta(), c.meta()
	dm.version, dm.readOnly = sm.version, sm.readOnly
	if sm.base != nil {
		dm.base = make(snapshot, len(sm.base))
		for pos, e := range sm.base {
			switch {
			case !e.set:
				continue
			case ci.fields[pos].kind == kObject:
				// The snapshot of a child is its identity; the clone's
				// child is a new object equal to it.
				e.v = dst.Field(ci.fields[pos].index).Interface()
			case e.v != nil:
				e.v = deepCopy(e.v)
			}
			dm.base[pos] = e
		}
	}
	if sm.declared != nil {
		dm.declared = make(map[string]bool, len(sm.declared))
		for k := range sm.declared {
			dm.declared[k] = true
		}
	}
	return c.(T)
}

// FieldPrimitive returns the wire primitive of one set field of o (child
// objects at their newest version unless manifest says otherwise), and false
// when the field is unknown or unset. Secret values are returned as well:
// callers decide what may leave the process.
func FieldPrimitive(o Object, field string, manifest map[string]string) (any, bool, error) {
	ci := classOf(o)
	f, ok := ci.field(field)
	if !ok || !isSet(o, f) {
		return nil, false, nil
	}
	fv := fieldValue(o, f)
	if f.kind == kObject {
		if fv.IsNil() {
			return nil, true, nil
		}
		child := fv.Interface().(Object)
		cv := manifest[child.ObjName()]
		if cv == "" {
			cv = childVersion(ci.name, mustVersion(o.ObjVersion()), child)
		}
		p, err := EncodeWith(child, EncodeOptions{Version: cv, Manifest: manifest, KeepKeys: true})
		return p, true, err
	}
	return primitiveOf(f, fv), true, nil
}

// IsSecret reports whether field of class name is secret (never sent to a
// peer except, for X509KeyPair, on the indirection path).
func IsSecret(name, field string) bool {
	ci, ok := classes[name]
	if !ok {
		return false
	}
	f, ok := ci.field(field)
	return ok && f.secret
}

// Manifest returns the version manifest of o's class tree
// (obj_tree_get_versions) at the newest versions this package knows.
func Manifest(o Object) map[string]string {
	out := map[string]string{o.ObjName(): o.ObjVersion()}
	if o.ObjName() == NameCluster {
		out[NameClusterTemplate] = NewestVersion(NameClusterTemplate)
	}
	return out
}
