package drivers_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

type fakeDriver struct {
	drivers.Unimplemented
	name string
	keys []drivers.Key
}

func (f *fakeDriver) Name() string            { return f.name }
func (f *fakeDriver) Provides() []drivers.Key { return f.keys }

func key(os string) drivers.Key { return drivers.Key{ServerType: "vm", OS: os, COE: "kubernetes"} }

func TestNewRegistryRejectsDuplicates(t *testing.T) {
	a := &fakeDriver{name: "a", keys: []drivers.Key{key("x")}}
	for _, tc := range []struct {
		name     string
		disabled []string
		ds       []drivers.Driver
		wantErr  bool
	}{
		{"distinct", nil, []drivers.Driver{a, &fakeDriver{name: "b", keys: []drivers.Key{key("y")}}}, false},
		{"same key", nil, []drivers.Driver{a, &fakeDriver{name: "b", keys: []drivers.Key{key("x")}}}, true},
		{"same name", nil, []drivers.Driver{a, &fakeDriver{name: "a", keys: []drivers.Key{key("y")}}}, true},
		{"same name one disabled", []string{"a"}, []drivers.Driver{a, &fakeDriver{name: "a"}}, true},
		{"same key one disabled", []string{"b"}, []drivers.Driver{a, &fakeDriver{name: "b", keys: []drivers.Key{key("x")}}}, false},
		{"empty name", nil, []drivers.Driver{&fakeDriver{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := drivers.NewRegistry(tc.disabled, tc.ds...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestForTemplateSelectsByNameThenKey(t *testing.T) {
	a := &fakeDriver{name: "a", keys: []drivers.Key{key("x")}}
	b := &fakeDriver{name: "b", keys: []drivers.Key{key("y")}}
	off := &fakeDriver{name: "off", keys: []drivers.Key{key("z")}}
	r, err := drivers.NewRegistry([]string{"off"}, a, b, off)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Names = %v", got)
	}
	const loaded = " is not supported by any loaded cluster driver. Loaded drivers support: (vm, x, kubernetes), (vm, y, kubernetes)."
	for _, tc := range []struct {
		name      string
		ct        *objects.ClusterTemplate
		want      drivers.Driver
		wantClass exception.Class
		wantMsg   string
	}{
		{"by key", &objects.ClusterTemplate{ServerType: objects.Str("vm"), ClusterDistro: objects.Str("y"), Coe: "kubernetes"}, b, 0, ""},
		{"name wins over key", &objects.ClusterTemplate{Driver: objects.Str("a"), ServerType: objects.Str("vm"), ClusterDistro: objects.Str("y"), Coe: "kubernetes"}, a, 0, ""},
		{"empty name falls back to key", &objects.ClusterTemplate{Driver: objects.Str(""), ServerType: objects.Str("vm"), ClusterDistro: objects.Str("x"), Coe: "kubernetes"}, a, 0, ""},
		{"unknown key", &objects.ClusterTemplate{ServerType: objects.Str("bm"), ClusterDistro: objects.Str("x"), Coe: "kubernetes"}, nil, exception.ClassClusterTypeNotSupported, "Cluster type (bm, x, kubernetes)" + loaded},
		{"null distro", &objects.ClusterTemplate{ServerType: objects.Str("vm"), Coe: "kubernetes"}, nil, exception.ClassClusterTypeNotSupported, "Cluster type (vm, None, kubernetes)" + loaded},
		{"disabled by key", &objects.ClusterTemplate{ServerType: objects.Str("vm"), ClusterDistro: objects.Str("z"), Coe: "kubernetes"}, nil, exception.ClassClusterTypeNotSupported, "Cluster type (vm, z, kubernetes)" + loaded},
		{"disabled by name", &objects.ClusterTemplate{Driver: objects.Str("off")}, nil, exception.ClassClusterDriverNotSupported,
			"Cluster driver (off) not supported: it is listed in [drivers]/disabled_drivers."},
		{"unknown name", &objects.ClusterTemplate{Driver: objects.Str("nope")}, nil, exception.ClassClusterDriverNotSupported, "Cluster driver (nope) not supported."},
		{"nil template", nil, nil, exception.ClassClusterTypeNotSupported, "Cluster type (None, None, None)" + loaded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := r.ForTemplate(tc.ct)
			if tc.want != nil {
				if err != nil || d != tc.want {
					t.Fatalf("got %v, %v; want %s", d, err, tc.want.Name())
				}
				return
			}
			if !errors.Is(err, tc.wantClass.New(nil)) || !errors.Is(err, exception.NotSupported("")) {
				t.Fatalf("err = %v, want %s", err, tc.wantClass)
			}
			if err.Error() != tc.wantMsg {
				t.Fatalf("message = %q, want %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

// TestForTemplateWithoutDrivers: Magnum 2026.2's wording when no driver is
// loaded at all.
func TestForTemplateWithoutDrivers(t *testing.T) {
	r, err := drivers.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ForTemplate(&objects.ClusterTemplate{ServerType: objects.Str("vm"), ClusterDistro: objects.Str("ubuntu"), Coe: "kubernetes"})
	const want = "Cluster type (vm, ubuntu, kubernetes) is not supported by any loaded cluster driver. " +
		"Loaded drivers support: none (no cluster drivers are loaded)."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

type aliasedDriver struct {
	fakeDriver
	aliases []string
}

func (a *aliasedDriver) Aliases() []string { return a.aliases }

// A template naming another driver's entry point selects the driver that
// serves it as an alias; an alias never shadows a driver's own name, two
// drivers never share one, and a disabled alias selects nothing.
func TestForTemplateSelectsByAlias(t *testing.T) {
	capi := &aliasedDriver{fakeDriver: fakeDriver{name: "k8s_capi_v1", keys: []drivers.Key{key("ubuntu")}},
		aliases: []string{"k8s_cluster_api_ubuntu", "k8s_capi_helm_v1", "k8s_cluster_api_flatcar"}}
	other := &fakeDriver{name: "simulated", keys: []drivers.Key{key("simulated")}}
	r, err := drivers.NewRegistry([]string{"k8s_cluster_api_flatcar"}, capi, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k8s_capi_v1", "k8s_cluster_api_ubuntu", "k8s_capi_helm_v1"} {
		d, err := r.ForTemplate(&objects.ClusterTemplate{Driver: objects.Str(name), Coe: "kubernetes"})
		if err != nil || d != capi {
			t.Errorf("template naming %s: driver %v, %v; want k8s_capi_v1", name, d, err)
		}
	}
	if _, err := r.ForTemplate(&objects.ClusterTemplate{Driver: objects.Str("k8s_cluster_api_flatcar"), Coe: "kubernetes"}); err == nil {
		t.Error("a disabled alias selected a driver")
	}
	if got := r.Names(); !slices.Equal(got, []string{"k8s_capi_v1", "simulated"}) {
		t.Errorf("Names = %v: aliases are not drivers", got)
	}

	shadow := &aliasedDriver{fakeDriver: fakeDriver{name: "a", keys: []drivers.Key{key("x")}}, aliases: []string{"simulated"}}
	if _, err := drivers.NewRegistry(nil, shadow, other); err == nil {
		t.Error("an alias shadowing another driver's name was accepted")
	}
	twice := &aliasedDriver{fakeDriver: fakeDriver{name: "b", keys: []drivers.Key{key("y")}}, aliases: []string{"k8s_capi_helm_v1"}}
	if _, err := drivers.NewRegistry(nil, capi, twice); err == nil {
		t.Error("two drivers sharing an alias were accepted")
	}
}
