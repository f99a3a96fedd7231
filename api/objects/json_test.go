package objects

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/pyjson"
)

// TestAppendPrimitiveJSONIsTheMapEncoding: the direct encoder writes
// exactly the bytes of pyjson.Append(EncodeWith(...)) for every object,
// every supported version, with and without keys, with and without
// changes, for objects built here and for every primitive in the recorded
// frames.
// encodedVersions are the versions of each object the encoding tests
// write.
var encodedVersions = map[string][]string{
	NameCluster: {"1.19", "1.23", "1.24"}, NameClusterTemplate: {"1.18", "1.20", "1.21"},
	NameNodeGroup: {"1.0", "1.1", "1.2"}, NameX509KeyPair: {"1.2"}, NameMagnumService: {"1.0"},
	NameCertificate: {"1.2"}, NameQuota: {"1.0"}, NameStats: {"1.0"}, NameFederation: {"1.0"},
}

func TestAppendPrimitiveJSONIsTheMapEncoding(t *testing.T) {
	versions := encodedVersions
	var objs []Object
	for _, o := range fullObjects() {
		objs = append(objs, o)
		c := Clone(o)
		ResetChanges(c) // no changes at all
		objs = append(objs, c)
		ro := Clone(o)
		MarkLoadedReadOnly(ro) // as a loaded list holds them
		objs = append(objs, ro)
	}
	// Awkward values: non-ASCII and control characters, empty enums, nil
	// and empty collections, a secret set.
	odd := &Cluster{}
	odd.UUID = Str("\u00e9\U0001F600\x01\"\\</>")
	odd.Name = Str("")
	odd.Labels = map[string]string{"z": "1", "a": "\u2028", "": ""}
	odd.TrusteePassword = Str("s3cret")
	now := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.FixedZone("x", 3600))
	odd.CreatedAt = &now
	ng := &NodeGroup{UUID: "\u00fc", NodeAddresses: []string{}, Status: ""}
	ng.Labels = map[string]string{}
	objs = append(objs, odd, ng)
	// Years the hand-written timestamp layout pads or leaves to AppendFormat.
	for _, year := range []int{7, 999, 9999, 10000} {
		at := time.Date(year, 1, 2, 3, 4, 5, 0, time.UTC)
		objs = append(objs, &NodeGroup{UUID: "y", CreatedAt: &at})
	}
	for key, p := range vectorPrimitivesOrNone(t) {
		o, err := Decode(p)
		if err != nil {
			continue // the vectors also hold deliberately bad primitives
		}
		_ = key
		objs = append(objs, o)
	}
	n := 0
	for _, o := range objs {
		vs := append([]string{""}, versions[o.ObjName()]...)
		for _, v := range vs {
			for _, keep := range []bool{false, true} {
				opts := EncodeOptions{Version: v, KeepKeys: keep}
				m, err := EncodeWith(o, opts)
				want, werr := pyjson.Append(nil, m)
				if err != nil {
					werr = err
				}
				got, gerr := AppendPrimitiveJSON(nil, o, opts)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s@%q: errors differ: map %v, direct %v", o.ObjName(), v, werr, gerr)
				}
				if werr != nil {
					continue
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s@%q keep=%v:\n got %s\nwant %s", o.ObjName(), v, keep, got, want)
				}
				// The escaped form is the text escaped as a string body.
				eopts := opts
				eopts.Escaped = true
				esc, eerr := AppendPrimitiveJSON(nil, o, eopts)
				if wantEsc := pyjson.AppendStringBody(nil, string(want)); eerr != nil || !bytes.Equal(esc, wantEsc) {
					t.Fatalf("%s@%q keep=%v escaped (%v):\n got %s\nwant %s", o.ObjName(), v, keep, eerr, esc, wantEsc)
				}
				if !json.Valid(got) {
					t.Fatalf("invalid JSON: %s", got)
				}
				n++
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d encodings compared", n)
	}
	if got, _ := AppendPrimitiveJSON(nil, (*Cluster)(nil), EncodeOptions{}); string(got) != "null" {
		t.Fatalf("nil object: %s", got)
	}
}

// vectorPrimitivesOrNone is vectorPrimitives without skipping the test
// when the vectors are missing.
func vectorPrimitivesOrNone(t *testing.T) map[string]map[string]any {
	var out map[string]map[string]any
	t.Run("vectors", func(t *testing.T) { out = vectorPrimitives(t) })
	return out
}

func BenchmarkAppendPrimitiveJSON100Clusters(b *testing.B) {
	list := benchClusters()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = append(buf[:0], '[')
		for i, c := range list {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			var err error
			if buf, err = AppendPrimitiveJSON(buf, c, EncodeOptions{Version: "1.23"}); err != nil {
				b.Fatal(err)
			}
		}
		buf = append(buf, ']')
	}
}

// TestChangesSeeEveryKindOfEdit covers the typed comparison Changes uses:
// an edit of each field kind is a change, writing back the loaded value is
// not.
func TestChangesSeeEveryKindOfEdit(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	load := func() *NodeGroup {
		ng := &NodeGroup{UUID: "u", Name: "n", DockerVolumeSize: ptr(int64(10)), Labels: map[string]string{"a": "1"},
			FlavorID: Str("m1"), NodeAddresses: []string{"10.0.0.1"}, NodeCount: 2, Status: CreateComplete,
			IsDefault: true, CreatedAt: &t0}
		ResetChanges(ng)
		return ng
	}
	edits := map[string]func(*NodeGroup){
		"labels":             func(ng *NodeGroup) { ng.Labels["a"] = "2" },
		"node_addresses":     func(ng *NodeGroup) { ng.NodeAddresses[0] = "10.0.0.2" },
		"docker_volume_size": func(ng *NodeGroup) { *ng.DockerVolumeSize = 11 },
		"flavor_id":          func(ng *NodeGroup) { ng.FlavorID = nil },
		"node_count":         func(ng *NodeGroup) { ng.NodeCount = 3 },
		"status":             func(ng *NodeGroup) { ng.Status = "" },
		"is_default":         func(ng *NodeGroup) { ng.IsDefault = false },
		"created_at":         func(ng *NodeGroup) { t1 := t0.Add(time.Second); ng.CreatedAt = &t1 },
		"name":               func(ng *NodeGroup) { ng.Name = "m" },
	}
	for field, edit := range edits {
		ng := load()
		edit(ng)
		if got := Changes(ng); len(got) != 1 || got[0] != field {
			t.Errorf("edit of %s: changes %v", field, got)
		}
	}
	ng := load()
	ng.Labels = map[string]string{"a": "1"}
	ng.NodeAddresses = []string{"10.0.0.1"}
	ng.DockerVolumeSize = ptr(int64(10))
	t1 := t0.In(time.FixedZone("x", 7200)).Add(400 * time.Millisecond) // same instant to the second
	ng.CreatedAt = &t1
	if got := Changes(ng); len(got) != 0 {
		t.Errorf("equal values reported as changes: %v", got)
	}
}

func ptr[T any](v T) *T { return &v }
