package objects

import (
	"reflect"
	"strconv"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
)

// AppendPrimitiveJSON appends o's primitive (EncodeWith with opts) as JSON
// laid out as Python writes it, exactly what pyjson.Append of EncodeWith's
// map would write, but straight from the typed fields: no map per object,
// no sorting of keys per object, no copies of strings. Lists of objects
// (Cluster.list of a few hundred clusters) are encoded this way.
func AppendPrimitiveJSON(dst []byte, o Object, opts EncodeOptions) ([]byte, error) {
	if o == nil || reflect.ValueOf(o).IsNil() {
		return append(dst, "null"...), nil
	}
	ci := classOf(o)
	v, err := encodeVersion(o, ci, opts)
	if err != nil {
		return dst, err
	}
	// Keys in sorted order: changes, data, name, namespace, version.
	dst = append(dst, '{')
	first := true
	for _, c := range Changes(o) {
		f, ok := ci.field(c)
		if !ok || !writes(o, ci, f, v, opts) {
			continue
		}
		if first {
			dst = append(dst, `"`+KeyChanges+`": [`...)
			first = false
		} else {
			dst = append(dst, ", "...)
		}
		dst = pyjson.AppendString(dst, c)
	}
	if !first {
		dst = append(dst, "], "...)
	}
	dst = append(dst, `"`+KeyData+`": {`...)
	n := 0
	for _, i := range ci.sorted {
		f := &ci.fields[i]
		if !writes(o, ci, f, v, opts) {
			continue
		}
		if n > 0 {
			dst = append(dst, ", "...)
		}
		n++
		dst = append(pyjson.AppendString(dst, f.name), ": "...)
		fv := fieldValue(o, f)
		if f.kind == kObject {
			child := fv.Interface().(Object)
			copts := opts
			if copts.Version = opts.Manifest[child.ObjName()]; copts.Version == "" {
				copts.Version = childVersion(ci.name, v, child)
			}
			if dst, err = AppendPrimitiveJSON(dst, child, copts); err != nil {
				return dst, err
			}
			continue
		}
		if err := validate(ci, f, fv); err != nil {
			return dst, err
		}
		if dst, err = appendFieldJSON(dst, f, fv); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `}, "`+KeyName+`": `...)
	dst = pyjson.AppendString(dst, ci.name)
	dst = append(dst, `, "`+KeyNamespace+`": "`+Namespace+`", "`+KeyVersion+`": `...)
	dst = pyjson.AppendString(dst, v.String())
	return append(dst, '}'), nil
}

// writes reports whether encodeData writes field f of o at version v.
func writes(o Object, ci *classInfo, f *fieldInfo, v version, opts EncodeOptions) bool {
	if !f.knows(v) || !isSet(o, f) {
		return false
	}
	fv := fieldValue(o, f)
	if f.secret && !isZero(fv) && (ci.name != NameX509KeyPair || !opts.KeepKeys) {
		return false
	}
	return f.kind != kObject || !fv.IsNil()
}

// appendFieldJSON appends primitiveOf(f, v) as JSON.
func appendFieldJSON(dst []byte, f *fieldInfo, v reflect.Value) ([]byte, error) {
	switch f.kind {
	case kString, kInt, kEnum:
		if f.ptr {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.String:
			if f.kind == kEnum && v.Len() == 0 {
				return append(dst, "null"...), nil
			}
			return pyjson.AppendString(dst, v.String()), nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.AppendInt(dst, v.Int(), 10), nil
		}
	case kBool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case kTime:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		// The ISO layout is ASCII digits and separators: no escaping needed.
		dst = append(dst, '"')
		dst = v.Interface().(*time.Time).UTC().AppendFormat(dst, isoTimeLayout)
		return append(dst, '"'), nil
	case kDictOfStrings:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return pyjson.Append(dst, v.Interface().(map[string]string))
	case kListOfStrings:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return pyjson.Append(dst, v.Interface().([]string))
	}
	// Lists of dicts (rare, free-form): the generic path.
	return pyjson.Append(dst, primitiveOf(f, v))
}
