package capi

// Rendering a class bundle in process, as Cluster API's topology controller
// renders it: for the classes whose OpenStack kinds no CAPO release serves
// (magnum-v1 to v4: CAPO v0.14.2, which the tests' API servers run, serves
// v1beta1 only), the one way left to check what they make of each label;
// and the field-by-field proof that magnum-v5, which the real controllers
// render (TestRealCAPIAcceptsAndRendersWhatTheDriverBuilds), shapes CAPO's
// objects as magnum-v4 did for every label.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/openstack/magnum-conductor/api/objects"
)

// templateRole is where a ClusterClass uses a template: what its patches'
// matchResources select, and the rendered object's name (renderedObject's).
type templateRole struct {
	name    string // OpenStackCluster, KubeadmControlPlane, ControlPlaneMachineTemplate, WorkerBootstrapTemplate, WorkerMachineTemplate
	mdClass string // the MachineDeployment class of a worker's templates
}

// renderClassInProcess renders class bundle version for the Cluster the
// driver builds for c: every inline patch, in the class's order, applied
// as JSON patches to the templates its selectors match (apiVersion, kind,
// matchResources) when its enabledIf holds on their variables (a worker's:
// its MachineDeployment's, the Cluster's with its overrides). It returns the objects renderedObject names, with only
// what the templates and patches make of them: "OpenStackCluster" and
// "KubeadmControlPlane" are {spec: <the template's spec.template.spec>},
// the machine and bootstrap templates the templates themselves. A CRD
// default every CAPO version applies is applied too (identityRef.type
// Secret); nothing else the API server or the controllers add is.
func renderClassInProcess(t *testing.T, version string, c *objects.Cluster, tmpl *objects.ClusterTemplate, ngs []*objects.NodeGroup,
	serverGroups map[string]string) map[string]*unstructured.Unstructured {
	t.Helper()
	var sg []map[string]string
	if serverGroups != nil {
		sg = append(sg, serverGroups)
	}
	cl, err := buildCluster(c, tmpl, ngs, "ns", renderClusterName, version, sg...)
	if err != nil {
		t.Fatal(err)
	}
	vars := variablesOf(t, cl.Object, "spec", "topology", "variables")
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	mdVars := map[string]map[string]any{} // by MachineDeployment class: the default worker's
	for _, md := range mds {
		m := md.(map[string]any)
		class, _ := m["class"].(string)
		if _, ok := mdVars[class]; ok || m["name"] != "default-worker" {
			continue
		}
		v := maps.Clone(vars)
		maps.Copy(v, variablesOf(t, m, "variables", "overrides"))
		mdVars[class] = v
	}

	objs, err := classBundle(version)
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string]*unstructured.Unstructured{}
	for _, o := range objs[:len(objs)-1] {
		byRef[o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetName()] = o.DeepCopy()
	}
	class := objs[len(objs)-1]
	templates := map[templateRole]*unstructured.Unstructured{}
	ref := func(role templateRole, path ...string) {
		r, ok, _ := unstructured.NestedStringMap(class.Object, path...)
		if !ok {
			return
		}
		o := byRef[r["apiVersion"]+" "+r["kind"]+" "+r["name"]]
		if o == nil {
			t.Fatalf("%s: %v refers to %v, which the bundle does not hold", className(version), path, r)
		}
		templates[role] = o
	}
	ref(templateRole{name: "OpenStackCluster"}, "spec", "infrastructure", "templateRef")
	ref(templateRole{name: "KubeadmControlPlane"}, "spec", "controlPlane", "templateRef")
	ref(templateRole{name: "ControlPlaneMachineTemplate"}, "spec", "controlPlane", "machineInfrastructure", "templateRef")
	classMDs, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	for i, md := range classMDs {
		m := md.(map[string]any)
		name, _ := m["class"].(string)
		for role, path := range map[string][]string{"WorkerBootstrapTemplate": {"bootstrap", "templateRef"}, "WorkerMachineTemplate": {"infrastructure", "templateRef"}} {
			r, _, _ := unstructured.NestedStringMap(m, path...)
			o := byRef[r["apiVersion"]+" "+r["kind"]+" "+r["name"]]
			if o == nil {
				t.Fatalf("%s: machineDeployments[%d] %v refers to %v, which the bundle does not hold", className(version), i, path, r)
			}
			templates[templateRole{name: role, mdClass: name}] = o
		}
	}

	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	for _, p := range patches {
		pm := p.(map[string]any)
		defs, _ := pm["definitions"].([]any)
		for _, d := range defs {
			dm := d.(map[string]any)
			sel := dm["selector"].(map[string]any)
			match, _ := sel["matchResources"].(map[string]any)
			for role, o := range templates {
				if o.GetAPIVersion() != sel["apiVersion"] || o.GetKind() != sel["kind"] || !selects(match, role) {
					continue
				}
				v := vars
				if role.mdClass != "" {
					v = mdVars[role.mdClass]
				}
				// As Cluster API's inline patches: enabledIf is judged per
				// template, on its variables (a worker's overrides).
				if cond, ok := pm["enabledIf"].(string); ok && execPatchTemplate(t, cond, v) != "true" {
					continue
				}
				for _, jp := range dm["jsonPatches"].([]any) {
					if err := applyClassPatch(o.Object, jp.(map[string]any), func(text string) string { return execPatchTemplate(t, text, v) }, v); err != nil {
						t.Fatalf("%s patch %s on %s %s: %v", className(version), pm["name"], o.GetKind(), o.GetName(), err)
					}
				}
			}
		}
	}

	out := map[string]*unstructured.Unstructured{}
	for role, o := range templates {
		if role.mdClass != "" && role.mdClass != "default-worker" {
			continue
		}
		obj := normalizeNumbers(o.Object).(map[string]any)
		if role.name == "OpenStackCluster" || role.name == "KubeadmControlPlane" {
			spec, _, _ := unstructured.NestedMap(obj, "spec", "template", "spec")
			obj = map[string]any{"spec": spec}
		}
		out[role.name] = &unstructured.Unstructured{Object: obj}
	}
	if id, ok, _ := unstructured.NestedMap(out["OpenStackCluster"].Object, "spec", "identityRef"); ok && id["type"] == nil {
		id["type"] = "Secret" // the CRD's default (v1beta1 and v1beta2 alike)
		_ = unstructured.SetNestedMap(out["OpenStackCluster"].Object, id, "spec", "identityRef")
	}
	return out
}

