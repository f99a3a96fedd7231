// Package pyjson writes JSON laid out as Python's json.dumps writes it with
// default arguments (", " and ": " separators, ensure_ascii escaping), the
// layout oslo.messaging puts on the wire. Map keys are sorted (Go maps have
// no insertion order).
package pyjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Raw is a value already laid out as Python writes it: Append copies it
// verbatim. Encoders that write large values directly (object primitives)
// hand them over as Raw.
type Raw []byte

// MarshalJSON lets encoding/json embed a Raw as the JSON it holds.
func (r Raw) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

const hexDigits = "0123456789abcdef"

// asIs is true for the bytes Python's ensure_ascii writes as they are: ' '
// to '~' except '"' and '\\'.
var asIs = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string the way Python's json.dumps
// writes it (ensure_ascii: everything outside ' '..'~' escaped, as
// \uXXXX with surrogate pairs for non-BMP runes).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringBody(dst, s)
	return append(dst, '"')
}

// AppendStringBody appends the escaped content of s, without quotes.
//
// Its fast path works eight bytes at a time: each word is stored as it is,
// and the output advances past its bytes up to the first one to escape,
// which is written escaped when it is '"' or '\\'. That is the whole work
// for the JSON text carried inside oslo's envelope (ASCII, one '"' in
// about nine bytes). Any other byte to escape hands the rest to the byte
// by byte path. Unlike append, it may leave scratch bytes in dst's spare
// capacity past the slice it returns (up to a word): dst must not share its
// array with other live data past its length.
func AppendStringBody(dst []byte, s string) []byte {
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	n := len(dst)
	out := dst[:cap(dst)]
	i := 0
	for i+8 <= len(b) {
		if len(out)-n < 10 { // a word, or part of one and an escape
			out = slices.Grow(out[:n], len(b)-i+16)
			out = out[:cap(out)]
		}
		w := binary.LittleEndian.Uint64(b[i:])
		binary.LittleEndian.PutUint64(out[n:], w)
		m := escapedBytes(w)
		if m == 0 {
			n += 8
			i += 8
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		n += k
		i += k
		if c := b[i]; c == '"' || c == '\\' {
			out[n], out[n+1] = '\\', c
			n += 2
			i++
			continue
		}
		break
	}
	return appendBodyBytewise(out[:n], s[i:])
}

// AppendStringEscaped appends AppendString(s) escaped as the body of a
// JSON string (AppendStringBody of it): a string of JSON text that is
// itself carried in a JSON string, as oslo's envelope carries a message.
func AppendStringEscaped(dst []byte, s string) []byte {
	dst = append(dst, '\\', '"')
	if skipAsIs(unsafe.Slice(unsafe.StringData(s), len(s)), 0) == len(s) {
		dst = append(dst, s...) // nothing to escape at either level
	} else {
		once := AppendStringBody(make([]byte, 0, len(s)+16), s)
		dst = AppendStringBody(dst, unsafe.String(unsafe.SliceData(once), len(once)))
	}
	return append(dst, '\\', '"')
}

// AppendEscaped appends Append(v) escaped as the body of a JSON string
// (see AppendStringEscaped).
func AppendEscaped(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) { // the collections of object fields, written directly
	case map[string]string:
		return appendStringMap(dst, x, AppendStringEscaped)
	case []string:
		return appendStrings(dst, x, AppendStringEscaped), nil
	}
	plain, err := Append(nil, v)
	if err != nil {
		return dst, err
	}
	return AppendStringBody(dst, unsafe.String(unsafe.SliceData(plain), len(plain))), nil
}

// appendUnescaped appends the JSON text that body, escaped as the body of a
// JSON string, holds.
func appendUnescaped(dst, body []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(slices.Concat([]byte{'"'}, body, []byte{'"'}), &s); err != nil {
		return dst, fmt.Errorf("pyjson: escaped buffer: %w", err)
	}
	return append(dst, s...), nil
}

