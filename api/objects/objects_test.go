package objects

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
)

func TestChangesTrackAssignmentsAfterReset(t *testing.T) {
	c := &Cluster{ID: 1, UUID: Str("u"), Status: CreateComplete}
	// floating_ip_enabled's false is not its default (true): written in
	// Go, it counts.
	if got := Changes(c); !slices.Equal(got, []string{"id", "uuid", "status", "floating_ip_enabled"}) {
		t.Fatalf("changes of a new object = %v, want the non-zero fields and floating_ip_enabled", got)
	}
	ResetChanges(c)
	if got := Changes(c); len(got) != 0 {
		t.Fatalf("changes after reset = %v, want none", got)
	}
	for _, f := range []string{"name", "stack_id", "labels", "created_at", "floating_ip_enabled"} {
		if !IsSet(c, f) {
			t.Errorf("%s not set after a full reset", f)
		}
	}
	if IsSet(c, "cluster_template") {
		t.Error("cluster_template set although nil")
	}
	c.Status = UpdateInProgress
	c.Name = Str("n")
	c.Labels = map[string]string{"a": "b"}
	if got := Changes(c); !slices.Equal(got, []string{"name", "labels", "status"}) {
		t.Fatalf("changes = %v", got)
	}
	c.Labels["a"] = "c"
	ResetChanges(c, "labels")
	if got := Changes(c); !slices.Equal(got, []string{"name", "status"}) {
		t.Fatalf("changes after partial reset = %v", got)
	}
	c.Labels["a"] = "d" // in-place mutation of a map is a change too
	if !HasChanged(c, "labels") {
		t.Error("in-place map mutation not detected")
	}
}

