package objects

import (
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
)

// Object is implemented by every versioned object type of this package
// (*Cluster, *ClusterTemplate, *NodeGroup, ...). The unexported method keeps
// the set closed: the codec only knows these types.
type Object interface {
	// ObjName is the registered OVO class name ("Cluster").
	ObjName() string
	// ObjVersion is the newest version of the class this package knows.
	ObjVersion() string
	meta() *Meta
}

// Object class names.
const (
	NameCluster         = "Cluster"
	NameClusterTemplate = "ClusterTemplate"
	NameNodeGroup       = "NodeGroup"
	NameX509KeyPair     = "X509KeyPair"
	NameMagnumService   = "MagnumService"
	NameCertificate     = "Certificate"
	NameQuota           = "Quota"
	NameStats           = "Stats"
	NameFederation      = "Federation"
)

// ObjName implements Object.
func (*Cluster) ObjName() string { return NameCluster }

// ObjVersion implements Object: 1.24 (2026.2 drops the trust fields).
func (*Cluster) ObjVersion() string { return "1.24" }

// ObjName implements Object.
func (*ClusterTemplate) ObjName() string { return NameClusterTemplate }

// ObjVersion implements Object: 1.21 (adds driver).
func (*ClusterTemplate) ObjVersion() string { return "1.21" }

// ObjName implements Object.
func (*NodeGroup) ObjName() string { return NameNodeGroup }

// ObjVersion implements Object: 1.2 (adds node_labels, node_taints).
func (*NodeGroup) ObjVersion() string { return "1.2" }

// ObjName implements Object.
func (*X509KeyPair) ObjName() string { return NameX509KeyPair }

// ObjVersion implements Object.
func (*X509KeyPair) ObjVersion() string { return "1.2" }

// ObjName implements Object.
func (*MagnumService) ObjName() string { return NameMagnumService }

// ObjVersion implements Object.
func (*MagnumService) ObjVersion() string { return "1.0" }

// ObjName implements Object.
func (*Certificate) ObjName() string { return NameCertificate }

// ObjVersion implements Object.
func (*Certificate) ObjVersion() string { return "1.2" }

// ObjName implements Object.
func (*Quota) ObjName() string { return NameQuota }

// ObjVersion implements Object.
func (*Quota) ObjVersion() string { return "1.0" }

// ObjName implements Object.
func (*Stats) ObjName() string { return NameStats }

// ObjVersion implements Object.
func (*Stats) ObjVersion() string { return "1.0" }

// ObjName implements Object.
func (*Federation) ObjName() string { return NameFederation }

// ObjVersion implements Object.
func (*Federation) ObjVersion() string { return "1.0" }

// New returns an empty object of the named class, or false for a name this
// package does not know.
func New(name string) (Object, bool) {
	switch name {
	case NameCluster:
		return &Cluster{}, true
	case NameClusterTemplate:
		return &ClusterTemplate{}, true
	case NameNodeGroup:
		return &NodeGroup{}, true
	case NameX509KeyPair:
		return &X509KeyPair{}, true
	case NameMagnumService:
		return &MagnumService{}, true
	case NameCertificate:
		return &Certificate{}, true
	case NameQuota:
		return &Quota{}, true
	case NameStats:
		return &Stats{}, true
	case NameFederation:
		return &Federation{}, true
	}
	return nil, false
}

// Names lists every object class this package knows.
func Names() []string {
	return []string{NameCluster, NameClusterTemplate, NameNodeGroup, NameX509KeyPair,
		NameMagnumService, NameCertificate, NameQuota, NameStats, NameFederation}
}

// NewestVersion returns the newest version known for the class, or "" when
// the class is unknown.
func NewestVersion(name string) string {
	o, ok := New(name)
	if !ok {
		return ""
	}
	return o.ObjVersion()
}

type fieldKind int

const (
	kString fieldKind = iota
	kInt
	kBool
	kTime
	kEnum
	kDictOfStrings
	kListOfStrings
	kListOfDicts
	kObject
)

// fieldInfo describes one field of an object class, from its `ovo` tag.
type fieldInfo struct {
	name    string
	jsonKey string // name as a JSON key and its separator, as json.dumps writes them
	// jsonKeyEscaped is jsonKey escaped as the body of a JSON string.
	jsonKeyEscaped string
	pos            int // position in classInfo.fields (and in a Meta snapshot)
	index          int
	kind           fieldKind
	ptr            bool // nullable scalar held as a pointer
	nullable       bool
	hasDef         bool
	def            any // default as a Go value of the field's type (bool or int64 or string)
	// zeroNotDefault: the Go zero value is not the default (node_count's 1,
	// floating_ip_enabled's true), so it is set whenever written in Go.
	zeroNotDefault bool
	since          version
	until          version // zero: no upper bound
	secret         bool
	enum           string
	objName        string // for kObject
}

// classInfo describes one object class.
type classInfo struct {
	name    string
	newest  version
	typ     reflect.Type // the struct type
	fields  []fieldInfo
	byName  map[string]int
	enumSet map[string]map[string]bool
	sorted  []int // indexes into fields, by wire name (the JSON key order)
}

func (c *classInfo) field(name string) (*fieldInfo, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &c.fields[i], true
}