// variablesOf reads the topology variables (name, value) at path of obj,
// through JSON as the patch engine reads them (numbers as float64).
func variablesOf(t *testing.T, obj map[string]any, path ...string) map[string]any {
	t.Helper()
	list, _, _ := unstructured.NestedSlice(obj, path...)
	out := map[string]any{}
	for _, v := range list {
		m := v.(map[string]any)
		var val any
		b, err := yaml.Marshal(m["value"])
		if err == nil {
			err = yaml.Unmarshal(b, &val)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[m["name"].(string)] = val
	}
	return out
}

// selects: a patch definition's matchResources select a template in role.
func selects(match map[string]any, role templateRole) bool {
	switch role.name {
	case "OpenStackCluster":
		return match["infrastructureCluster"] == true
	case "KubeadmControlPlane", "ControlPlaneMachineTemplate":
		return match["controlPlane"] == true
	}
	mdc, _ := match["machineDeploymentClass"].(map[string]any)
	names, _ := mdc["names"].([]any)
	return slices.Contains(names, any(role.mdClass))
}

// applyClassPatch applies one of a ClusterClass's JSON patches (add,
// replace, remove; value, valueFrom.variable or valueFrom.template, whose
// output is YAML) to obj.
func applyClassPatch(obj map[string]any, jp map[string]any, render func(string) string, vars map[string]any) error {
	op, _ := jp["op"].(string)
	path, _ := jp["path"].(string)
	var value any
	if op != "remove" {
		value = jp["value"]
		if vf, ok := jp["valueFrom"].(map[string]any); ok {
			if text, ok := vf["template"].(string); ok {
				if err := yaml.Unmarshal([]byte(render(text)), &value); err != nil {
					return fmt.Errorf("%s %s: the template renders no YAML: %w", op, path, err)
				}
			} else {
				name, _ := vf["variable"].(string)
				v, ok := vars[name]
				if !ok {
					return fmt.Errorf("%s %s: no variable %q", op, path, name)
				}
				value = v
			}
		}
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q is not a JSON pointer", path)
	}
	parts := strings.Split(path[1:], "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	parent, err := pointerParent(obj, parts[:len(parts)-1], path)
	if err != nil {
		return err
	}
	last := parts[len(parts)-1]
	switch c := parent.container.(type) {
	case map[string]any:
		_, exists := c[last]
		switch {
		case op == "add":
			c[last] = value
		case !exists:
			return fmt.Errorf("%s %s: no such member", op, path)
		case op == "replace":
			c[last] = value
		case op == "remove":
			delete(c, last)
		default:
			return fmt.Errorf("op %q not supported", op)
		}
	case []any:
		i := len(c)
		if last != "-" {
			if i, err = strconv.Atoi(last); err != nil || i < 0 || i > len(c) || (op != "add" && i == len(c)) {
				return fmt.Errorf("%s %s: bad index", op, path)
			}
		} else if op != "add" {
			return fmt.Errorf("%s %s: '-' only appends", op, path)
		}
		switch op {
		case "add":
			c = slices.Insert(c, i, value)
		case "replace":
			c[i] = value
		case "remove":
			c = slices.Delete(c, i, i+1)
		default:
			return fmt.Errorf("op %q not supported", op)
		}
		parent.set(c)
	}
	return nil
}

// pointerTarget is the container a JSON pointer's last token applies to,
// and how to store it again (a slice grows into a new one).
type pointerTarget struct {
	container any
	set       func(any)
}

func pointerParent(obj map[string]any, parts []string, path string) (pointerTarget, error) {
	var cur any = obj
	set := func(any) {} // the root is a map: never replaced
	for _, p := range parts {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[p]
			if !ok {
				return pointerTarget{}, fmt.Errorf("%s: no member %q", path, p)
			}
			key := p
			set = func(v any) { c[key] = v }
			cur = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return pointerTarget{}, fmt.Errorf("%s: bad index %q", path, p)
			}
			idx := i
			set = func(v any) { c[idx] = v }
			cur = c[i]
		default:
			return pointerTarget{}, fmt.Errorf("%s: %q is inside a scalar", path, p)
		}
	}
	return pointerTarget{container: cur, set: set}, nil
}

