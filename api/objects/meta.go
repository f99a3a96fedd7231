// Package objects holds Magnum's versioned objects (oslo.versionedobjects) as
// Go types, and their primitive codec.
//
// Set and changed fields follow oslo.versionedobjects. A field is set when
// it came in a primitive, was set by ResetChanges (which, like loading a row
// with _from_db_object, marks every field set), was named by MarkChanged, or
// holds a non-zero Go value. A field changed when it was declared changed on
// the wire or with MarkChanged, or when its value differs from the snapshot
// taken at decode or at the last ResetChanges.
//
// On an object built in Go (never decoded nor reset), a field whose Go zero
// value is not its default (NodeGroup.NodeCount, default 1; the
// FloatingIPEnabled fields, default true) is always set and changed: Go
// cannot tell an assigned 0 from an untouched one, so the value the code
// holds is the one written and sent, and a NodeCount of 0 stays 0 rather
// than becoming the default. Unset makes it unset again. MarkLoadedReadOnly stands for
// ResetChanges on objects that are only loaded to be encoded: every field
// set, nothing changed, and no snapshot to compare with.
package objects

import (
	"reflect"
	"slices"
	"time"
)

// Meta is embedded in every object. It records which fields are set and
// which changed since the object was loaded or last saved, as
// oslo.versionedobjects does with obj_what_changed. Handlers assign fields
// directly; Changes finds what differs from the snapshot taken at the last
// ResetChanges (or decode), plus the changes a peer declared on the wire.
type Meta struct {
	// base holds each set field's primitive at the last reset, by field
	// position; a field absent from base was not set then. For object
	// fields it holds the child pointer.
	base snapshot
	// declared holds changes named by a received primitive's
	// "magnum_object.changes" or by MarkChanged that have not been reset
	// since.
	declared map[string]bool
	// version is the version the object was received at ("" when built
	// locally).
	version string
	// readOnly marks an object loaded only to be encoded in a reply
	// (MarkLoadedReadOnly): every field set, nothing changed, no snapshot.
	readOnly bool
}

func (m *Meta) meta() *Meta { return m }

// ReceivedVersion returns the object version a peer sent, or "" for an object
// built locally.
func (m *Meta) ReceivedVersion() string { return m.version }

// SetReceivedVersion records the version a peer speaks for this object, so
// that Encode without an explicit version answers at it.
func (m *Meta) SetReceivedVersion(v string) { m.version = v }

// isZero reports whether v holds its type's zero value (nil pointers, maps
// and slices; "", 0, false).
func isZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return v.IsNil()
	default:
		return v.IsZero()
	}
}

// isSet reports whether field f of o is set.
func isSet(o Object, f *fieldInfo) bool {
	m := o.meta()
	if m.declared[f.name] {
		return true
	}
	if m.readOnly {
		// As after ResetChanges: all set but a nil child object.
		return f.kind != kObject || !fieldValue(o, f).IsNil()
	}
	if _, ok := m.base.entry(f.pos); ok {
		return true
	}
	return !isZero(fieldValue(o, f)) || builtInGo(m, f)
}

// builtInGo reports whether f holds a value written in Go that must count
// even when zero: o was never decoded nor reset, and the field's zero value
// is not its default.
func builtInGo(m *Meta, f *fieldInfo) bool {
	return f.zeroNotDefault && m.base == nil
}

// IsSet reports whether field (wire name) is set on o, as
// obj_attr_is_set does. An unknown field is never set.
func IsSet(o Object, field string) bool {
	ci := classOf(o)
	f, ok := ci.field(field)
	if !ok {
		return false
	}
	return isSet(o, f)
}

// changed reports whether field f of o changed since the last reset.
func changed(o Object, f *fieldInfo) bool {
	m := o.meta()
	if m.declared[f.name] {
		return true
	}
	if m.readOnly {
		// Nothing changed since the load, but a child's own changes
		// count, as after ResetChanges.
		if f.kind != kObject {
			return false
		}
		v := fieldValue(o, f)
		return !v.IsNil() && len(Changes(v.Interface().(Object))) > 0
	}
	v := fieldValue(o, f)
	e, had := m.base.entry(f.pos)
	if f.kind == kObject {
		if v.IsNil() {
			return had && e.v != nil
		}
		child := v.Interface().(Object)
		if !had || e.v != child {
			return true
		}
		return len(Changes(child)) > 0
	}
	if !had {
		return !isZero(v) || builtInGo(m, f)
	}
	return !e.same(f, v)
}

