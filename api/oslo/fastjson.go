package oslo

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// fastJSONValue decodes a context value as encoding/json decodes it into
// an any (objects as map[string]any, arrays as []any, numbers as
// float64); ok is false when encoding/json would fail. Strings without
// escapes and plain ASCII, and everything built of them, are decoded here;
// anything else goes through encoding/json.
func fastJSONValue(raw json.RawMessage) (any, bool) {
	for len(raw) > 0 && isWS(raw[0]) {
		raw = raw[1:]
	}
	for len(raw) > 0 && isWS(raw[len(raw)-1]) {
		raw = raw[:len(raw)-1]
	}
	if len(raw) == 0 {
		return nil, false
	}
	if end, ok := validValue(raw, 0, 0); !ok || end != len(raw) {
		return nil, false
	}
	return validJSONValue(raw)
}

// validJSONValue is fastJSONValue for a value known to be valid JSON
// without surrounding whitespace (a member forEachMember or
// encoding/json split off).
func validJSONValue(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if v, ok := decodeValid(raw, 0); ok {
		return v.v, true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return v, true
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// decoded is a value decodeValid read and the index after it.
type decoded struct {
	v   any
	end int
}

// decodeValid decodes the valid JSON value at b[i]; ok is false for what
// it leaves to encoding/json (escaped or non-ASCII strings, numbers
// outside float64).
func decodeValid(b []byte, i int) (decoded, bool) {
	switch c := b[i]; {
	case c == '"':
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' || b[j] >= 0x80 {
				return decoded{}, false
			}
			j++
		}
		return decoded{string(b[i+1 : j]), j + 1}, true
	case c == '{':
		m := map[string]any{}
		i = skipWS(b, i+1)
		if b[i] == '}' {
			return decoded{m, i + 1}, true
		}
		for {
			k, ok := decodeValid(b, i)
			if !ok {
				return decoded{}, false
			}
			v, ok := decodeValid(b, skipWS(b, skipWS(b, k.end)+1))
			if !ok {
				return decoded{}, false
			}
			m[k.v.(string)] = v.v
			i = skipWS(b, v.end)
			if b[i] == '}' {
				return decoded{m, i + 1}, true
			}
			i = skipWS(b, i+1)
		}
	case c == '[':
		a := []any{}
		i = skipWS(b, i+1)
		if b[i] == ']' {
			return decoded{a, i + 1}, true
		}
		for {
			v, ok := decodeValid(b, i)
			if !ok {
				return decoded{}, false
			}
			a = append(a, v.v)
			i = skipWS(b, v.end)
			if b[i] == ']' {
				return decoded{a, i + 1}, true
			}
			i = skipWS(b, i+1)
		}
	case c == 't':
		return decoded{true, i + 4}, true
	case c == 'f':
		return decoded{false, i + 5}, true
	case c == 'n':
		return decoded{nil, i + 4}, true
	default:
		end, _ := validNumber(b, i)
		f, err := strconv.ParseFloat(string(b[i:end]), 64)
		if err != nil {
			return decoded{}, false
		}
		return decoded{f, end}, true
	}
}

// envelopePrefix is how both oslo.messaging and this package start an
// enveloped body.
const envelopePrefix = `{"oslo.version": "2.0", "oslo.message": "`

