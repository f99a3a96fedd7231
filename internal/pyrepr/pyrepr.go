// Package pyrepr renders values as Python's repr() does, where the text
// must match what the Python services write: a float coerced to a string
// field of a versioned object, an option value in oslo.config's messages.
package pyrepr

import (
	"math"
	"strconv"
	"strings"
)

// Float is repr() of a Python float: the shortest text that reads back as
// f, in positional notation for exponents from -4 to 15 (with ".0" when it
// has no fraction) and in exponent notation ("1e+16", "1e-05") otherwise;
// "inf", "-inf" and "nan" for the special values.
func Float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
