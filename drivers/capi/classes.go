package capi

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"slices"

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
const LatestClassVersion = "v2"

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

// classBundle parses the objects of a ClusterClass bundle: the templates
// first, the ClusterClass last (it references them).
func classBundle(version string) ([]*unstructured.Unstructured, error) {
	data, err := classFS.ReadFile("classes/" + version + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("capi: unknown ClusterClass version %q (have %v)", version, ClassVersions())
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
		if u.GetKind() == "ClusterClass" {
			class = append(class, u)
		} else {
			objs = append(objs, u)
		}
	}
	if len(class) != 1 {
		return nil, fmt.Errorf("capi: ClusterClass bundle %s: want one ClusterClass, found %d", version, len(class))
	}
	return append(objs, class...), nil
}

// healthChecks says which parts of a ClusterClass bundle define a
// MachineHealthCheck: a Cluster may enable only those (the Cluster webhook
// refuses healthCheck.enabled true where the class defines none).
type healthChecks struct {
	controlPlane bool
	workers      map[string]bool // by MachineDeployment class
}

// classHealthChecks reads the health checks a bundle version defines.
func classHealthChecks(version string) (healthChecks, error) {
	objs, err := classBundle(version)
	if err != nil {
		return healthChecks{}, err
	}
	cc := &clusterv1.ClusterClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[len(objs)-1].Object, cc); err != nil {
		return healthChecks{}, fmt.Errorf("capi: ClusterClass bundle %s: %w", version, err)
	}
	hc := healthChecks{controlPlane: cc.Spec.ControlPlane.HealthCheck.IsDefined(), workers: map[string]bool{}}
	for _, md := range cc.Spec.Workers.MachineDeployments {
		hc.workers[md.Class] = md.HealthCheck.IsDefined()
	}
	return hc, nil
}
