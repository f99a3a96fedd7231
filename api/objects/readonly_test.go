package objects

import (
	"bytes"
	"slices"
	"testing"
)

// TestReadOnlyLoadIsAResetWithoutSnapshot: an object marked loaded
// read-only reports the same set fields and changes as one reset after
// loading, and encodes to the same bytes at every version.
func TestReadOnlyLoadIsAResetWithoutSnapshot(t *testing.T) {
	versions := encodedVersions
	for _, o := range append(fullObjects(), &Cluster{}, &NodeGroup{}) {
		reset, ro := Clone(o), Clone(o)
		ResetChanges(reset)
		MarkLoadedReadOnly(ro)
		if !IsReadOnly(ro) || IsReadOnly(reset) {
			t.Fatalf("%s: IsReadOnly %v/%v", o.ObjName(), IsReadOnly(ro), IsReadOnly(reset))
		}
		if o.ObjName() == NameCluster {
			ro = Clone(ro) // a clone stays read-only
		}
		if got, want := Changes(ro), Changes(reset); !slices.Equal(got, want) {
			t.Errorf("%s: changes %v, want %v", o.ObjName(), got, want)
		}
		for _, f := range classOf(o).fields {
			if IsSet(ro, f.name) != IsSet(reset, f.name) {
				t.Errorf("%s.%s: set %v, want %v", o.ObjName(), f.name, IsSet(ro, f.name), IsSet(reset, f.name))
			}
		}
		for _, v := range append([]string{""}, versions[o.ObjName()]...) {
			for _, keep := range []bool{false, true} {
				opts := EncodeOptions{Version: v, KeepKeys: keep}
				want, werr := AppendPrimitiveJSON(nil, reset, opts)
				got, err := AppendPrimitiveJSON(nil, ro, opts)
				if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
					t.Errorf("%s at %q keep=%v:\n got %s (%v)\nwant %s (%v)", o.ObjName(), v, keep, got, err, want, werr)
				}
			}
		}
	}
}

// TestReadOnlyBecomesOrdinaryWhenTracked: ResetChanges, MarkChanged and
// Unset turn a read-only object into an ordinary one whose later edits
// are seen.
func TestReadOnlyBecomesOrdinaryWhenTracked(t *testing.T) {
	base := fullObjects()[0].(*Cluster)
	base.ClusterTemplate = nil

	c := Clone(base)
	MarkLoadedReadOnly(c)
	ResetChanges(c, "status") // a partial reset of an unchanged object
	*c.Name = "renamed"
	c.CreateTimeout = objectsTestInt(9)
	if IsReadOnly(c) || !slices.Equal(Changes(c), []string{"name", "create_timeout"}) {
		t.Fatalf("after a partial reset: read-only %v, changes %v", IsReadOnly(c), Changes(c))
	}

	c = Clone(base)
	MarkLoadedReadOnly(c)
	MarkChanged(c, "status_reason")
	if IsReadOnly(c) || !slices.Equal(Changes(c), []string{"status_reason"}) {
		t.Fatalf("after MarkChanged: read-only %v, changes %v", IsReadOnly(c), Changes(c))
	}

	c = Clone(base)
	MarkLoadedReadOnly(c)
	Unset(c, "labels")
	if IsReadOnly(c) || IsSet(c, "labels") || !IsSet(c, "name") || len(Changes(c)) != 0 {
		t.Fatalf("after Unset: read-only %v, labels set %v, changes %v", IsReadOnly(c), IsSet(c, "labels"), Changes(c))
	}
}

func objectsTestInt(v int64) *int64 { return &v }
