package oslo

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// fastJSONValue decodes the common context values (null, booleans, strings
// without escapes) without encoding/json; anything else is unmarshaled.
func fastJSONValue(raw json.RawMessage) (any, bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, false
	case string(raw) == "null":
		return nil, true
	case string(raw) == "true":
		return true, true
	case string(raw) == "false":
		return false, true
	case raw[0] == '"' && len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 &&
		bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw):
		return string(raw[1 : len(raw)-1]), true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return v, true
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
		c := in[i]
		switch {
		case c == '"' || c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			continue
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
// decoding the values. b must already be valid JSON (json.Valid); ok is
// false when it is not an object. Values alias b.
func splitObject(b []byte) (map[string]json.RawMessage, bool) {
	m := make(map[string]json.RawMessage, 16)
	if !forEachMember(b, func(k string, v json.RawMessage) { m[k] = v }) {
		return nil, false
	}
	return m, true
}

// forEachMember calls fn with each member of the JSON object b (already
// known to be valid JSON) in order; a later duplicate key is passed again,
// so the last one wins as with encoding/json. It returns false when b is
// not an object.
func forEachMember(b []byte, fn func(key string, value json.RawMessage)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end := scanString(b, i)
		rawKey := b[i:end]
		var key string
		if bytes.IndexByte(rawKey, '\\') < 0 && utf8.Valid(rawKey) {
			key = string(rawKey[1 : len(rawKey)-1])
		} else if err := json.Unmarshal(rawKey, &key); err != nil {
			return false
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		vend := scanValue(b, i)
		fn(key, json.RawMessage(b[i:vend]))
		i = skipWS(b, vend)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"'.
func scanString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// scanValue returns the index after the JSON value starting at b[i].
func scanValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = scanString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}