// Changes returns the wire names of the fields of o that changed since it
// was decoded or last reset, in declaration order (obj_what_changed). A
// child object that has changes of its own counts as changed.
func Changes(o Object) []string {
	ci := classOf(o)
	var out []string
	for i := range ci.fields {
		if changed(o, &ci.fields[i]) {
			out = append(out, ci.fields[i].name)
		}
	}
	return out
}

// ResetChanges forgets the changes of o (obj_reset_changes). Without field
// names, it snapshots every field and so marks every field set, as loading a
// row does; a child object field is set only when it is not nil, and the
// child's own changes are not reset. With field names, only those fields are
// reset, and a field that is not set stays unset.
func ResetChanges(o Object, fields ...string) {
	ci := classOf(o)
	m := o.meta()
	if m.readOnly {
		// Nothing changed: a partial reset is a whole one.
		fields = nil
	}
	if len(fields) == 0 {
		m.readOnly = false
		m.declared = nil
		m.base = make(snapshot, len(ci.fields))
		for i := range ci.fields {
			f := &ci.fields[i]
			v := fieldValue(o, f)
			if f.kind == kObject && v.IsNil() {
				continue
			}
			m.base.take(f, v)
		}
		return
	}
	for _, name := range fields {
		f, ok := ci.field(name)
		if !ok {
			continue
		}
		set := isSet(o, f)
		delete(m.declared, name)
		if !set {
			m.base.del(f.pos)
			continue
		}
		if m.base == nil {
			m.base = make(snapshot, len(ci.fields))
		}
		m.base.take(f, fieldValue(o, f))
	}
}

// MarkLoadedReadOnly is ResetChanges for an object just loaded to be
// encoded in a reply and nothing else (a list remotable's result): every
// field is set and nothing has changed, but no snapshot is taken, which
// makes loading and encoding a long list much cheaper. Assignments made
// to o afterwards are therefore not seen as changes; ResetChanges,
// MarkChanged and Unset first make o an ordinary object, with its values
// at that moment as the loaded ones. The database layer refuses to save a
// read-only object.
func MarkLoadedReadOnly(o Object) {
	m := o.meta()
	m.base, m.declared, m.readOnly = nil, nil, true
}

// IsReadOnly reports whether o was loaded with MarkLoadedReadOnly and has
// not been reset since.
func IsReadOnly(o Object) bool { return o.meta().readOnly }

// MarkChanged declares fields of o changed (and so set), for assignments
// that Changes cannot see: a field written with the value it was loaded
// with (to write it anyway), or a nullable field set to nil or a field set
// to "" or false on an object that was never reset. Unknown names are
// ignored.
func MarkChanged(o Object, fields ...string) {
	ci := classOf(o)
	m := o.meta()
	if m.readOnly {
		ResetChanges(o)
	}
	for _, name := range fields {
		if _, ok := ci.field(name); !ok {
			continue
		}
		if m.declared == nil {
			m.declared = map[string]bool{}
		}
		m.declared[name] = true
	}
}

// Unset makes fields of o unset again (obj_reset_changes plus delattr): the
// value goes back to the Go zero value and the field leaves the snapshot.
func Unset(o Object, fields ...string) {
	ci := classOf(o)
	m := o.meta()
	if m.readOnly {
		ResetChanges(o)
	}
	if m.base == nil {
		// Tracked from now on, so that a zero that is not the default
		// counts as unset too (builtInGo).
		m.base = make(snapshot, len(ci.fields))
	}
	for _, name := range fields {
		f, ok := ci.field(name)
		if !ok {
			continue
		}
		v := fieldValue(o, f)
		v.Set(reflect.Zero(v.Type()))
		m.base.del(f.pos)
		delete(m.declared, name)
	}
}

// HasChanged reports whether field changed since the last reset.
func HasChanged(o Object, field string) bool {
	return slices.Contains(Changes(o), field)
}

