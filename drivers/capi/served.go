package capi

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openstack/magnum-conductor/api/exception"
)

// A class bundle names its kinds at one version each: its templates' own,
// the ClusterClass's template references and its patches' selectors. A
// management cluster whose providers do not serve one of them cannot take
// the bundle: the templates cannot be created, or the ClusterClass refers to
// versions it cannot read, or a patch selects nothing and is silently left
// out. magnum-v1 to v4 name Cluster API Provider OpenStack's kinds at
// v1beta2, which no CAPO release serves (v0.14 serves v1beta1 only); the
// driver checks the bundle before any write of the operation that applies
// it, and refuses with what is missing and what to do.

// bundleKinds lists every apiVersion and kind a bundle names, sorted: each
// object's, and every apiVersion/kind pair under the ClusterClass's spec
// (template references, patch selectors).
func bundleKinds(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	add := func(apiVersion, kind string) {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || kind == "" {
			return // parseClassBundle and the API server say what is wrong with it
		}
		if gvk := gv.WithKind(kind); !slices.Contains(out, gvk) {
			out = append(out, gvk)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			av, _ := v["apiVersion"].(string)
			k, _ := v["kind"].(string)
			if av != "" && k != "" {
				add(av, k)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, o := range objs {
		add(o.GetAPIVersion(), o.GetKind())
		if o.GetKind() == "ClusterClass" {
			walk(o.Object["spec"])
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// unservedKinds are the kinds of a bundle version the management cluster
// does not serve at the version the bundle names, each with the versions
// it serves the kind at ("" when none), through the driver's RESTMapper;
// none without one (a driver built without discovery cannot tell). With
// retry, a kind not found is looked up again once after the mapper forgets
// what it discovered (a provider installed or upgraded since).
func (d *Driver) unservedKinds(version string, retry bool) ([]unservedKind, error) {
	m := d.deps.Mapper
	if m == nil {
		return nil, nil
	}
	objs, err := d.classes.bundle(version)
	if err != nil {
		return nil, err
	}
	check := func() ([]unservedKind, error) {
		var out []unservedKind
		for _, gvk := range bundleKinds(objs) {
			_, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err == nil {
				continue
			}
			if !meta.IsNoMatchError(err) {
				return nil, fmt.Errorf("capi: look up %s %s on the management cluster: %w", gvk.Kind, gvk.GroupVersion(), err)
			}
			u := unservedKind{GroupVersionKind: gvk}
			if all, err := m.RESTMappings(gvk.GroupKind()); err == nil {
				for _, mp := range all {
					if v := mp.GroupVersionKind.Version; !slices.Contains(u.served, v) {
						u.served = append(u.served, v)
					}
				}
				slices.Sort(u.served)
			}
			out = append(out, u)
		}
		return out, nil
	}
	out, err := check()
	if len(out) > 0 && retry {
		if r, ok := m.(meta.ResettableRESTMapper); ok {
			r.Reset()
			out, err = check()
		}
	}
	return out, err
}

// unservedKind is a kind of a class bundle that the management cluster
// does not serve at the bundle's version, and the versions it serves it at.
type unservedKind struct {
	schema.GroupVersionKind
	served []string
}

func (u unservedKind) String() string {
	s := u.Kind + " " + u.GroupVersion().String()
	if len(u.served) > 0 {
		s += " (served at " + strings.Join(u.served, ", ") + ")"
	}
	return s
}

// classNotServed returns the refusal (NotSupported, which leaves the
// cluster's status as it was) of an operation (the Magnum method name)
// that would apply the class bundle version on a management cluster that
// does not serve its kinds, naming them and the newest other bundle the
// management cluster does serve, or that cannot tell; nil when it serves
// them all.
func (d *Driver) classNotServed(operation, version string) error {
	refuse := func(msg string) error {
		return exception.ClassNotSupported.WithMessage("%(reason)s", map[string]any{"operation": operation, "reason": msg})
	}
	missing, err := d.unservedKinds(version, true)
	if err != nil {
		return refuse(fmt.Sprintf("ClusterClass %s cannot be checked against the Cluster API management cluster: %v.", className(version), err))
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, u := range missing {
		names[i] = u.String()
	}
	msg := fmt.Sprintf("ClusterClass %s cannot be applied: the Cluster API management cluster does not serve %s.",
		className(version), strings.Join(names, ", "))
	versions := d.classes.versions()
	alt := ""
	for i := len(versions) - 1; i >= 0 && alt == ""; i-- {
		if v := versions[i]; v != version {
			if m, err := d.unservedKinds(v, false); err == nil && len(m) == 0 {
				alt = v
			}
		}
	}
	if alt != "" {
		msg += fmt.Sprintf(" Use ClusterClass %s, whose kinds it serves ([capi_driver] cluster_class_version = %s; "+
			"a cluster on another class moves to it by a cluster upgrade), or install provider versions that serve the kinds above.",
			className(alt), alt)
	} else {
		msg += " Install provider versions that serve them."
	}
	return refuse(msg)
}
