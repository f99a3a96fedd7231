package capi

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// The management cluster's egress is added to a narrow allowed list, and
// never narrows an open one.
func TestManagementCIDRsJoinTheAllowedList(t *testing.T) {
	build := func(labels map[string]string) any {
		l, err := DefaultLabelSchema().Parse(labels)
		if err != nil {
			t.Fatal(err)
		}
		c, tmpl, ngs := defaultMagnumCluster()
		c.MasterLBEnabled = true
		cl, err := desiredCluster(spec{Cluster: c, Template: tmpl, NodeGroups: ngs, Labels: l, Namespace: "ns", Name: "n",
			ClassVersion: LatestClassVersion, IdentityRef: "x", ManagementCIDRs: []string{"203.0.113.0/28", "192.0.2.0/24"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range cl.Spec.Topology.Variables {
			if v.Name == "apiServerLoadBalancer" {
				return string(v.Value.Raw)
			}
		}
		t.Fatal("no apiServerLoadBalancer variable")
		return nil
	}
	if got := build(map[string]string{"api_master_lb_allowed_cidrs": "192.0.2.0/24"}); !strings.Contains(got.(string),
		`"allowedCIDRs":["192.0.2.0/24","203.0.113.0/28"]`) {
		t.Errorf("narrow list: %s", got)
	}
	if got := build(nil); !strings.Contains(got.(string), `"allowedCIDRs":[]`) {
		t.Errorf("open list: %s", got)
	}
}

// Without a floating IP for its API a cluster is refused at create,
// unless the operator says the management cluster is routed to it.
func TestPrivateAPIRefusedUnlessRouted(t *testing.T) {
	c := &objects.Cluster{FloatingIPEnabled: true, MasterLBEnabled: true}
	l, _ := DefaultLabelSchema().Parse(map[string]string{"master_lb_floating_ip_enabled": "false"})
	err := Options{}.checkAPIReachable(c, l)
	if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) || !strings.Contains(err.Error(), "management_network_routed") {
		t.Fatalf("err = %v", err)
	}
	if err := (Options{ManagementNetworkRouted: true}).checkAPIReachable(c, l); err != nil {
		t.Errorf("routed: %v", err)
	}
	open, _ := DefaultLabelSchema().Parse(nil)
	if err := (Options{}).checkAPIReachable(c, open); err != nil {
		t.Errorf("floating IP: %v", err)
	}
	if err := (Options{}).checkAPIReachable(&objects.Cluster{}, open); err == nil {
		t.Error("no load balancer, no floating IP: accepted")
	}
}

// Site-wide label defaults apply beneath the template's and cluster's
// labels; an unknown label or a bad value stops the driver's start.
func TestSiteLabelDefaults(t *testing.T) {
	o := Options{LabelDefaults: map[string]string{"boot_volume_size": "20", "http_proxy": "http://proxy:3128"}}.withDefaults()
	l, err := o.Labels.Parse(map[string]string{"boot_volume_size": "40"})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := l.Int("boot_volume_size"); n != 40 || l.String("http_proxy") != "http://proxy:3128" {
		t.Errorf("boot_volume_size %d, http_proxy %q", n, l.String("http_proxy"))
	}
	if d := DefaultLabelSchema(); d[3].Name != "boot_volume_size" || d[3].Default != "0" {
		t.Errorf("the default schema changed: %+v", d[3])
	}
	err = Options{LabelDefaults: map[string]string{"no_such_label": "1", "boot_volume_size": "big"},
		ManagementCIDRs: []string{"10.0.0.0/40"}}.Validate()
	for _, want := range []string{`label default "no_such_label"`, `default of "boot_volume_size"`, `management CIDR "10.0.0.0/40"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
	if !reflect.DeepEqual(allowedCIDRs(nil, []string{"x"}), []string(nil)) {
		t.Error("an open list was narrowed")
	}
}

func TestFlatcarRefusedAtCreate(t *testing.T) {
	err := checkBootstrap(&objects.ClusterTemplate{ClusterDistro: ptr("flatcar")})
	if !errors.Is(err, exception.ClassInvalidParameterValue.New(nil)) || !strings.Contains(err.Error(), "Ignition") {
		t.Fatalf("err = %v", err)
	}
	for _, ok := range []*objects.ClusterTemplate{nil, {}, {ClusterDistro: ptr("ubuntu")}, {ClusterDistro: ptr("rockylinux")}} {
		if err := checkBootstrap(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}