// enums lists the valid values of each enum field type (magnum.objects.fields).
// ClusterType accepts the 15.0.1 values too, so that old templates still load.
func enums() map[string]map[string]bool {
	set := func(vs ...string) map[string]bool {
		m := make(map[string]bool, len(vs))
		for _, v := range vs {
			m[v] = true
		}
		return m
	}
	return map[string]map[string]bool{
		"ClusterStatus":       set(ClusterStatuses...),
		"ClusterHealthStatus": set(Healthy, Unhealthy, Unknown),
		"FederationStatus": set("CREATE_IN_PROGRESS", "CREATE_FAILED", "CREATE_COMPLETE",
			"UPDATE_IN_PROGRESS", "UPDATE_FAILED", "UPDATE_COMPLETE",
			"DELETE_IN_PROGRESS", "DELETE_FAILED", "DELETE_COMPLETE"),
		"ClusterType": set("kubernetes", "swarm", "mesos", "dcos", "swarm-mode"),
	}
}

// classes is the read-only registry of object classes, built once from the
// struct tags.
var classes = buildRegistry()

func buildRegistry() map[string]*classInfo {
	en := enums()
	out := make(map[string]*classInfo, 9)
	for _, name := range Names() {
		o, _ := New(name)
		ci := &classInfo{
			name:    name,
			newest:  mustVersion(o.ObjVersion()),
			typ:     reflect.TypeOf(o).Elem(),
			byName:  map[string]int{},
			enumSet: en,
		}
		for i := 0; i < ci.typ.NumField(); i++ {
			sf := ci.typ.Field(i)
			tag := sf.Tag.Get("ovo")
			if tag == "" || tag == "-" {
				continue
			}
			ci.byName[strings.SplitN(tag, ",", 2)[0]] = len(ci.fields)
			f := parseField(i, sf, tag)
			f.pos = len(ci.fields)
			ci.fields = append(ci.fields, f)
		}
		ci.sorted = make([]int, len(ci.fields))
		for i := range ci.sorted {
			ci.sorted[i] = i
		}
		sort.Slice(ci.sorted, func(a, b int) bool { return ci.fields[ci.sorted[a]].name < ci.fields[ci.sorted[b]].name })
		out[name] = ci
	}
	return out
}

func parseField(index int, sf reflect.StructField, tag string) fieldInfo {
	parts := strings.Split(tag, ",")
	f := fieldInfo{name: parts[0], index: index}
	f.jsonKey = string(pyjson.AppendString(nil, f.name)) + ": "
	f.jsonKeyEscaped = escapeBody(f.jsonKey)
	isObject := false
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "enum":
			f.enum = v
		case "since":
			f.since = mustVersion(v)
		case "until":
			f.until = mustVersion(v)
		case "secret":
			f.secret = true
		case "object":
			isObject = true
		case "default":
			f.hasDef = true
			f.def = v
		}
	}
	t := sf.Type
	timeType := reflect.TypeOf(time.Time{})
	switch {
	case isObject:
		f.kind = kObject
		f.objName = t.Elem().Name()
	case t.Kind() == reflect.Pointer && t.Elem() == timeType:
		f.kind, f.ptr, f.nullable = kTime, true, true
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String:
		f.kind, f.ptr, f.nullable = kString, true, true
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Int64:
		f.kind, f.ptr, f.nullable = kInt, true, true
	case t.Kind() == reflect.String && f.enum != "":
		f.kind, f.nullable = kEnum, true
	case t.Kind() == reflect.String:
		f.kind = kString
	case t.Kind() == reflect.Int64:
		f.kind = kInt
	case t.Kind() == reflect.Bool:
		f.kind = kBool
	case t.Kind() == reflect.Map:
		f.kind, f.nullable = kDictOfStrings, true
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		f.kind, f.nullable = kListOfStrings, true
	case t.Kind() == reflect.Slice:
		f.kind, f.nullable = kListOfDicts, true
	}
	if f.hasDef {
		s, _ := f.def.(string)
		switch f.kind {
		case kBool:
			f.def = s == "true"
		case kInt:
			n, _ := parseIntLiteral(s)
			f.def = n
		}
		f.zeroNotDefault = !f.ptr && !reflect.ValueOf(f.def).IsZero()
	}
	return f
}

func parseIntLiteral(s string) (int64, bool) {
	var n int64
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	if s == "" {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// classOf returns the registry entry of o's class.
func classOf(o Object) *classInfo { return classes[o.ObjName()] }

// fieldValue returns the reflect.Value of field f in o.
func fieldValue(o Object, f *fieldInfo) reflect.Value {
	return reflect.ValueOf(o).Elem().Field(f.index)
}

// Fields returns the wire names of the fields of the named class, in
// declaration order, or nil for an unknown class.
func Fields(name string) []string {
	ci, ok := classes[name]
	if !ok {
		return nil
	}
	out := make([]string, len(ci.fields))
	for i := range ci.fields {
		out[i] = ci.fields[i].name
	}
	return out
}

// FieldsAt returns the wire names of the fields that version ver of the
// named class carries (declaration order); an unparsable or empty version
// means the newest.
func FieldsAt(name, ver string) []string {
	ci, ok := classes[name]
	if !ok {
		return nil
	}
	v, ok := parseVersion(ver)
	if !ok {
		v = ci.newest
	}
	var out []string
	for i := range ci.fields {
		if ci.fields[i].knows(v) {
			out = append(out, ci.fields[i].name)
		}
	}
	return out
}
