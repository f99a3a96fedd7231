package db

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/openstack/magnum-conductor/api/pyjson"
)

// Magnum's JSONEncodedDict / JSONEncodedList columns are TEXT holding
// json.dumps output; binding None writes "{}" or "[]". These types write the
// same text Python's json.dumps writes (", " and ": " separators,
// ensure_ascii), so that equality filters on JSON columns match rows written
// by either side.

// jsonDict is a JSON object of strings (labels, health_status_reason,
// properties, node_labels).
type jsonDict map[string]string

// Value implements driver.Valuer.
func (d jsonDict) Value() (driver.Value, error) {
	if d == nil {
		return "{}", nil
	}
	return pyJSON(map[string]string(d)), nil
}

// Scan implements sql.Scanner. NULL reads as nil; values that are not
// strings (old rows written by hand) are turned into their JSON text.
func (d *jsonDict) Scan(src any) error {
	b, isNull, err := scanText(src)
	if err != nil || isNull {
		*d = nil
		return err
	}
	if m, ok := flatStringObject(b); ok { // what almost every row holds
		*d = m
		return nil
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("db: JSON dict column: %w", err)
	}
	out := make(jsonDict, len(raw))
	for k, v := range raw {
		out[k] = pyStr(v)
	}
	*d = out
	return nil
}

// jsonList is a JSON list of strings (node_addresses, member_ids).
type jsonList []string

// Value implements driver.Valuer.
func (l jsonList) Value() (driver.Value, error) {
	if l == nil {
		return "[]", nil
	}
	return pyJSON([]string(l)), nil
}

// Scan implements sql.Scanner.
func (l *jsonList) Scan(src any) error {
	b, isNull, err := scanText(src)
	if err != nil || isNull {
		*l = nil
		return err
	}
	var raw []any
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("db: JSON list column: %w", err)
	}
	out := make(jsonList, len(raw))
	for i, v := range raw {
		out[i] = pyStr(v)
	}
	*l = out
	return nil
}

// jsonDicts is a JSON list of objects (node_taints).
type jsonDicts []map[string]any

// Value implements driver.Valuer.
func (l jsonDicts) Value() (driver.Value, error) {
	if l == nil {
		return "[]", nil
	}
	return pyJSON([]map[string]any(l)), nil
}

// Scan implements sql.Scanner.
func (l *jsonDicts) Scan(src any) error {
	b, isNull, err := scanText(src)
	if err != nil || isNull {
		*l = nil
		return err
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("db: JSON list-of-dicts column: %w", err)
	}
	if out == nil {
		out = []map[string]any{}
	}
	*l = out
	return nil
}

func scanText(src any) ([]byte, bool, error) {
	switch v := src.(type) {
	case nil:
		return nil, true, nil
	case []byte:
		return v, false, nil
	case string:
		return []byte(v), false, nil
	default:
		return nil, false, fmt.Errorf("db: JSON column holds %T, want text", src)
	}
}

// flatStringObject reads a JSON object whose keys and values are all plain
// ASCII strings without escapes, as json.dumps writes labels; ok is false
// for anything else, which encoding/json then decodes.
func flatStringObject(b []byte) (jsonDict, bool) {
	ws := func(i int) int {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		return i
	}
	str := func(i int) (string, int, bool) {
		if i >= len(b) || b[i] != '"' {
			return "", i, false
		}
		for j := i + 1; j < len(b); j++ {
			switch c := b[j]; {
			case c == '"':
				return string(b[i+1 : j]), j + 1, true
			case c == '\\' || c < 0x20 || c >= 0x80:
				return "", j, false
			}
		}
		return "", len(b), false
	}
	i := ws(0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	m := jsonDict{}
	i = ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return m, ws(i+1) == len(b)
	}
	for {
		k, next, ok := str(i)
		if !ok {
			return nil, false
		}
		if i = ws(next); i >= len(b) || b[i] != ':' {
			return nil, false
		}
		v, next, ok := str(ws(i + 1))
		if !ok {
			return nil, false
		}
		m[k] = v
		if i = ws(next); i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = ws(i + 1)
		case '}':
			return m, ws(i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// pyStr is Python's str() of a decoded JSON scalar, as DictOfStrings
// coerces values.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return pyJSON(v)
	}
}

// pyJSON encodes v as Python's json.dumps does by default (pyjson.Append:
// sorted keys, as Go maps have no insertion order). A value JSON cannot
// hold is written as the string of its str().
func pyJSON(v any) string {
	b, err := pyjson.Append(nil, v)
	if err != nil {
		return string(pyjson.AppendString(nil, fmt.Sprint(v)))
	}
	return string(b)
}