// appendBodyBytewise is AppendStringBody one byte (or rune) at a time.
func appendBodyBytewise(dst []byte, s string) []byte {
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	start := 0
	for i := 0; i < len(s); {
		i = skipAsIs(b, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		dst = append(dst, s[start:i]...)
		switch {
		case c == '"':
			dst = append(dst, '\\', '"')
			i++
		case c == '\\':
			dst = append(dst, '\\', '\\')
			i++
		case c == '\n':
			dst = append(dst, '\\', 'n')
			i++
		case c == '\r':
			dst = append(dst, '\\', 'r')
			i++
		case c == '\t':
			dst = append(dst, '\\', 't')
			i++
		case c == '\b':
			dst = append(dst, '\\', 'b')
			i++
		case c == '\f':
			dst = append(dst, '\\', 'f')
			i++
		case c < 0x20 || c == 0x7f:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				r = utf8.RuneError
			}
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				dst = appendU4(appendU4(dst, r1), r2)
			} else {
				dst = appendU4(dst, r)
			}
			i += size
		}
		start = i
	}
	return append(dst, s[start:]...)
}

// skipAsIs returns the index of the first byte of b at or after i that is
// not written as it is (len(b) if none), eight bytes at a time.
func skipAsIs(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := escapedBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && asIs[b[i]] {
		i++
	}
	return i
}

// escapedBytes flags (with its top bit) each byte of w, loaded little
// endian, that asIs refuses: below ' ', '"', '\\', 0x7f and above. Only the
// lowest flag is exact (a borrow can flag the bytes above a flagged one),
// which is the one skipAsIs reads.
func escapedBytes(w uint64) uint64 {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	below := (w - ones*0x20) & ^w
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	del := w ^ (ones * 0x7f)
	return (below | (quote-ones)&^quote | (backslash-ones)&^backslash | (del-ones)&^del | w) & tops
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// Append appends v laid out as Python's json.dumps would (", " and
// ": " separators, ensure_ascii). Map keys are sorted (Go maps have no
// insertion order). Types without a fast path go through encoding/json.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, x), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendInt(dst, int64(x), 10), nil
		}
	case []string:
		return appendStrings(dst, x, AppendString), nil
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = Append(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendSorted(dst, x, AppendString, Append)
	case map[string]string:
		return appendStringMap(dst, x, AppendString)
	case Raw:
		if len(x) == 0 {
			return append(dst, "null"...), nil
		}
		return append(dst, x...), nil
	case *Buffer:
		if x == nil || len(x.B) == 0 {
			return append(dst, "null"...), nil
		}
		if x.Escaped {
			return appendUnescaped(dst, x.B)
		}
		return append(dst, x.B...), nil
	case json.RawMessage:
		if len(x) == 0 {
			return append(dst, "null"...), nil
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, x); err != nil {
			return dst, err
		}
		return append(dst, Layout(buf.Bytes())...), nil
	}
	b, err := Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Marshal marshals v as Python's json.dumps with default
// arguments lays it out: ", " and ": " separators, non-ASCII escaped as
// \uXXXX, HTML characters not escaped.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return Layout(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// Layout rewrites compact JSON with Python's default separators and
// ensure_ascii escaping.
func Layout(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/8)
	inStr, esc := false, false
	for i := 0; i < len(compact); {
		c := compact[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			case c == 0x7f:
				out = append(out, `\u007f`...)
				i++
				continue
			case c >= 0x80:
				r, size := utf8.DecodeRune(compact[i:])
				if r == utf8.RuneError && size <= 1 {
					out = append(out, `\ufffd`...)
					i++
					continue
				}
				if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
					out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
				} else {
					out = fmt.Appendf(out, `\u%04x`, r)
				}
				i += size
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		switch c {
		case '"':
			inStr = true
			out = append(out, c)
		case ',':
			out = append(out, ',', ' ')
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
		i++
	}
	return out
}

// appendStrings appends x as a JSON list (null when nil), each string
// written by appendString.
func appendStrings(dst []byte, x []string, appendString func([]byte, string) []byte) []byte {
	if x == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range x {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendStringMap appends m as a JSON object with its keys sorted (null
// when nil), each key and value written by appendString.
func appendStringMap(dst []byte, m map[string]string, appendString func([]byte, string) []byte) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	return appendSorted(dst, m, appendString, func(dst []byte, s string) ([]byte, error) { return appendString(dst, s), nil })
}

// appendSorted appends m as a JSON object with its keys sorted.
func appendSorted[V any](dst []byte, m map[string]V, appendKey func([]byte, string) []byte,
	appendValue func([]byte, V) ([]byte, error)) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(appendKey(dst, k), ": "...)
		var err error
		if dst, err = appendValue(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
