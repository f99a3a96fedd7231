package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openstack/magnum-conductor/internal/pyrepr"
)

// dict is an oslo DictOpt value: keys in the order they were written (so
// that interpolating it prints what Python prints).
type dict struct {
	keys []string
	m    map[string]string
}

// convert turns one (already interpolated) string into the option's oslo
// value: string, bool, int64, float64, []string, dict, or nil for None.
// The error text follows oslo.config's messages.
func (d *optDef) convert(s string) (any, error) {
	switch d.kind {
	case kindBool:
		switch strings.ToLower(s) {
		case "true", "1", "on", "yes":
			return true, nil
		case "false", "0", "off", "no":
			return false, nil
		}
		return nil, fmt.Errorf("Unexpected boolean value %s", pyRepr(s))
	case kindInt:
		t := strings.TrimSpace(s)
		if t == "" {
			return nil, nil
		}
		n, err := parsePyInt(t)
		if errors.Is(err, strconv.ErrRange) {
			return nil, errors.New("integer out of the 64-bit range")
		}
		if err != nil {
			return nil, fmt.Errorf("invalid literal for int() with base 10: %s", pyRepr(s))
		}
		if err := d.checkNumber(float64(n), strconv.FormatInt(n, 10)); err != nil {
			return nil, err
		}
		if d.unit != 0 && (n > math.MaxInt64/int64(d.unit) || n < math.MinInt64/int64(d.unit)) {
			return nil, errors.New("too large for a duration")
		}
		return n, nil
	case kindFloat:
		t := strings.TrimSpace(s)
		if t == "" {
			return nil, nil
		}
		f, err := parsePyFloat(t)
		if err != nil {
			return nil, fmt.Errorf("could not convert string to float: %s", pyRepr(s))
		}
		if err := d.checkNumber(f, pyrepr.Float(f)); err != nil {
			return nil, err
		}
		if d.unit != 0 && (math.IsNaN(f) || math.Abs(f*float64(d.unit)) >= math.MaxInt64) {
			return nil, errors.New("not a usable duration")
		}
		return f, nil
	case kindList:
		return parseList(s), nil
	case kindDict:
		return parseDict(s)
	case kindMulti:
		return s, nil // one element; the caller collects them
	}
	if err := d.checkString(s); err != nil {
		return nil, err
	}
	switch d.syntax {
	case "hostaddress":
		if err := checkHostAddress(s); err != nil {
			return nil, err
		}
	case "url":
		if s != "" {
			if err := checkURL(s); err != nil {
				return nil, err
			}
		}
	case "listen":
		return normalizeListen(s)
	}
	return s, nil
}

func (d *optDef) checkString(s string) error {
	if d.choices == nil || slices.Contains(d.choices, s) {
		return nil
	}
	return fmt.Errorf("Valid values are [%s], but found %s", strings.Join(d.choices, ", "), pyRepr(s))
}

func (d *optDef) checkNumber(v float64, text string) error {
	if d.choices != nil {
		if !slices.Contains(d.choices, text) {
			return fmt.Errorf("Valid values are [%s], but found %s", strings.Join(d.choices, ", "), text)
		}
		return nil
	}
	if d.min != nil && v < *d.min {
		return fmt.Errorf("Should be greater than or equal to %s", strconv.FormatFloat(*d.min, 'g', -1, 64))
	}
	if d.max != nil && v > *d.max {
		return fmt.Errorf("Should be less than or equal to %s", strconv.FormatFloat(*d.max, 'g', -1, 64))
	}
	return nil
}

// parsePyInt accepts what Python's int() accepts for base 10: an optional
// sign, digits, and single underscores between digits.
func parsePyInt(s string) (int64, error) {
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" || body[0] == '_' || body[len(body)-1] == '_' || strings.Contains(body, "__") {
		return 0, errors.New("bad integer")
	}
	for _, c := range body {
		if (c < '0' || c > '9') && c != '_' {
			return 0, errors.New("bad integer")
		}
	}
	return strconv.ParseInt(s[:len(s)-len(body)]+strings.ReplaceAll(body, "_", ""), 10, 64)
}

var pyFloatRe = regexp.MustCompile(`^[+-]?((\d(_?\d)*)?\.?\d(_?\d)*([eE][+-]?\d(_?\d)*)?|\d(_?\d)*\.|inf|infinity|nan)$`)

