package objects

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/internal/pyrepr"
)

// isoTimeLayout is oslo's isotime: seconds precision, "Z" for UTC.
const isoTimeLayout = "2006-01-02T15:04:05Z"

// primitiveOf returns the wire primitive of field f holding v (not for
// object fields). Maps and slices are copied so that a snapshot does not
// alias the live value.
func primitiveOf(f *fieldInfo, v reflect.Value) any {
	switch f.kind {
	case kString, kInt:
		if f.ptr {
			if v.IsNil() {
				return nil
			}
			return v.Elem().Interface()
		}
		return v.Interface()
	case kBool:
		return v.Bool()
	case kTime:
		if v.IsNil() {
			return nil
		}
		return v.Interface().(*time.Time).UTC().Format(isoTimeLayout)
	case kEnum:
		if v.String() == "" {
			return nil
		}
		return v.String()
	case kDictOfStrings:
		if v.IsNil() {
			return nil
		}
		src := v.Interface().(map[string]string)
		out := make(map[string]string, len(src))
		for k, s := range src {
			out[k] = s
		}
		return out
	case kListOfStrings:
		if v.IsNil() {
			return nil
		}
		return append([]string{}, v.Interface().([]string)...)
	case kListOfDicts:
		if v.IsNil() {
			return nil
		}
		src := v.Interface().([]map[string]any)
		out := make([]map[string]any, len(src))
		for i, d := range src {
			if d != nil {
				out[i], _ = deepCopy(d).(map[string]any)
			}
		}
		return out
	}
	return nil
}

// deepCopy copies JSON-like values.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []string:
		return append([]string{}, x...)
	case json.Number:
		return normalizeNumber(x)
	}
	return v
}

func normalizeNumber(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return n.String()
}

func valueError(format string, args ...any) *exception.Error {
	return exception.Builtin("ValueError", fmt.Sprintf(format, args...))
}

// pyTypeName names the Python type of a JSON value, for error messages.
func pyTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case string:
		return "str"
	case bool:
		return "bool"
	case float64, float32:
		return "float"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "float"
		}
		return "int"
	case int, int64, int32:
		return "int"
	case map[string]any, map[string]string:
		return "dict"
	case []any, []string:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// pyStr coerces v as oslo's String field does: str() of int, float, str
// (and bool, an int subclass); anything else is a ValueError.
func pyStr(attr string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			f, err := x.Float64()
			if err != nil {
				return "", valueError("A string is required in field %s, not a float", attr)
			}
			return pyrepr.Float(f), nil
		}
		if i, err := x.Int64(); err == nil {
			return strconv.FormatInt(i, 10), nil
		}
		return string(x), nil
	case float64:
		return pyrepr.Float(x), nil
	case float32:
		return pyrepr.Float(float64(x)), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05+00:00"), nil
	}
	return "", valueError("A string is required in field %s, not a %s", attr, pyTypeName(v))
}

// pyInt coerces v as oslo's Integer field does: int(v).
func pyInt(attr string, v any) (int64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, valueError("cannot convert float %s to integer", pyrepr.Float(x))
		}
		return int64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return 0, valueError("invalid literal for int() with base 10: '%s'", string(x))
		}
		return int64(f), nil
	case string:
		s := strings.TrimSpace(x)
		s = strings.ReplaceAll(s, "_", "")
		if i, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64); err == nil && s != "" {
			return i, nil
		}
		return 0, valueError("invalid literal for int() with base 10: '%s'", x)
	}
	return 0, exception.Builtin("TypeError", fmt.Sprintf(
		"int() argument must be a string, a bytes-like object or a real number, not '%s'", pyTypeName(v)))
}

// pyBool coerces v as oslo's Boolean field does: bool(v).
func pyBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case float64:
		return x != 0
	case int:
		return x != 0
	case int64:
		return x != 0
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	case nil:
		return false
	}
	return true
}

// timeLayouts are the ISO 8601 forms parse_isotime accepts.
func timeLayouts() []string {
	return []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999Z0700",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04Z07:00",
		"2006-01-02",
	}
}

