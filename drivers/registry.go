package drivers

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// Registry selects the driver of a cluster template (the Go twin of
// Driver.get_driver and get_driver_for_cluster). It is immutable once built
// and safe for concurrent use.
//
// Unlike Magnum (reference §K.19), two drivers claiming one key or one name
// are a start-up error instead of "last entry point wins", and a disabled
// driver is refused also when a template names it explicitly.
type Registry struct {
	byName   map[string]Driver
	byKey    map[Key]Driver
	disabled map[string]bool
	names    []string
}

// NewRegistry builds a registry from ds, skipping the drivers named in
// disabled ([drivers]disabled_drivers). Two drivers with one name, or two
// enabled drivers providing one (server_type, os, coe) key, are an error.
func NewRegistry(disabled []string, ds ...Driver) (*Registry, error) {
	r := &Registry{
		byName:   make(map[string]Driver, len(ds)),
		byKey:    make(map[Key]Driver),
		disabled: make(map[string]bool, len(disabled)),
	}
	for _, n := range disabled {
		r.disabled[n] = true
	}
	seen := make(map[string]bool, len(ds))
	for _, d := range ds {
		if d == nil {
			return nil, fmt.Errorf("drivers: nil driver")
		}
		name := d.Name()
		if name == "" {
			return nil, fmt.Errorf("drivers: driver %T has an empty name", d)
		}
		if seen[name] {
			return nil, fmt.Errorf("drivers: two drivers are registered under the name %q", name)
		}
		seen[name] = true
		if r.disabled[name] {
			continue
		}
		for _, k := range d.Provides() {
			if other, ok := r.byKey[k]; ok {
				return nil, fmt.Errorf("drivers: drivers %q and %q both provide (%s, %s, %s)",
					other.Name(), name, k.ServerType, k.OS, k.COE)
			}
			r.byKey[k] = d
		}
		r.byName[name] = d
		r.names = append(r.names, name)
	}
	// Aliases after every name: an alias never shadows a driver's own
	// name, and two drivers never share one.
	aliasOf := map[string]string{}
	for _, name := range r.names {
		a, ok := r.byName[name].(Aliased)
		if !ok {
			continue
		}
		for _, alias := range a.Aliases() {
			if alias == "" || alias == name || r.disabled[alias] {
				continue
			}
			if seen[alias] {
				return nil, fmt.Errorf("drivers: driver %q names %q as an alias, which is a driver's own name", name, alias)
			}
			if other, ok := aliasOf[alias]; ok && other != name {
				return nil, fmt.Errorf("drivers: drivers %q and %q both name the alias %q", other, name, alias)
			}
			aliasOf[alias] = name
			r.byName[alias] = r.byName[name]
		}
	}
	sort.Strings(r.names)
	return r, nil
}

// ForTemplate returns the driver for ct: the driver named by ct.Driver when
// it is set (by its name or one of its aliases), else the one providing (server_type, cluster_distro, coe).
// As in Magnum 2026.2, a name no enabled driver is registered under is
// ClusterDriverNotSupported, and a cluster type no enabled driver provides
// is ClusterTypeNotSupported, listing the types the loaded drivers support.
func (r *Registry) ForTemplate(ct *objects.ClusterTemplate) (Driver, error) {
	if ct == nil {
		return nil, exception.ClassClusterTypeNotSupported.New(map[string]any{
			"server_type": nil, "os": nil, "coe": nil, "supported_cluster_types": r.supportedTypes()})
	}
	if name := objects.Deref(ct.Driver); name != "" {
		if d, ok := r.byName[name]; ok {
			return d, nil
		}
		kwargs := map[string]any{"driver_name": name}
		if r.disabled[name] {
			// Magnum would load a disabled driver a template names; we
			// refuse it, and say why.
			return nil, exception.ClassClusterDriverNotSupported.WithMessage(
				"Cluster driver (%(driver_name)s) not supported: it is listed in [drivers]/disabled_drivers.", kwargs)
		}
		return nil, exception.ClassClusterDriverNotSupported.New(kwargs)
	}
	k := Key{ServerType: objects.Deref(ct.ServerType), OS: objects.Deref(ct.ClusterDistro), COE: ct.Coe}
	if d, ok := r.byKey[k]; ok {
		return d, nil
	}
	return nil, exception.ClassClusterTypeNotSupported.New(map[string]any{
		"server_type": pyNone(ct.ServerType), "os": pyNone(ct.ClusterDistro), "coe": ct.Coe,
		"supported_cluster_types": r.supportedTypes()})
}

// supportedTypes is Magnum 2026.2's list of the cluster types the enabled
// drivers provide, for ClusterTypeNotSupported: "(vm, a, kubernetes), ..."
// sorted, or "none (no cluster drivers are loaded)".
func (r *Registry) supportedTypes() string {
	keys := make([]Key, 0, len(r.byKey))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "none (no cluster drivers are loaded)"
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.ServerType, b.ServerType), cmp.Compare(a.OS, b.OS), cmp.Compare(a.COE, b.COE))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "(" + k.ServerType + ", " + k.OS + ", " + k.COE + ")"
	}
	return strings.Join(parts, ", ")
}

// Driver returns the enabled driver registered under name (or an alias).
func (r *Registry) Driver(name string) (Driver, bool) {
	d, ok := r.byName[name]
	return d, ok
}

// Drivers returns the enabled drivers, sorted by name.
func (r *Registry) Drivers() []Driver {
	out := make([]Driver, 0, len(r.names))
	for _, n := range r.names {
		out = append(out, r.byName[n])
	}
	return out
}

// Names returns the names of the enabled drivers, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// pyNone renders a nullable string as Python would format it in a message.
func pyNone(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
