package capi

import (
	"errors"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

func TestLabelSchemaParse(t *testing.T) {
	s := DefaultLabelSchema()
	l, err := s.Parse(map[string]string{"kube_tag": "v1.34.1", "boot_volume_size": "50", "auto_healing_enabled": "False",
		"control_plane_availability_zones": "az1, az2", "api_master_lb_allowed_cidrs": "10.0.0.1/8", "unknown_label": "$(rm -rf)"})
	if err != nil {
		t.Fatal(err)
	}
	if l.String("kube_tag") != "v1.34.1" {
		t.Errorf("kube_tag = %q", l.String("kube_tag"))
	}
	if n, _ := l.Int("boot_volume_size"); n != 50 {
		t.Errorf("boot_volume_size = %d", n)
	}
	if b, ok := l.Bool("auto_healing_enabled"); !ok || b {
		t.Errorf("auto_healing_enabled = %v %v", b, ok)
	}
	if got := l.List("control_plane_availability_zones"); strings.Join(got, "|") != "az1|az2" {
		t.Errorf("azs = %v", got)
	}
	if got := l.List("api_master_lb_allowed_cidrs"); len(got) != 1 || got[0] != "10.0.0.0/8" {
		t.Errorf("cidrs = %v (want the masked prefix)", got)
	}
	if l.String("fixed_subnet_cidr") != "10.0.0.0/24" || l.String("network_driver") != "calico" {
		t.Errorf("defaults not applied: %v", l.values)
	}
}

func TestInvalidLabelIsInvalidParameterValue(t *testing.T) {
	for _, tc := range []struct{ label, value, want string }{
		{"kube_tag", "1.33", "Invalid value \"1.33\" for label kube_tag: must be a Kubernetes version like v1.33.4."},
		{"boot_volume_size", "-1", "boot_volume_size: must be between 0 and 16384"},
		{"network_driver", "flannel", "must be one of calico, cilium"},
		{"auto_scaling_enabled", "yes", "must be true or false"},
		{"boot_volume_type", "ssd; rm -rf /", "must match"},
		{"calico_ipv4pool", "10.0.0.0/33", "must be a CIDR"},
		// Only extra_network_names is space-separated: in any other list
		// a space is inside an item, which the item's rules refuse.
		{"control_plane_availability_zones", "zone a", `item "zone a": must match`},
		{"no_proxy", "a.example b.example,c", `item "a.example b.example": must match`},
	} {
		_, err := DefaultLabelSchema().Parse(map[string]string{tc.label: tc.value})
		if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) {
			t.Errorf("%s=%s: err = %v, want InvalidParameterValue", tc.label, tc.value, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: message %q, want %q", tc.label, tc.value, err.Error(), tc.want)
		}
	}
}

// extra_network_names is comma- or space-separated (magnum-capi-helm
// writes it with spaces), for a cluster and for a nodegroup alike.
func TestExtraNetworkNamesSplitOnSpaces(t *testing.T) {
	l, err := DefaultLabelSchema().Parse(map[string]string{"extra_network_names": "a b,c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.List("extra_network_names"); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("cluster extra_network_names = %q, want [a b c]", got)
	}
	vs, err := nodeGroupExtraNetworks(&objects.NodeGroup{Name: "gpu", Labels: map[string]string{"extra_network_names": "a b,c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].name != "extraNetworks" || strings.Join(vs[0].v.([]string), "|") != "a|b|c" {
		t.Errorf("nodegroup extraNetworks = %#v, want [a b c]", vs)
	}
}

func TestOptionsValidateReportsEveryError(t *testing.T) {
	err := Options{NamespacePrefix: "Bad_Prefix", ClusterClassVersion: "v99",
		Labels: LabelSchema{{Name: "x", Type: LabelInt, Default: "nope"}, {Name: "x", Type: LabelString, SpaceSeparated: true}}}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"namespace prefix", "unknown ClusterClass version \"v99\"", "default of \"x\"", "\"x\" declared twice", "\"x\": only a list can be space-separated"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestNamesFit63Characters(t *testing.T) {
	c := &objects.Cluster{UUID: ptr("3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
		Name: ptr("My_Very_Long_Cluster_Name_That_Goes_On_And_On_For_Ever_And_Ever_More")}
	name := capiNameFor(c)
	if name != "my-very-long-cluster-3f2504" || !isDNSLabel(name) {
		t.Errorf("name = %q", name)
	}
	if n := capiNameFor(&objects.Cluster{UUID: ptr("0a2504e0-4f89"), Name: ptr("123")}); !isDNSLabel(n) || !strings.HasPrefix(n, "k8s-") {
		t.Errorf("numeric name = %q", n)
	}
	ns := namespaceFor("magnum", "5a3c1f4e8b9d4c2a9e7f6b5a4c3d2e1f")
	if ns != "magnum-5a3c1f4e8b9d4c2a9e7f6b5a4c3d2e1f" || !isDNSLabel(ns) {
		t.Errorf("namespace = %q", ns)
	}
	// CAPI child names: <cluster>-<md>-<5+5 hash chars>.
	ng := &objects.NodeGroup{Name: strings.Repeat("workers", 10)}
	if l := len(name) + 1 + len(mdNameFor(ng)) + 12; l > 63 {
		t.Errorf("child names would be %d characters", l)
	}
}

func TestClassBundlesParse(t *testing.T) {
	for _, v := range ClassVersions() {
		objs, err := classBundle(v)
		if err != nil {
			t.Fatal(err)
		}
		if last := objs[len(objs)-1]; last.GetKind() != "ClusterClass" || last.GetName() != className(v) {
			t.Errorf("%s: last object is %s %s, want the ClusterClass %s", v, last.GetKind(), last.GetName(), className(v))
		}
		for _, o := range objs {
			if _, err := resourceFor(o.GetAPIVersion(), o.GetKind()); err != nil {
				t.Error(err)
			}
		}
	}
	if ClassVersions()[len(ClassVersions())-1] != LatestClassVersion {
		t.Errorf("LatestClassVersion %s is not the newest of %v", LatestClassVersion, ClassVersions())
	}
}
