package objects

import (
	"strconv"
	"strings"

	"github.com/openstack/magnum-conductor/api/exception"
)

// version is an OVO "major.minor" version; the zero value means "none".
type version struct{ major, minor int }

func (v version) isZero() bool { return v == version{} }

func (v version) String() string { return string(v.appendTo(nil)) }

// appendTo appends v as String writes it.
func (v version) appendTo(dst []byte) []byte {
	dst = strconv.AppendInt(dst, int64(v.major), 10)
	dst = append(dst, '.')
	return strconv.AppendInt(dst, int64(v.minor), 10)
}

func (v version) less(o version) bool {
	if v.major != o.major {
		return v.major < o.major
	}
	return v.minor < o.minor
}

func parseVersion(s string) (version, bool) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return version{}, false
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return version{}, false
	}
	return version{a, b}, true
}

func mustVersion(s string) version {
	v, _ := parseVersion(s)
	return v
}

// knows reports whether a field exists at object version v.
func (f *fieldInfo) knows(v version) bool {
	if !f.since.isZero() && v.less(f.since) {
		return false
	}
	if !f.until.isZero() && f.until.less(v) {
		return false
	}
	return true
}

// IncompatibleObjectVersion is oslo_versionedobjects.exception.
// IncompatibleObjectVersion(objname, objver, supported), as oslo sends it.
func IncompatibleObjectVersion(objname, objver, supported string) *exception.Error {
	kw := map[string]any{"objname": objname, "objver": objver, "supported": supported, "code": 500}
	return &exception.Error{
		Module: exception.ModuleOVO, Class: "IncompatibleObjectVersion", Code: 500,
		Message: exception.Format("Version %(objver)s of %(objname)s is not supported, "+
			"supported version is %(supported)s", kw),
		Kwargs: kw,
	}
}

// UnsupportedObjectError is oslo_versionedobjects.exception.
// UnsupportedObjectError(objtype), raised for an unregistered class name.
func UnsupportedObjectError(objtype string) *exception.Error {
	kw := map[string]any{"objtype": objtype, "code": 500}
	return &exception.Error{
		Module: exception.ModuleOVO, Class: "UnsupportedObjectError", Code: 500,
		Message: "Unsupported object type " + objtype, Kwargs: kw,
	}
}

// CheckVersion reports whether this package can read and write version ver
// of the named class, as obj_class_from_name does: the same major version
// and a minor version no newer than ours. It returns UnsupportedObjectError
// for an unknown class and IncompatibleObjectVersion otherwise.
func CheckVersion(name, ver string) error {
	ci, ok := classes[name]
	if !ok {
		return UnsupportedObjectError(name)
	}
	_, err := ci.resolve(ver)
	return err
}

// resolve parses ver and checks it against the class.
func (c *classInfo) resolve(ver string) (version, error) {
	v, ok := parseVersion(ver)
	if !ok || v.major != c.newest.major || c.newest.less(v) {
		return version{}, IncompatibleObjectVersion(c.name, ver, c.newest.String())
	}
	return v, nil
}

// childVersion is the version to write a child object at when the caller
// sent no manifest: the one its peer sent, else the oldest version that the
// releases using the parent's version all read (Cluster 1.23 is spoken by
// 15.0.1 with ClusterTemplate 1.20 and by 2026.1 with 1.21).
func childVersion(parent string, pv version, child Object) string {
	if v := child.meta().version; v != "" {
		return v
	}
	if parent == NameCluster && child.ObjName() == NameClusterTemplate && pv.less(version{1, 24}) {
		return "1.20"
	}
	return child.ObjVersion()
}