// parsePyFloat accepts what Python's float() accepts (decimal, exponent,
// inf, infinity, nan; no hexadecimal).
func parsePyFloat(s string) (float64, error) {
	if !pyFloatRe.MatchString(strings.ToLower(s)) {
		return 0, errors.New("bad float")
	}
	return strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
}

// parseList is oslo's List(String()): trim, drop trailing commas, split on
// commas, trim each item.
func parseList(s string) []string {
	s = strings.TrimRight(strings.TrimSpace(s), ",")
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// parseDict is oslo's Dict(String()): "k:v,k2:v2". A part without a colon
// is joined with the next part, as oslo retries.
func parseDict(s string) (any, error) {
	out := dict{m: map[string]string{}}
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	pairs := strings.Split(s, ",")
	for len(pairs) > 0 {
		pair := pairs[0]
		pairs = pairs[1:]
		for !strings.Contains(pair, ":") {
			if len(pairs) == 0 {
				return nil, errors.New(`Value should be NAME:VALUE pairs separated by ","`)
			}
			pair += "," + pairs[0]
			pairs = pairs[1:]
		}
		k, v, _ := strings.Cut(pair, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			return nil, errors.New("Key name should not be empty")
		}
		if _, dup := out.m[k]; dup {
			return nil, fmt.Errorf("Duplicate key %s", k)
		}
		out.keys = append(out.keys, k)
		out.m[k] = v
	}
	return out, nil
}

var hostLabelRe = regexp.MustCompile(`(?i)^[a-z0-9-]{1,63}$`)

// checkHostAddress is oslo's HostAddress: an IPv4/IPv6 address or an RFC 1123
// host name whose last label is not all digits.
func checkHostAddress(s string) error {
	bad := fmt.Errorf("%s is not a valid host address", s)
	if s == "" {
		return bad
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return nil
	}
	if len(s) > 253 {
		return bad
	}
	h := strings.TrimSuffix(s, ".")
	labels := strings.Split(h, ".")
	if !strings.ContainsFunc(labels[len(labels)-1], func(r rune) bool {
		return r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
	}) {
		return bad
	}
	for _, l := range labels {
		if !hostLabelRe.MatchString(l) || l[0] == '-' || l[len(l)-1] == '-' {
			return bad
		}
	}
	return nil
}

var schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*://`)

// checkURL accepts the URLs oslo.messaging's TransportURL and SQLAlchemy's
// make_url accept: scheme://[user[:pass]@]host[:port][,...]/path?query,
// with several comma-separated hosts. Ports must be numbers. The errors
// never quote the URL, which may hold a password.
func checkURL(s string) error {
	m := schemeRe.FindString(s)
	if m == "" {
		return errors.New("not a URL: no scheme:// prefix")
	}
	rest := s[len(m):]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	for _, host := range strings.Split(rest, ",") {
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		port := ""
		switch {
		case strings.HasPrefix(host, "["):
			end := strings.IndexByte(host, ']')
			if end < 0 {
				return errors.New("not a URL: unclosed [ in a host")
			}
			after := host[end+1:]
			if after != "" {
				if after[0] != ':' {
					return errors.New("not a URL: junk after ] in a host")
				}
				port = after[1:]
			}
		case strings.Contains(host, ":"):
			port = host[strings.LastIndexByte(host, ':')+1:]
		}
		if port != "" {
			n, err := strconv.Atoi(port)
			if err != nil || n < 0 || n > 65535 {
				return errors.New("not a URL: a port is not a number from 0 to 65535")
			}
		}
	}
	return nil
}

// normalizeListen turns "", "9465", ":9465" and "host:9465" into a
// listen address; an address without a host binds to loopback only.
func normalizeListen(s string) (any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if _, err := strconv.Atoi(s); err == nil {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("want host:port, :port or a port number: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// pyStr is Python's str() of an oslo value, as string interpolation
// inserts it.
func pyStr(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return pyrepr.Float(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = pyRepr(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case dict:
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(v.m[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// pyRepr is Python's repr() of a str (close enough for messages).
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\t", `\t`, "\r", `\r`, q, `\`+q)
	return q + r.Replace(s) + q
}
