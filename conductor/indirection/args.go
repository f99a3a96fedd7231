package indirection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openstack/magnum-conductor/api/exception"
)

// param is one parameter of a Python remotable, after context.
type param struct {
	name     string
	optional bool // has a Python default (None)
}

// signature is a remotable's Python signature, for binding args/kwargs and
// for Python's TypeError messages.
type signature struct {
	fn     string
	params []param
}

func sig(fn string, params ...param) signature { return signature{fn: fn, params: params} }

func req(name string) param { return param{name: name} }
func opt(name string) param { return param{name: name, optional: true} }

// bound holds the decoded arguments of one call, by parameter name; an
// absent or null optional argument is nil.
type bound map[string]any

// bind maps positional args and kwargs onto s as Python does for
// fn(cls, context, *args, **kwargs), with Python's TypeError messages.
func (s signature) bind(args []json.RawMessage, kwargs map[string]json.RawMessage) (bound, error) {
	// self/cls and context are the two implicit positional parameters.
	if len(args) > len(s.params) {
		return nil, typeError(fmt.Sprintf("%s() takes %s but %d were given",
			s.fn, positionalCount(len(s.params)+2, s.optionalCount()), len(args)+2))
	}
	out := bound{}
	for i, raw := range args {
		v, err := decodeValue(raw)
		if err != nil {
			return nil, err
		}
		out[s.params[i].name] = v
	}
	for k, raw := range kwargs {
		idx := -1
		for i, p := range s.params {
			if p.name == k {
				idx = i
			}
		}
		if idx < 0 {
			return nil, typeError(fmt.Sprintf("%s() got an unexpected keyword argument '%s'", s.fn, k))
		}
		if idx < len(args) {
			return nil, typeError(fmt.Sprintf("%s() got multiple values for argument '%s'", s.fn, k))
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	var missing []string
	for _, p := range s.params {
		if _, ok := out[p.name]; !ok && !p.optional {
			missing = append(missing, "'"+p.name+"'")
		}
	}
	if len(missing) > 0 {
		plural := "argument"
		if len(missing) > 1 {
			plural = "arguments"
		}
		return nil, typeError(fmt.Sprintf("%s() missing %d required positional %s: %s",
			s.fn, len(missing), plural, pyJoin(missing)))
	}
	return out, nil
}

func (s signature) optionalCount() int {
	n := 0
	for _, p := range s.params {
		if p.optional {
			n++
		}
	}
	return n
}

func positionalCount(total, optional int) string {
	if optional == 0 {
		if total == 1 {
			return "1 positional argument"
		}
		return fmt.Sprintf("%d positional arguments", total)
	}
	return fmt.Sprintf("from %d to %d positional arguments", total-optional, total)
}

func pyJoin(items []string) string {
	switch len(items) {
	case 1:
		return items[0]
	case 2:
		return items[0] + " and " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + ", and " + items[len(items)-1]
}

func typeError(msg string) *exception.Error { return exception.Builtin("TypeError", msg) }

// decodeValue decodes one JSON argument, keeping numbers exact.
func decodeValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, typeError("undecodable argument: " + err.Error())
	}
	return normalize(v), nil
}

// normalize turns json.Number into int64 or float64, recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// pyStr is Python's str() of an argument, for identities and messages.
func pyStr(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return exception.PyStr(x)
	}
	return exception.PyStr(v)
}

// isIntLike is oslo_utils.strutils.is_int_like: str(int(v)) == str(v).
func isIntLike(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != x {
			return 0, false
		}
		return n, true
	case float64:
		// str(int(1.0)) == "1" != "1.0"
		return 0, false
	}
	return 0, false
}

// isUUIDLike is oslo_utils.uuidutils.is_uuid_like.
func isUUIDLike(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	s = strings.ToLower(strings.Trim(strings.ReplaceAll(strings.ReplaceAll(
		strings.ReplaceAll(s, "urn:", ""), "uuid:", ""), "-", ""), "{}"))
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// str returns the argument as Python's str() would show it ("" for None).
func (b bound) str(name string) string {
	if b[name] == nil {
		return ""
	}
	return pyStr(b[name])
}

// optInt returns an integer argument, 0 when absent or null.
func (b bound) optInt(name string) (int, error) {
	switch x := b[name].(type) {
	case nil:
		return 0, nil
	case int64:
		return int(x), nil
	case float64:
		return int(x), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, exception.InvalidParameterValue(fmt.Sprintf("%s must be an integer, not %q", name, x))
		}
		return n, nil
	}
	return 0, exception.InvalidParameterValue(fmt.Sprintf("%s must be an integer", name))
}

// dict returns a dict argument (nil when absent or null).
func (b bound) dict(name string) (map[string]any, error) {
	switch x := b[name].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	return nil, exception.InvalidParameterValue(fmt.Sprintf("%s must be a dict", name))
}
