package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// kind is the oslo.config type of an option, derived from the Go field type
// and the `multi`/`type` tags.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindFloat
	kindList
	kindMulti
	kindDict
)

// optDef is one option definition read from the struct tags.
type optDef struct {
	group      string // "DEFAULT" or the lower-case group name
	name       string
	goGroup    string // Config field name of the group
	goField    string
	groupIdx   int
	fieldIdx   int
	kind       kind
	syntax     string // "", hostaddress, url, listen
	unit       time.Duration
	def        string
	hasDefault bool
	sample     string
	hasSample  bool
	help       string
	min, max   *float64
	choices    []string
	secret     bool
	deprecated []optName // older spellings, normalised groups
	new        bool      // this conductor's own option (the `new` tag, of the option or its group)
}

type optName struct{ group, name string }

var (
	durationType = reflect.TypeFor[time.Duration]()
	stringsType  = reflect.TypeFor[[]string]()
	dictType     = reflect.TypeFor[map[string]string]()
)

// definitions returns every option of Config, in declaration order. It fails
// only on a malformed tag, which the tests catch.
func definitions() ([]*optDef, error) {
	ct := reflect.TypeFor[Config]()
	var defs []*optDef
	for gi := range ct.NumField() {
		gf := ct.Field(gi)
		group := gf.Tag.Get("group")
		if group == "" {
			return nil, fmt.Errorf("config: field %s has no group tag", gf.Name)
		}
		gt := gf.Type
		for fi := range gt.NumField() {
			f := gt.Field(fi)
			d, err := newOptDef(group, f)
			if err != nil {
				return nil, fmt.Errorf("config: %s.%s: %w", gf.Name, f.Name, err)
			}
			d.goGroup, d.goField, d.groupIdx, d.fieldIdx = gf.Name, f.Name, gi, fi
			d.new = d.new || gf.Tag.Get("new") == "true"
			defs = append(defs, d)
		}
	}
	return defs, nil
}

func newOptDef(group string, f reflect.StructField) (*optDef, error) {
	t := f.Tag
	d := &optDef{group: normalizeGroup(group), name: t.Get("ini"), help: t.Get("help"), syntax: t.Get("type")}
	if d.name == "" {
		return nil, fmt.Errorf("no ini tag")
	}
	d.def, d.hasDefault = t.Lookup("default")
	d.sample, d.hasSample = t.Lookup("sample")
	d.secret = t.Get("secret") == "true"
	d.new = t.Get("new") == "true"
	switch {
	case f.Type == durationType:
		d.kind = kindInt
		if d.syntax == "float" {
			d.kind = kindFloat
		}
		switch t.Get("unit") {
		case "s":
			d.unit = time.Second
		case "min":
			d.unit = time.Minute
		default:
			return nil, fmt.Errorf("time.Duration needs unit:\"s\" or unit:\"min\"")
		}
	case f.Type == stringsType:
		d.kind = kindList
		if t.Get("multi") == "true" {
			d.kind = kindMulti
		}
	case f.Type == dictType:
		d.kind = kindDict
	case f.Type.Kind() == reflect.String:
		d.kind = kindString
	case f.Type.Kind() == reflect.Bool:
		d.kind = kindBool
	case f.Type.Kind() == reflect.Int:
		d.kind = kindInt
	case f.Type.Kind() == reflect.Float64:
		d.kind = kindFloat
	default:
		return nil, fmt.Errorf("unsupported field type %s", f.Type)
	}
	for _, b := range []struct {
		tag string
		dst **float64
	}{{"min", &d.min}, {"max", &d.max}} {
		if s, ok := t.Lookup(b.tag); ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("bad %s tag %q", b.tag, s)
			}
			*b.dst = &v
		}
	}
	if s := t.Get("choices"); s != "" {
		d.choices = strings.Split(s, "|")
	}
	if s := t.Get("deprecated"); s != "" {
		for _, dn := range strings.Split(s, ",") {
			g, n, ok := strings.Cut(dn, ".")
			if !ok || g == "" || n == "" {
				return nil, fmt.Errorf("bad deprecated name %q (want group.name)", dn)
			}
			d.deprecated = append(d.deprecated, optName{normalizeGroup(g), n})
		}
	}
	return d, nil
}

// typeName is the type as oslo-config-generator prints it in the sample.
func (d *optDef) typeName() string {
	switch d.kind {
	case kindBool:
		return "boolean value"
	case kindInt:
		return "integer value"
	case kindFloat:
		return "floating point value"
	case kindList:
		return "list value"
	case kindMulti:
		return "multi valued"
	case kindDict:
		return "dict value"
	}
	switch d.syntax {
	case "hostaddress":
		return "host address value"
	}
	return "string value"
}
