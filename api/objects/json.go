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
	if o == nil {
		return append(dst, "null"...), nil
	}
	ov := reflect.ValueOf(o)
	if ov.IsNil() {
		return append(dst, "null"...), nil
	}
	ci := classOf(o)
	v, err := encodeVersion(o, ci, opts)
	if err != nil {
		return dst, err
	}
	m := o.meta()
	// A read-only object (a loaded list) has every field set and nothing
	// changed: no per-field bookkeeping to consult.
	loaded := m.readOnly
	s := ov.Elem()
	js := &plainJSON
	if opts.Escaped {
		js = &escapedJSON
	}
	// Keys in sorted order: changes, data, name, namespace, version.
	dst = append(dst, '{')
	if !loaded {
		first := true
		for _, c := range Changes(o) {
			f, ok := ci.field(c)
			if !ok || !writesValue(ci, f, s.Field(f.index), v, opts) || !isSet(o, f) {
				continue
			}
			if first {
				dst = append(dst, js.changes...)
				first = false
			} else {
				dst = append(dst, ", "...)
			}
			dst = js.appendString(dst, c)
		}
		if !first {
			dst = append(dst, "], "...)
		}
	}
	dst = append(dst, js.data...)
	n := 0
	for _, i := range ci.sorted {
		f := &ci.fields[i]
		fv := s.Field(f.index)
		if !writesValue(ci, f, fv, v, opts) || (!loaded && !isSet(o, f)) {
			continue
		}
		if n > 0 {
			dst = append(dst, ", "...)
		}
		n++
		dst = append(dst, js.key(f)...)
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
		if dst, err = appendFieldJSON(dst, f, fv, js); err != nil {
			return dst, err
		}
	}
	dst = append(dst, js.name...)
	dst = js.appendString(dst, ci.name)
	dst = append(dst, js.version...)
	dst = v.appendTo(dst)
	dst = append(dst, js.quote...)
	return append(dst, '}'), nil
}

// writesValue reports whether a set field f, whose value is fv, is written
// at version v.
func writesValue(ci *classInfo, f *fieldInfo, fv reflect.Value, v version, opts EncodeOptions) bool {
	if !f.knows(v) {
		return false
	}
	if f.secret && !isZero(fv) && (ci.name != NameX509KeyPair || !opts.KeepKeys) {
		return false
	}
	return f.kind != kObject || !fv.IsNil()
}

// jsonForm is how AppendPrimitiveJSON writes quotes, strings and the fixed
// parts of a primitive: as JSON text, or as JSON text escaped as the body
// of a JSON string.
type jsonForm struct {
	escaped                             bool
	quote, changes, data, name, version string
	appendString                        func([]byte, string) []byte
	append                              func([]byte, any) ([]byte, error)
}

// key is field f's JSON key and separator in this form.
func (js *jsonForm) key(f *fieldInfo) string {
	if js.escaped {
		return f.jsonKeyEscaped
	}
	return f.jsonKey
}

func newJSONForm(escaped bool, escape func(string) string, appendString func([]byte, string) []byte,
	appendAny func([]byte, any) ([]byte, error)) jsonForm {
	return jsonForm{
		escaped:      escaped,
		quote:        escape(`"`),
		changes:      escape(`"` + KeyChanges + `": [`),
		data:         escape(`"` + KeyData + `": {`),
		name:         escape(`}, "` + KeyName + `": `),
		version:      escape(`, "` + KeyNamespace + `": "` + Namespace + `", "` + KeyVersion + `": "`),
		appendString: appendString,
		append:       appendAny,
	}
}

// escapeBody is s escaped as the body of a JSON string.
func escapeBody(s string) string { return string(pyjson.AppendStringBody(nil, s)) }

var (
	plainJSON   = newJSONForm(false, func(s string) string { return s }, pyjson.AppendString, pyjson.Append)
	escapedJSON = newJSONForm(true, escapeBody, pyjson.AppendStringEscaped, pyjson.AppendEscaped)
)

// appendFieldJSON appends primitiveOf(f, v) as JSON, in form js.
func appendFieldJSON(dst []byte, f *fieldInfo, v reflect.Value, js *jsonForm) ([]byte, error) {
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
			return js.appendString(dst, v.String()), nil
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
		dst = append(dst, js.quote...)
		dst = appendISOTime(dst, v.Interface().(*time.Time).UTC())
		return append(dst, js.quote...), nil
	case kDictOfStrings:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return js.append(dst, v.Interface().(map[string]string))
	case kListOfStrings:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return js.append(dst, v.Interface().([]string))
	}
	// Lists of dicts (rare, free-form): the generic path.
	return js.append(dst, primitiveOf(f, v))
}

// appendISOTime appends t (UTC) as t.AppendFormat(dst, isoTimeLayout) does,
// without parsing the layout for every timestamp of a list.
func appendISOTime(dst []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, isoTimeLayout)
	}
	hour, minute, sec := t.Clock()
	two := func(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }
	dst = two(two(dst, year/100), year%100)
	dst = two(append(dst, '-'), int(month))
	dst = two(append(dst, '-'), day)
	dst = two(append(dst, 'T'), hour)
	dst = two(append(dst, ':'), minute)
	dst = two(append(dst, ':'), sec)
	return append(dst, 'Z')
}
