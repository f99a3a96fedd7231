package capi

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// classFS holds every released ClusterClass bundle (classes/<version>.yaml).
// Released bundles are never edited, so clusters stay on their class until an
// explicit upgrade moves them.
//
//go:embed classes/*.yaml
var classFS embed.FS

// LatestClassVersion is the bundle applied to new clusters by default.
const LatestClassVersion = "v5"

// ClassVersions lists the embedded ClusterClass versions, oldest first.
func ClassVersions() []string {
	entries, _ := classFS.ReadDir("classes")
	var out []string
	for _, e := range entries {
		if n := e.Name(); len(n) > 5 {
			out = append(out, n[:len(n)-5])
		}
	}
	slices.Sort(out)
	return out
}

// className is the ClusterClass name of a bundle version.
func className(version string) string { return "magnum-" + version }

// classSet is the ClusterClass bundles a driver applies, parsed and checked
// once: the embedded ones, and those of Options.ClassDir, which replace an
// embedded bundle of the same version (an operator's bundle for another
// infrastructure provider, with the same variables, keeps the clusters'
// class names). A nil classSet holds the embedded bundles only.
type classSet map[string][]*unstructured.Unstructured

// loadClasses parses the embedded bundles and those of dir ("" for none).
func loadClasses(dir string) (classSet, error) {
	set := classSet{}
	var errs []error
	for _, v := range ClassVersions() {
		data, err := classFS.ReadFile("classes/" + v + ".yaml")
		if err == nil {
			set[v], err = parseClassBundle(v, data)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err == nil {
			if _, serr := os.Stat(dir); serr != nil {
				err = serr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("capi: ClusterClass directory: %w", err))
		}
		for _, f := range files {
			v := strings.TrimSuffix(filepath.Base(f), ".yaml")
			data, err := os.ReadFile(f)
			if err == nil {
				set[v], err = parseClassBundle(v, data)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w (file %s)", err, f))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// versions lists the set's versions, oldest first.
func (s classSet) versions() []string {
	if s == nil {
		return ClassVersions()
	}
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// bundle returns the objects of a bundle version: the templates first, the
// ClusterClass last (it references them). They are shared: copy before
// changing them.
func (s classSet) bundle(version string) ([]*unstructured.Unstructured, error) {
	if s == nil {
		return classBundle(version)
	}
	objs, ok := s[version]
	if !ok {
		return nil, fmt.Errorf("capi: unknown ClusterClass version %q (have %v)", version, s.versions())
	}
	return objs, nil
}

// classBundle parses an embedded bundle version.
func classBundle(version string) ([]*unstructured.Unstructured, error) {
	data, err := classFS.ReadFile("classes/" + version + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("capi: unknown ClusterClass version %q (have %v)", version, ClassVersions())
	}
	return parseClassBundle(version, data)
}

// parseClassBundle parses and checks a bundle: one ClusterClass, named
// magnum-<version> (the name the driver's Clusters refer to), and its
// templates; the version is also a label value on every object applied.
func parseClassBundle(version string, data []byte) ([]*unstructured.Unstructured, error) {
	if !isDNSLabel(version) {
		return nil, fmt.Errorf("capi: ClusterClass bundle version %q must be a DNS label (lower-case letters, digits and '-')", version)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs, class []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("capi: ClusterClass bundle %s: %w", version, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("capi: ClusterClass bundle %s: an object without apiVersion, kind or name", version)
		}
		if u.GetKind() == "ClusterClass" {
			class = append(class, u)
		} else {
			objs = append(objs, u)
		}
	}
	if len(class) != 1 {
		return nil, fmt.Errorf("capi: ClusterClass bundle %s: want one ClusterClass, found %d", version, len(class))
	}
	if n := class[0].GetName(); n != className(version) {
		return nil, fmt.Errorf("capi: ClusterClass bundle %s: the ClusterClass is named %q, want %q", version, n, className(version))
	}
	return append(objs, class...), nil
}

// healthChecks says which parts of a ClusterClass bundle define a
// MachineHealthCheck: a Cluster may enable only those (the Cluster webhook
// refuses healthCheck.enabled true where the class defines none).
type healthChecks struct {
	controlPlaneDef *clusterv1.ControlPlaneClassHealthCheck                // nil: none
	workerDefs      map[string]clusterv1.MachineDeploymentClassHealthCheck // by MachineDeployment class; absent: none
}

// healthChecks reads the health checks a bundle version defines.
func (s classSet) healthChecks(version string) (healthChecks, error) {
	objs, err := s.bundle(version)
	if err != nil {
		return healthChecks{}, err
	}
	cc := &clusterv1.ClusterClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[len(objs)-1].Object, cc); err != nil {
		return healthChecks{}, fmt.Errorf("capi: ClusterClass bundle %s: %w", version, err)
	}
	hc := healthChecks{workerDefs: map[string]clusterv1.MachineDeploymentClassHealthCheck{}}
	if cc.Spec.ControlPlane.HealthCheck.IsDefined() {
		hc.controlPlaneDef = &cc.Spec.ControlPlane.HealthCheck
	}
	for _, md := range cc.Spec.Workers.MachineDeployments {
		if md.HealthCheck.IsDefined() {
			hc.workerDefs[md.Class] = md.HealthCheck
		}
	}
	return hc, nil
}