// RefreshFrom copies into dst every field that is set on dst and whose
// value differs in src (same class), as the refresh remotables do; the
// copied fields count as changed. Child object fields are left alone. It
// returns the names of the copied fields.
func RefreshFrom(dst, src Object) []string {
	ci := classOf(dst)
	if src == nil || src.ObjName() != ci.name {
		return nil
	}
	var out []string
	for i := range ci.fields {
		f := &ci.fields[i]
		if f.kind == kObject || !isSet(dst, f) {
			continue
		}
		dv, sv := fieldValue(dst, f), fieldValue(src, f)
		if reflect.DeepEqual(primitiveOf(f, dv), primitiveOf(f, sv)) {
			continue
		}
		setFromValue(f, dv, sv)
		out = append(out, f.name)
	}
	return out
}

// setFromValue deep-copies sv into dv (same field of the same class).
func setFromValue(f *fieldInfo, dv, sv reflect.Value) {
	switch {
	case isZero(sv):
		dv.Set(reflect.Zero(dv.Type()))
	case f.ptr:
		p := reflect.New(sv.Type().Elem())
		p.Elem().Set(sv.Elem())
		dv.Set(p)
	case f.kind == kDictOfStrings || f.kind == kListOfStrings || f.kind == kListOfDicts:
		dv.Set(reflect.ValueOf(primitiveOf(f, sv)))
	default:
		dv.Set(sv)
	}
}

// snapshot is a Meta's record of the fields set at the last reset, indexed
// by field position: a slice, so that loading a row (which snapshots every
// field) does not build a map per object, with scalars held unboxed.
type snapshot []snapEntry

// snapEntry is one field's value at the last reset, as its primitive
// would compare: null, a string (strings and enums), a number (integers,
// booleans, and times as Unix seconds: the primitive has second precision),
// or, for collections and child objects, v (a copy of the primitive, or the
// child pointer).
type snapEntry struct {
	set  bool
	null bool
	s    string
	n    int64
	v    any
}

func (s snapshot) entry(pos int) (snapEntry, bool) {
	if pos >= len(s) {
		return snapEntry{}, false
	}
	return s[pos], s[pos].set
}

func (s snapshot) del(pos int) {
	if pos < len(s) {
		s[pos] = snapEntry{}
	}
}

// take records field f's current value v.
func (s snapshot) take(f *fieldInfo, v reflect.Value) {
	e := snapEntry{set: true}
	switch f.kind {
	case kObject:
		e.v = v.Interface()
	case kString, kInt, kEnum, kBool, kTime:
		if f.ptr {
			if v.IsNil() {
				e.null = true
				break
			}
			v = v.Elem()
		}
		switch {
		case f.kind == kTime:
			e.n = v.Interface().(time.Time).Unix()
		case v.Kind() == reflect.String:
			e.s = v.String()
			e.null = f.kind == kEnum && e.s == ""
		case v.Kind() == reflect.Int64:
			e.n = v.Int()
		case v.Kind() == reflect.Bool:
			if v.Bool() {
				e.n = 1
			}
		}
	default:
		e.v = primitiveOf(f, v)
		e.null = e.v == nil || reflect.ValueOf(e.v).IsNil()
	}
	s[f.pos] = e
}

// same reports whether field f's value v has the primitive e recorded,
// without building that primitive: every object of a list reply is
// checked for changes, so this must not allocate.
func (e snapEntry) same(f *fieldInfo, v reflect.Value) bool {
	if f.ptr {
		if v.IsNil() {
			return e.null
		}
		v = v.Elem()
	}
	switch f.kind {
	case kTime:
		return !e.null && e.n == v.Interface().(time.Time).Unix()
	case kString, kInt, kEnum, kBool:
		switch v.Kind() {
		case reflect.String:
			if f.kind == kEnum && v.Len() == 0 {
				return e.null
			}
			return !e.null && e.s == v.String()
		case reflect.Int64:
			return !e.null && e.n == v.Int()
		case reflect.Bool:
			return !e.null && (e.n == 1) == v.Bool()
		}
	case kDictOfStrings:
		if v.IsNil() {
			return e.null
		}
		p, ok := e.v.(map[string]string)
		if !ok || p == nil || len(p) != v.Len() {
			return false
		}
		for k, s := range v.Interface().(map[string]string) {
			if ps, ok := p[k]; !ok || ps != s {
				return false
			}
		}
		return true
	case kListOfStrings:
		if v.IsNil() {
			return e.null
		}
		p, ok := e.v.([]string)
		if !ok || p == nil || len(p) != v.Len() {
			return false
		}
		for i := range p {
			if p[i] != v.Index(i).String() {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(e.v, primitiveOf(f, v))
}
