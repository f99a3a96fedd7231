package objects

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
)

// vectorsDir holds the wire vectors captured from the Python reference.
// vectorsDir holds the recorded frames (a copy of the shared reference
// wire/vectors, kept with the transport's tests).
const vectorsDir = "../oslo/testdata/vectors"

// vectorPrimitives returns every object primitive found in the
// call_object_* vectors, keyed by "<file>#<n>".
func vectorPrimitives(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(vectorsDir, "call_object_*.json"))
	if len(files) == 0 {
		t.Fatal("wire vectors not found in " + vectorsDir + ": they are part of the repository")
	}
	out := map[string]map[string]any{}
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		var msg any
		if err := json.Unmarshal(v.Message, &msg); err != nil {
			t.Fatal(err)
		}
		n := 0
		var walk func(any)
		walk = func(x any) {
			switch y := x.(type) {
			case map[string]any:
				if IsPrimitive(y) {
					out[filepath.Base(fn)+"#"+string(rune('0'+n))] = y
					n++
					return
				}
				for _, e := range y {
					walk(e)
				}
			case []any:
				for _, e := range y {
					walk(e)
				}
			}
		}
		walk(msg)
	}
	return out
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVectorPrimitivesRoundTripByteForByte(t *testing.T) {
	prims := vectorPrimitives(t)
	if len(prims) < 10 {
		t.Fatalf("expected at least 10 primitives in the vectors, found %d", len(prims))
	}
	for name, p := range prims {
		t.Run(name, func(t *testing.T) {
			raw, _ := json.Marshal(p)
			o, err := Decode(raw)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			ver := p[KeyVersion].(string)
			if o.meta().ReceivedVersion() != ver {
				t.Errorf("received version %q, want %q", o.meta().ReceivedVersion(), ver)
			}
			got, err := Encode(o, "", nil)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			wantChanges, _ := p[KeyChanges].([]any)
			gotChanges, _ := got[KeyChanges].([]string)
			var ws []string
			for _, c := range wantChanges {
				ws = append(ws, c.(string))
			}
			sort.Strings(ws)
			gs := slices.Clone(gotChanges)
			sort.Strings(gs)
			if !slices.Equal(ws, gs) {
				t.Errorf("changes = %v, want %v", gs, ws)
			}
			delete(p, KeyChanges)
			delete(got, KeyChanges)
			if w, g := normalize(t, p), normalize(t, got); !reflect.DeepEqual(w, g) {
				t.Errorf("re-encoded primitive differs\n got: %v\nwant: %v", g, w)
			}
		})
	}
}

// errorClass returns the Python class name carried by err.
func errorClass(err error) string {
	var e *exception.Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ""
}