// fastEnvelopeMessage returns the inner message of a body in the exact
// layout oslo.messaging writes, unescaped without encoding/json; ok is false
// for anything else (the caller then takes the generic path).
func fastEnvelopeMessage(body []byte) ([]byte, bool) {
	if len(body) < len(envelopePrefix)+2 || string(body[:len(envelopePrefix)]) != envelopePrefix ||
		body[len(body)-1] != '}' || body[len(body)-2] != '"' {
		return nil, false
	}
	in := body[len(envelopePrefix) : len(body)-2]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		start := i
		for i < len(in) && plainStringByte[in[i]] {
			i++
		}
		out = append(out, in[start:i]...)
		if i >= len(in) {
			break
		}
		if in[i] != '\\' { // '"' or a control character
			return nil, false
		}
		i++
		if i >= len(in) {
			return nil, false
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, ok := hex4(in, i+1)
			if !ok {
				return nil, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					r2, ok = hex4(in, i+3)
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return out, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// splitObject splits a JSON object into its top-level members without
// decoding the values; ok is false when b is not exactly one valid JSON
// object (surrounding whitespace aside). Values alias b.
func splitObject(b []byte) (map[string]json.RawMessage, bool) {
	m := make(map[string]json.RawMessage, 16)
	if !forEachMember(b, func(k []byte, v json.RawMessage) { m[string(k)] = v }) {
		return nil, false
	}
	return m, true
}

// forEachMember calls fn with each member of the JSON object b in order (the
// decoded key, which may alias b and must not be kept); a later duplicate
// key is passed again, so the last one wins as with encoding/json. It
// validates b as it goes, accepting exactly what json.Valid accepts, and
// returns false when b is not one valid JSON object: fn may then have seen
// some members, which the caller discards.
func forEachMember(b []byte, fn func(key []byte, value json.RawMessage)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end, ok := validObject(b, i, 0, func(rawKey []byte, value json.RawMessage) bool {
		key := rawKey[1 : len(rawKey)-1]
		if bytes.IndexByte(rawKey, '\\') >= 0 || !utf8.Valid(rawKey) {
			var s string
			if err := json.Unmarshal(rawKey, &s); err != nil {
				return false
			}
			key = []byte(s)
		}
		fn(key, value)
		return true
	})
	return ok && skipWS(b, end) == len(b)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// maxNestingDepth is encoding/json's limit on nested arrays and objects.
const maxNestingDepth = 10000

// plainStringByte is true for the bytes a JSON string holds as they are:
// everything but control characters, '"' and '\\' (encoding/json does not
// check UTF-8 either).
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString returns the index after the JSON string starting at
// b[i] == '"', and whether it is valid JSON.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(b, i+1); !ok {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
	return i, false
}

// validValue returns the index after the JSON value starting at b[i] and
// whether it is valid JSON; depth is the nesting depth of b[i]'s container.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{':
		return validObject(b, i, depth, nil)
	case c == '[':
		if depth >= maxNestingDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for more, ok := true, true; more; {
			if i, ok = validValue(b, i, depth+1); !ok {
				return i, false
			}
			if i, more, ok = nextElement(b, i, ']'); !ok {
				return i, false
			}
		}
		return i, true
	case c == '-' || (c >= '0' && c <= '9'):
		return validNumber(b, i)
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	}
	return i, false
}

// validObject validates the object at b[i] == '{' (its container at
// depth) and returns the index after it; fn, when not nil, is called with
// each member's raw key (quotes included) and value, and stops the scan as
// invalid by returning false.
func validObject(b []byte, i, depth int, fn func(rawKey []byte, value json.RawMessage) bool) (int, bool) {
	if depth >= maxNestingDepth {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for more := true; more; {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		keyEnd, ok := validString(b, i)
		if !ok {
			return keyEnd, false
		}
		v := skipWS(b, keyEnd)
		if v >= len(b) || b[v] != ':' {
			return v, false
		}
		v = skipWS(b, v+1)
		vend, ok := validValue(b, v, depth+1)
		if !ok || (fn != nil && !fn(b[i:keyEnd], json.RawMessage(b[v:vend]))) {
			return vend, false
		}
		if i, more, ok = nextElement(b, vend, '}'); !ok {
			return i, false
		}
	}
	return i, true
}

// nextElement reads what follows an element of an array or object that
// ends at b[i]: more is true after a ',' (i is then the next element), and
// false at the closing bracket (i is then after it).
func nextElement(b []byte, i int, closing byte) (next int, more, ok bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), true, true
	case closing:
		return i + 1, false, true
	}
	return i, false, false
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// validNumber checks JSON's number grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}