// parseIsoTime parses what oslo's timeutils.parse_isotime accepts (ISO 8601
// with or without fraction and zone); a time without zone is UTC.
func parseIsoTime(attr, s string) (time.Time, error) {
	for _, l := range timeLayouts() {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, valueError("Unable to parse date string '%s'", s)
}

// coerceTime coerces v as oslo's DateTime(tzinfo_aware=True) field does.
func coerceTime(attr string, v any) (time.Time, error) {
	switch x := v.(type) {
	case string:
		return parseIsoTime(attr, x)
	case time.Time:
		return x.UTC(), nil
	case *time.Time:
		if x != nil {
			return x.UTC(), nil
		}
	}
	return time.Time{}, valueError("A datetime.datetime is required in field %s, not a %s", attr, pyTypeName(v))
}

// setField coerces the primitive raw and stores it in field f of o, as
// setattr on an OVO field does (with from_primitive first).
func setField(o Object, ci *classInfo, f *fieldInfo, raw any) error {
	v := fieldValue(o, f)
	if raw == nil {
		switch {
		case f.kind == kObject:
			return valueError("Field `%s' cannot be None", f.name)
		case f.nullable:
			v.Set(reflect.Zero(v.Type()))
			return nil
		case f.hasDef:
			v.Set(reflect.ValueOf(f.def).Convert(v.Type()))
			return nil
		default:
			return valueError("Field `%s' cannot be None", f.name)
		}
	}
	switch f.kind {
	case kString:
		s, err := pyStr(f.name, raw)
		if err != nil {
			return err
		}
		if f.ptr {
			v.Set(reflect.ValueOf(&s))
		} else {
			v.SetString(s)
		}
	case kEnum:
		s, ok := raw.(string)
		if !ok || !ci.enumSet[f.enum][s] {
			return valueError("Field value %s is invalid", exception.PyStr(raw))
		}
		v.SetString(s)
	case kInt:
		n, err := pyInt(f.name, raw)
		if err != nil {
			return err
		}
		if f.ptr {
			v.Set(reflect.ValueOf(&n))
		} else {
			v.SetInt(n)
		}
	case kBool:
		v.SetBool(pyBool(raw))
	case kTime:
		t, err := coerceTime(f.name, raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(&t))
	case kDictOfStrings:
		d, err := coerceDictOfStrings(f.name, raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(d))
	case kListOfStrings:
		l, err := coerceListOfStrings(f.name, raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(l))
	case kListOfDicts:
		l, err := coerceListOfDicts(f.name, raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(l))
	case kObject:
		child, err := Decode(raw)
		if err != nil {
			return err
		}
		if child.ObjName() != f.objName {
			return valueError("An object of type %s is required in field %s, not a %s",
				f.objName, f.name, child.ObjName())
		}
		v.Set(reflect.ValueOf(child))
	}
	return nil
}

func coerceDictOfStrings(attr string, raw any) (map[string]string, error) {
	switch x := raw.(type) {
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out, nil
	case map[string]any:
		out := make(map[string]string, len(x))
		for k, e := range x {
			if e == nil {
				return nil, valueError("Field `%s[\"%s\"]' cannot be None", attr, k)
			}
			s, err := pyStr(fmt.Sprintf("%s[\"%s\"]", attr, k), e)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	}
	return nil, valueError("A dict is required in field %s, not a %s", attr, pyTypeName(raw))
}

func coerceListOfStrings(attr string, raw any) ([]string, error) {
	switch x := raw.(type) {
	case []string:
		return append([]string{}, x...), nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			if e == nil {
				return nil, valueError("Field `%s[%d]' cannot be None", attr, i)
			}
			s, err := pyStr(fmt.Sprintf("%s[%d]", attr, i), e)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, valueError("A list is required in field %s, not a %s", attr, pyTypeName(raw))
}

func coerceListOfDicts(attr string, raw any) ([]map[string]any, error) {
	var items []any
	switch x := raw.(type) {
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, d := range x {
			out[i], _ = deepCopy(d).(map[string]any)
		}
		return out, nil
	case []any:
		items = x
	default:
		return nil, valueError("A list is required in field %s, not a %s", attr, pyTypeName(raw))
	}
	out := make([]map[string]any, len(items))
	for i, e := range items {
		d, ok := e.(map[string]any)
		if !ok {
			return nil, valueError("A dict is required in field %s[%d], not a %s", attr, i, pyTypeName(e))
		}
		out[i] = deepCopy(d).(map[string]any)
	}
	return out, nil
}

// validate checks the Go value of field f as setattr would before it is
// written (enum values); other Go types cannot hold an invalid value.
func validate(ci *classInfo, f *fieldInfo, v reflect.Value) error {
	if f.kind == kEnum && v.String() != "" && !ci.enumSet[f.enum][v.String()] {
		return valueError("Field value %s is invalid", v.String())
	}
	return nil
}
