// Package pyurl decodes URL parts as Python's urllib.parse does, for the
// URLs of magnum.conf that oslo.messaging and SQLAlchemy read with it.
package pyurl

import "strings"

// Unquote is urllib.parse.unquote: each %XX is decoded, anything else (a
// lone '%', or one not followed by two hex digits) is kept as it is. It
// never fails, as Python's never does, so that every password the Python
// services accept is accepted here, and no error can quote one.
func Unquote(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