func TestMarkChangedMakesNullAssignmentsVisible(t *testing.T) {
	c := &Cluster{}
	if IsSet(c, "stack_id") {
		t.Fatal("stack_id set on an empty object")
	}
	MarkChanged(c, "stack_id", "no_such_field")
	if !IsSet(c, "stack_id") || !slices.Equal(Changes(c), []string{"stack_id", "floating_ip_enabled"}) {
		t.Fatalf("changes = %v", Changes(c))
	}
	p, err := Encode(c, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	data := p[KeyData].(map[string]any)
	if v, ok := data["stack_id"]; !ok || v != nil {
		t.Fatalf("stack_id must be sent as null, data = %v", data)
	}
	Unset(c, "stack_id", "floating_ip_enabled")
	if IsSet(c, "stack_id") || len(Changes(c)) != 0 {
		t.Fatal("Unset left the field set")
	}
}

func TestChildObjectChangesPropagate(t *testing.T) {
	ct := &ClusterTemplate{ID: 2, Name: Str("a")}
	ResetChanges(ct)
	c := &Cluster{ID: 1, ClusterTemplate: ct}
	ResetChanges(c)
	if len(Changes(c)) != 0 {
		t.Fatalf("changes = %v", Changes(c))
	}
	ct.Name = Str("b")
	if !slices.Equal(Changes(c), []string{"cluster_template"}) {
		t.Fatalf("child change not seen: %v", Changes(c))
	}
	ResetChanges(ct)
	c.ClusterTemplate = &ClusterTemplate{ID: 3}
	if !slices.Equal(Changes(c), []string{"cluster_template"}) {
		t.Fatalf("child replacement not seen: %v", Changes(c))
	}
}

func TestDecodeKeepsDeclaredChangesAndSetFields(t *testing.T) {
	raw := `{"magnum_object.name":"NodeGroup","magnum_object.namespace":"magnum","magnum_object.version":"1.1",
	"magnum_object.data":{"uuid":"x","name":"n","node_count":"4","max_node_count":null,"labels":{"a":1}},
	"magnum_object.changes":["node_count","bogus"]}`
	ng, err := DecodeNodeGroup([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if ng.NodeCount != 4 || ng.Labels["a"] != "1" || ng.ReceivedVersion() != "1.1" {
		t.Fatalf("decoded %+v", ng)
	}
	if !IsSet(ng, "max_node_count") || IsSet(ng, "cluster_id") {
		t.Error("set fields wrong: max_node_count must be set (null), cluster_id unset")
	}
	if !slices.Equal(Changes(ng), []string{"node_count"}) {
		t.Fatalf("changes = %v", Changes(ng))
	}
	ng.Status = UpdateInProgress
	if !slices.Equal(Changes(ng), []string{"node_count", "status"}) {
		t.Fatalf("changes = %v", Changes(ng))
	}
	if _, err := DecodeCluster([]byte(raw)); err == nil {
		t.Fatal("DecodeCluster accepted a NodeGroup")
	}
}

func TestVersionsEveryReleaseSpeaksRoundTrip(t *testing.T) {
	supported := map[string][]string{
		NameCluster: {"1.19", "1.23", "1.24"}, NameClusterTemplate: {"1.18", "1.20", "1.21"},
		NameNodeGroup: {"1.0", "1.1", "1.2"}, NameX509KeyPair: {"1.2"}, NameMagnumService: {"1.0"},
		NameCertificate: {"1.2"}, NameQuota: {"1.0"}, NameStats: {"1.0"}, NameFederation: {"1.0"},
	}
	for _, o := range fullObjects() {
		for _, v := range supported[o.ObjName()] {
			t.Run(o.ObjName()+"@"+v, func(t *testing.T) {
				p, err := EncodeWith(o, EncodeOptions{Version: v, KeepKeys: true})
				if err != nil {
					t.Fatal(err)
				}
				if p[KeyVersion] != v {
					t.Fatalf("version %v, want %s", p[KeyVersion], v)
				}
				b, _ := json.Marshal(p)
				back, err := Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				if back.meta().ReceivedVersion() != v {
					t.Fatalf("received version %q", back.meta().ReceivedVersion())
				}
				p2, err := EncodeWith(back, EncodeOptions{KeepKeys: true})
				if err != nil {
					t.Fatal(err)
				}
				if a, b := normalize(t, p), normalize(t, p2); !jsonEqual(a, b) {
					t.Fatalf("round trip differs\n%v\n%v", a, b)
				}
				data := p[KeyData].(map[string]any)
				ci := classes[o.ObjName()]
				for i := range ci.fields {
					f := &ci.fields[i]
					_, present := data[f.name]
					if !f.knows(mustVersion(v)) && present {
						t.Errorf("field %s sent at %s, which does not know it", f.name, v)
					}
				}
			})
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestVersionSpecificFields(t *testing.T) {
	objs := fullObjects()
	cl, ct, ng := objs[0], objs[1], objs[2]
	cases := []struct {
		o       Object
		ver     string
		present []string
		absent  []string
	}{
		{cl, "1.23", []string{"trust_id", "trustee_username", "trustee_user_id"}, []string{"trustee_password"}},
		{cl, "1.24", nil, []string{"trust_id", "trustee_username", "trustee_user_id", "trustee_password"}},
		{ct, "1.20", nil, []string{"driver"}},
		{ct, "1.21", []string{"driver"}, nil},
		{ng, "1.1", nil, []string{"node_labels", "node_taints"}},
		{ng, "1.2", []string{"node_labels", "node_taints"}, nil},
	}
	for _, c := range cases {
		p, err := Encode(c.o, c.ver, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := p[KeyData].(map[string]any)
		for _, f := range c.present {
			if _, ok := data[f]; !ok {
				t.Errorf("%s@%s: %s missing", c.o.ObjName(), c.ver, f)
			}
		}
		for _, f := range c.absent {
			if _, ok := data[f]; ok {
				t.Errorf("%s@%s: %s present", c.o.ObjName(), c.ver, f)
			}
		}
	}
}

func TestChildObjectFollowsManifestOrParentRelease(t *testing.T) {
	cl := fullObjects()[0]
	for _, c := range []struct {
		ver      string
		manifest map[string]string
		want     string
	}{
		{"1.23", nil, "1.20"},
		{"1.24", nil, "1.21"},
		{"1.23", map[string]string{"Cluster": "1.23", "ClusterTemplate": "1.21"}, "1.21"},
	} {
		p, err := Encode(cl, c.ver, c.manifest)
		if err != nil {
			t.Fatal(err)
		}
		child := p[KeyData].(map[string]any)["cluster_template"].(map[string]any)
		if child[KeyVersion] != c.want {
			t.Errorf("Cluster %s manifest %v: child at %v, want %s", c.ver, c.manifest, child[KeyVersion], c.want)
		}
		_, hasDriver := child[KeyData].(map[string]any)["driver"]
		if hasDriver != (c.want == "1.21") {
			t.Errorf("child at %s: driver present = %v", c.want, hasDriver)
		}
	}
}

func TestSecretsNeverLeaveExceptX509OnRequest(t *testing.T) {
	objs := fullObjects()
	cl, kp := objs[0], objs[3]
	for _, opts := range []EncodeOptions{{}, {KeepKeys: true}} {
		p, err := EncodeWith(cl, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p[KeyData].(map[string]any)["trustee_password"]; ok {
			t.Errorf("trustee_password sent with %+v", opts)
		}
	}
	p, _ := Encode(kp, "", nil)
	data := p[KeyData].(map[string]any)
	if _, ok := data["private_key"]; ok {
		t.Error("private_key sent by default")
	}
	if _, ok := data["private_key_passphrase"]; ok {
		t.Error("private_key_passphrase sent by default")
	}
	p, _ = EncodeWith(kp, EncodeOptions{KeepKeys: true})
	data = p[KeyData].(map[string]any)
	if data["private_key"] != "KEY" || data["private_key_passphrase"] != "PASS" {
		t.Errorf("KeepKeys did not send the keys: %v", data)
	}
}

func TestIncompatibleVersionsAsOsloSendsThem(t *testing.T) {
	for _, c := range []struct{ name, ver, class string }{
		{"Cluster", "1.25", "IncompatibleObjectVersion"},
		{"Cluster", "2.0", "IncompatibleObjectVersion"},
		{"NodeGroup", "1.3", "IncompatibleObjectVersion"},
		{"Bay", "1.0", "UnsupportedObjectError"},
	} {
		raw := map[string]any{KeyName: c.name, KeyNamespace: "magnum", KeyVersion: c.ver, KeyData: map[string]any{}}
		_, err := Decode(raw)
		var e *exception.Error
		if !errors.As(err, &e) || e.Class != c.class || e.Module != exception.ModuleOVO {
			t.Fatalf("%s %s: %v", c.name, c.ver, err)
		}
		if c.class == "IncompatibleObjectVersion" {
			want := "Version " + c.ver + " of " + c.name + " is not supported, supported version is " + NewestVersion(c.name)
			if e.Message != want || e.Kwargs["objname"] != c.name || e.Kwargs["objver"] != c.ver ||
				e.Kwargs["supported"] != NewestVersion(c.name) {
				t.Errorf("error %q %v", e.Message, e.Kwargs)
			}
			if _, err := Encode(&Cluster{}, c.ver, nil); c.name == "Cluster" && err == nil {
				t.Errorf("Encode at %s accepted", c.ver)
			}
		}
	}
}

func TestDateTimeCoercion(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-29T21:50:15Z":             "2026-11-29T21:50:15Z",
		"2026-11-29T21:50:15.999999Z":      "2026-11-29T21:50:15Z",
		"2026-11-29T23:50:15.5+02:00":      "2026-11-29T21:50:15Z",
		"2026-11-29T21:50:15":              "2026-11-29T21:50:15Z",
		"2026-11-29 21:50:15.123456":       "2026-11-29T21:50:15Z",
		"2026-11-29T16:50:15.000000-05:00": "2026-11-29T21:50:15Z",
	} {
		raw := map[string]any{KeyName: "Quota", KeyNamespace: "magnum", KeyVersion: "1.0",
			KeyData: map[string]any{"created_at": in}}
		q, err := DecodeQuota(raw)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		p, _ := Encode(q, "", nil)
		if got := p[KeyData].(map[string]any)["created_at"]; got != want {
			t.Errorf("%s encoded as %v, want %s", in, got, want)
		}
	}
	raw := map[string]any{KeyName: "Quota", KeyNamespace: "magnum", KeyVersion: "1.0",
		KeyData: map[string]any{"created_at": "yesterday"}}
	if _, err := Decode(raw); err == nil {
		t.Error("accepted a bad date")
	}
}

func TestCloneIsDeepAndKeepsTracking(t *testing.T) {
	cl := fullObjects()[0].(*Cluster)
	c2 := Clone(cl)
	if !slices.Equal(Changes(c2), Changes(cl)) {
		t.Fatalf("clone changes %v, original %v", Changes(c2), Changes(cl))
	}
	c2.Labels["a"] = "z"
	*c2.Name = "other"
	c2.ClusterTemplate.Labels["kube_tag"] = "x"
	if cl.Labels["a"] != "b" || *cl.Name != "c1" || cl.ClusterTemplate.Labels["kube_tag"] != "v1.23.3" {
		t.Fatal("clone shares memory with the original")
	}
	if *c2.TrusteePassword != "SECRET" {
		t.Fatal("clone lost a secret")
	}
}

func TestEnumValidatedOnEncode(t *testing.T) {
	if _, err := Encode(&Cluster{Status: "NOPE"}, "", nil); err == nil {
		t.Fatal("invalid status encoded")
	}
}

func BenchmarkEncode100Clusters(b *testing.B) {
	list := benchClusters()
	b.ReportAllocs()
	for b.Loop() {
		out := make([]any, len(list))
		for i, c := range list {
			p, err := Encode(c, "1.23", nil)
			if err != nil {
				b.Fatal(err)
			}
			out[i] = p
		}
		if _, err := json.Marshal(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode100Clusters(b *testing.B) {
	list := benchClusters()
	out := make([]any, len(list))
	for i, c := range list {
		out[i], _ = Encode(c, "1.23", nil)
	}
	raw, _ := json.Marshal(out)
	b.ReportAllocs()
	for b.Loop() {
		var prims []json.RawMessage
		if err := json.Unmarshal(raw, &prims); err != nil {
			b.Fatal(err)
		}
		for _, p := range prims {
			if _, err := DecodeCluster(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchClusters() []*Cluster {
	now := time.Now()
	base := fullObjects()[0].(*Cluster)
	base.ClusterTemplate = nil
	var list []*Cluster
	for i := 0; i < 100; i++ {
		c := Clone(base)
		c.ID = int64(i)
		c.UpdatedAt = &now
		ResetChanges(c)
		list = append(list, c)
	}
	return list
}

func TestDecodeTakesGoBuiltPrimitivesWithTheirChanges(t *testing.T) {
	cl := fullObjects()[0]
	p, err := Encode(cl, "1.23", nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCluster(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(Changes(back), []string{"status"}) {
		t.Fatalf("changes after a map round trip = %v", Changes(back))
	}
	if back.ClusterTemplate == nil || back.ClusterTemplate.ReceivedVersion() != "1.20" {
		t.Fatalf("child template lost: %+v", back.ClusterTemplate)
	}
}

// TestZeroThatIsNotTheDefaultIsSetWhenBuiltInGo: on an object built in Go,
// a field whose zero value is not its default (node_count, default 1) is
// set and changed at 0, and goes on the wire; Unset makes it unset.
// Fields whose zero is their default keep the usual rule.
func TestZeroThatIsNotTheDefaultIsSetWhenBuiltInGo(t *testing.T) {
	ng := &NodeGroup{Name: "ng"}
	if !IsSet(ng, "node_count") || !HasChanged(ng, "node_count") {
		t.Fatalf("node_count 0 on a new object: set %v, changed %v; want both", IsSet(ng, "node_count"), HasChanged(ng, "node_count"))
	}
	if IsSet(ng, "min_node_count") {
		t.Fatal("min_node_count 0 is its default and should stay unset")
	}
	prim, err := EncodeJSON(ng, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(prim, []byte(`"node_count":0`)) {
		t.Fatalf("node_count 0 missing from the primitive: %s", prim)
	}
	c := Clone(ng)
	if !IsSet(c, "node_count") {
		t.Fatal("a clone of a new object lost node_count 0")
	}
	Unset(ng, "node_count")
	if IsSet(ng, "node_count") || HasChanged(ng, "node_count") {
		t.Fatal("Unset did not unset node_count")
	}
	ng.NodeCount = 0
	if IsSet(ng, "node_count") {
		t.Fatal("after Unset, 0 is the unset value again")
	}
	ng.NodeCount = 2
	if !IsSet(ng, "node_count") {
		t.Fatal("node_count 2 should be set")
	}

	loaded := &NodeGroup{NodeCount: 3}
	ResetChanges(loaded)
	loaded.NodeCount = 0
	if !HasChanged(loaded, "node_count") {
		t.Fatal("a loaded node_count set to 0 should have changed")
	}
}
