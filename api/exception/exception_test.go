package exception

import (
	"errors"
	"fmt"
	"testing"
)

func TestNewFormatsMessageAndCode(t *testing.T) {
	tests := []struct {
		class  string
		kwargs map[string]any
		msg    string
		code   int
	}{
		{"ClusterNotFound", map[string]any{"cluster": "abc"}, "Cluster abc could not be found.", 404},
		{"NotSupported", map[string]any{"operation": "X"}, "X is not supported.", 400},
		{"ClusterAlreadyExists", map[string]any{"uuid": "u"}, "A cluster with UUID u already exists.", 409},
		{"InvalidClusterSize", map[string]any{"expect_size": 3, "size": 2.0, "discovery_url": "d"},
			"Expected cluster size 3 but get cluster size 2 from 'd'.", 400},
		{"ClusterNotFound", nil, "Cluster %(cluster)s could not be found.", 404},
		{"NoSuchClass", nil, "An unknown exception occurred.", 500},
	}
	for _, tt := range tests {
		t.Run(tt.class, func(t *testing.T) {
			e := New(tt.class, tt.kwargs)
			if e.Message != tt.msg || e.Code != tt.code || e.Module != ModuleMagnum {
				t.Fatalf("got %q %d %s, want %q %d", e.Message, e.Code, e.Module, tt.msg, tt.code)
			}
		})
	}
}

func TestIsMatchesAncestors(t *testing.T) {
	err := fmt.Errorf("loading: %w", ClusterNotFound("x"))
	if !errors.Is(err, New("ResourceNotFound", nil)) || !errors.Is(err, New("ObjectNotFound", nil)) {
		t.Fatal("ClusterNotFound should be a ResourceNotFound and an ObjectNotFound")
	}
	if errors.Is(err, New("Conflict", nil)) {
		t.Fatal("ClusterNotFound is not a Conflict")
	}
	if errors.Is(Builtin("TypeError", "x"), New("MagnumException", nil)) {
		t.Fatal("a builtin is not a Magnum exception")
	}
}

func TestWithMessageKeepsKwargs(t *testing.T) {
	e := NotSupportedMessage("Credential rotation is not supported by driver.")
	if e.Message != "Credential rotation is not supported by driver." || e.Code != 400 {
		t.Fatalf("got %q %d", e.Message, e.Code)
	}
	if e.Kwargs["message"] != "Credential rotation is not supported by driver." {
		t.Fatalf("kwargs %v", e.Kwargs)
	}
}

func TestWrapPlainError(t *testing.T) {
	e := Wrap(errors.New("boom"))
	if e.Class != "MagnumException" || e.Message != "boom" || e.Code != 500 {
		t.Fatalf("got %+v", e)
	}
}

// TestCatalogueIsMagnum2026WithOlderClasses: the catalogue is Magnum
// 23.0.0's (new classes and wordings), and keeps the classes only 15.0.1
// has, so that a 15.0.1 peer can still be answered with them.
func TestCatalogueIsMagnum2026WithOlderClasses(t *testing.T) {
	for _, tt := range []struct {
		class  string
		kwargs map[string]any
		msg    string
	}{
		{"ClusterDriverNotSupported", map[string]any{"driver_name": "k8s_x"}, "Cluster driver (k8s_x) not supported."},
		{"ClusterTypeNotSupported", map[string]any{"server_type": "vm", "os": "x", "coe": "kubernetes",
			"supported_cluster_types": "(vm, y, kubernetes)"},
			"Cluster type (vm, x, kubernetes) is not supported by any loaded cluster driver. Loaded drivers support: (vm, y, kubernetes)."},
		{"MasterNGResizeNotSupported", nil, "Resizing the master nodegroup is not supported by this driver."},
		{"MasterNGSizeInvalid", map[string]any{"requested_size": 2}, "master nodegroup size of 2 is invalid, size cannot be an even number."},
		{"TrusteeOrTrustToClusterFailed", map[string]any{"cluster_uuid": "u"}, "Failed to create trustee or trust for Cluster: u"},
	} {
		c, _ := Lookup(tt.class)
		e := c.New(tt.kwargs)
		if e.Class != tt.class || e.Message != tt.msg || e.Code != 400 && tt.class != "TrusteeOrTrustToClusterFailed" {
			t.Errorf("%s: got %s %q %d, want %q", tt.class, e.Class, e.Message, e.Code, tt.msg)
		}
	}
	if !IsSubclass("ClusterDriverNotSupported", ClassNotSupported) || !IsSubclass("MasterNGSizeInvalid", ClassInvalidParameterValue) {
		t.Error("the 23.0.0 classes should keep their parents")
	}
}