// normalizeNumbers returns a deep copy of v with whole float64s as int64,
// as a JSON number the API server returns is decoded.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalizeNumbers(e)
		}
		return out
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case int:
		return int64(v)
	}
	return v
}

// capoVersionOf is the version at which class bundle version names CAPO's
// kinds (v1beta1 from magnum-v5 on, v1beta2 before).
func capoVersionOf(t *testing.T, version string) string {
	t.Helper()
	objs, err := classBundle(version)
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range bundleKinds(objs) {
		if gvk.Group == "infrastructure.cluster.x-k8s.io" && strings.HasPrefix(gvk.Kind, "OpenStack") {
			return gvk.Version
		}
	}
	t.Fatalf("%s names no CAPO kind", className(version))
	return ""
}

// asCAPOv1beta1 is an expectation on a CAPO v1beta2 object's field (as the
// render cases state them, for magnum-v1 to v4) stated for the same object
// at v1beta1 (magnum-v5's): the API server's address fields lose their
// apiServer block, the floating IP switch is inverted, and a flavor is a
// name (flavor) or an id (flavorID) instead of {filter: {name}} or {id}.
// Every other field the classes set has the same name and shape.
func asCAPOv1beta1(want map[field]any) map[field]any {
	out := map[field]any{}
	for k, v := range want {
		switch {
		case k.obj == "OpenStackCluster" && k.path == "spec.apiServer":
			m, _ := v.(map[string]any)
			if v == absent || m == nil {
				out[field{k.obj, "spec.disableAPIServerFloatingIP"}] = absent
				out[field{k.obj, "spec.apiServerLoadBalancer"}] = absent
				continue
			}
			converted, err := capoClusterSpecV1beta1(map[string]any{"apiServer": m})
			if err != nil {
				panic(err) // a render case stated with a field this does not map: fix the case or this
			}
			for f, val := range converted {
				out[field{k.obj, "spec." + f}] = val
			}
		case strings.HasSuffix(k.obj, "MachineTemplate") && k.path == "spec.template.spec.flavor":
			m, _ := v.(map[string]any)
			filter, _ := m["filter"].(map[string]any)
			switch {
			case m["id"] != nil:
				out[field{k.obj, "spec.template.spec.flavorID"}] = m["id"]
				out[k] = absent
			case filter["name"] != nil:
				out[k] = filter["name"]
				out[field{k.obj, "spec.template.spec.flavorID"}] = absent
			default:
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	return out
}

// capoClusterSpecV1beta1 converts the fields of an OpenStackCluster spec
// (or template spec) the classes set from CAPO's v1beta2 to v1beta1. A
// renamed field it does not map is an error, never dropped.
func capoClusterSpecV1beta1(spec map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range spec {
		switch k {
		case "apiServer":
			api, _ := v.(map[string]any)
			for ak, av := range api {
				switch ak {
				case "enableFloatingIP":
					b, ok := av.(bool)
					if !ok {
						return nil, fmt.Errorf("apiServer.enableFloatingIP %v is not a boolean", av)
					}
					out["disableAPIServerFloatingIP"] = !b
				case "managedLoadBalancer":
					out["apiServerLoadBalancer"] = av
				case "fixedIP":
					out["apiServerFixedIP"] = av
				case "floatingIP":
					out["apiServerFloatingIP"] = av
				case "port":
					out["apiServerPort"] = av
				default:
					return nil, fmt.Errorf("apiServer.%s has no v1beta1 counterpart here", ak)
				}
			}
		case "enableExternalNetwork", "managedNetwork", "managedRouter", "primarySubnet", "bastion":
			return nil, fmt.Errorf("%s: renamed or reshaped in v1beta1, not mapped here", k)
		case "managedSecurityGroups":
			if m, _ := v.(map[string]any); m["clusterNodesSecurityGroupRules"] != nil {
				return nil, fmt.Errorf("managedSecurityGroups.clusterNodesSecurityGroupRules: not mapped here")
			}
			out[k] = v
		default:
			out[k] = v
		}
	}
	return out, nil
}

// capoMachineSpecV1beta1 converts an OpenStackMachine(Template) spec the
// classes render from CAPO's v1beta2 to v1beta1.
func capoMachineSpecV1beta1(spec map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range spec {
		switch k {
		case "flavor":
			m, _ := v.(map[string]any)
			filter, _ := m["filter"].(map[string]any)
			switch {
			case m["id"] != nil && filter == nil:
				out["flavorID"] = m["id"]
			case filter["name"] != nil && m["id"] == nil && len(filter) == 1:
				out["flavor"] = filter["name"]
			default:
				return nil, fmt.Errorf("flavor %v: neither {id} nor {filter: {name}}", v)
			}
		case "ports":
			ports, _ := v.([]any)
			conv := make([]any, len(ports))
			for i, p := range ports {
				pm := maps.Clone(p.(map[string]any))
				if eps, ok := pm["enablePortSecurity"].(bool); ok {
					delete(pm, "enablePortSecurity")
					pm["disablePortSecurity"] = !eps
				}
				conv[i] = pm
			}
			out[k] = conv
		default:
			out[k] = v
		}
	}
	return out, nil
}

// checkInProcessRender checks the expectations of a render case that fall
// on what the templates and patches make (see renderClassInProcess): the
// OpenStack objects, the machine and bootstrap templates, and the
// KubeadmControlPlane's kubeadmConfigSpec; the Cluster's own fields and
// the MachineDeployment are the driver's and the topology controller's.
func checkInProcessRender(t *testing.T, objs map[string]*unstructured.Unstructured, want map[field]any) {
	t.Helper()
	keys := slices.SortedFunc(maps.Keys(want), func(a, b field) int { return strings.Compare(a.obj+" "+a.path, b.obj+" "+b.path) })
	checked := 0
	for _, k := range keys {
		o := objs[k.obj]
		if o == nil || (k.obj == "KubeadmControlPlane" && !strings.HasPrefix(k.path, "spec.kubeadmConfigSpec")) {
			continue
		}
		checked++
		got, found, err := nestedField(o.Object, k.path)
		if err != nil {
			t.Errorf("%s %s: %v", k.obj, k.path, err)
			continue
		}
		if w := want[k]; w == absent {
			if found {
				t.Errorf("%s %s = %v, want it unset", k.obj, k.path, got)
			}
		} else if c, ok := w.(check); ok {
			if msg := c(got, found); msg != "" {
				t.Errorf("%s %s: %s", k.obj, k.path, msg)
			}
		} else if !found || !reflect.DeepEqual(got, w) {
			t.Errorf("%s %s = %#v (set: %v), want %#v", k.obj, k.path, got, found, w)
		}
	}
	if checked < 10 {
		t.Errorf("only %d expectations fall on the rendered templates", checked)
	}
}

// expectationsFor are what class version must render for render case rc:
// defaultExpectations and the case's, those of the node and API-server
// options (magnum-v3 on) and of magnum-v4's variables when the class
// declares them, stated for the CAPO version the class names.
func expectationsFor(t *testing.T, version string, rc renderCase) map[field]any {
	t.Helper()
	want := defaultExpectations(renderClusterName)
	maps.Copy(want, rc.want)
	declared, err := classSet(nil).variables(version)
	if err != nil {
		t.Fatal(err)
	}
	if declared["apiServer"] { // a class with the node and API-server options (magnum-v3 on)
		maps.Copy(want, defaultOptionExpectations())
		maps.Copy(want, rc.options)
	}
	if declared["extraNetworks"] { // magnum-v4 on
		maps.Copy(want, defaultV4Expectations())
		maps.Copy(want, rc.v4)
	}
	if capoVersionOf(t, version) == "v1beta1" {
		want = asCAPOv1beta1(want)
	}
	return want
}

// renderCaseCluster is the Magnum cluster of a render case.
func renderCaseCluster(rc renderCase) (*objects.Cluster, *objects.ClusterTemplate, []*objects.NodeGroup) {
	c, tmpl, ngs := defaultMagnumCluster()
	maps.Copy(c.Labels, rc.labels)
	for _, ng := range ngs {
		if ng.Role == objects.RoleWorker && len(rc.workerLabels) > 0 {
			ng.Labels = maps.Clone(rc.workerLabels)
		}
	}
	if rc.mutate != nil {
		rc.mutate(c, tmpl)
	}
	return c, tmpl, ngs
}

// Every released class renders, in process, what each render case expects
// of its templates: magnum-v1 to v4, whose OpenStack kinds no CAPO release
// serves, are checked this way only; magnum-v5 also through the real
// controllers.
func TestClassRenderCasesInProcess(t *testing.T) {
	for _, version := range ClassVersions() {
		for _, rc := range casesFor(t, version) {
			t.Run(version+"/"+rc.name, func(t *testing.T) {
				c, tmpl, ngs := renderCaseCluster(rc)
				checkInProcessRender(t, renderClassInProcess(t, version, c, tmpl, ngs, rc.serverGroups), expectationsFor(t, version, rc))
			})
		}
	}
}

// For every render case (every label the driver supports), magnum-v5
// renders CAPO's objects as magnum-v4 does, field by field, in CAPO's
// v1beta1 names: the whole OpenStackCluster spec and both machine
// templates' specs, converted from v1beta2, equal magnum-v5's; the kubeadm
// templates (whose kinds did not change) are equal as they are.
func TestMagnumV5RendersWhatMagnumV4Renders(t *testing.T) {
	for _, rc := range renderCases() {
		t.Run(rc.name, func(t *testing.T) {
			c, tmpl, ngs := renderCaseCluster(rc)
			v4 := renderClassInProcess(t, "v4", c, tmpl, ngs, rc.serverGroups)
			c, tmpl, ngs = renderCaseCluster(rc)
			v5 := renderClassInProcess(t, "v5", c, tmpl, ngs, rc.serverGroups)
			for _, name := range []string{"OpenStackCluster", "ControlPlaneMachineTemplate", "WorkerMachineTemplate", "KubeadmControlPlane", "WorkerBootstrapTemplate"} {
				path := []string{"spec", "template", "spec"}
				if name == "OpenStackCluster" || name == "KubeadmControlPlane" {
					path = []string{"spec"}
				}
				old, _, _ := unstructured.NestedMap(v4[name].Object, path...)
				got, _, _ := unstructured.NestedMap(v5[name].Object, path...)
				want, err := old, error(nil)
				switch name {
				case "OpenStackCluster":
					want, err = capoClusterSpecV1beta1(old)
				case "ControlPlaneMachineTemplate", "WorkerMachineTemplate":
					want, err = capoMachineSpecV1beta1(old)
				}
				if err != nil {
					t.Fatalf("%s: magnum-v4 renders %v: %v", name, old, err)
				}
				if len(got) == 0 || !reflect.DeepEqual(got, want) {
					a, _ := yaml.Marshal(got)
					b, _ := yaml.Marshal(want)
					t.Errorf("%s: magnum-v5 renders\n%s\nmagnum-v4 renders (in v1beta1's names)\n%s", name, a, b)
				}
			}
		})
	}
}
