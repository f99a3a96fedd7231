package indirection

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// replyUpdates returns the updates of a vector's [updates, result] reply.
func replyUpdates(t *testing.T, name string) map[string]any {
	t.Helper()
	var res []map[string]any
	mustUnmarshal(t, loadVector(t, name).Result, &res)
	return res[0]
}

// checkActionReply compares an object_action result with the reply vector:
// the same update keys, the same values except for ids and timestamps the
// database chose, and a null result.
func checkActionReply(t *testing.T, got any, err error, vector string) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", vector, err)
	}
	pair, ok := got.([]any)
	if !ok || len(pair) != 2 || pair[1] != nil {
		t.Fatalf("%s: result %#v, want [updates, null]", vector, got)
	}
	gotUp := jsonOf(t, pair[0]).(map[string]any)
	want := replyUpdates(t, vector)
	if !reflect.DeepEqual(keysOf(gotUp), keysOf(want)) {
		t.Fatalf("%s: update keys %v, want %v", vector, keysOf(gotUp), keysOf(want))
	}
	for k, w := range want {
		switch k {
		case "id", "created_at":
			if gotUp[k] == nil {
				t.Errorf("%s: %s is null", vector, k)
			}
		default:
			if !reflect.DeepEqual(gotUp[k], w) {
				t.Errorf("%s: %s = %v, want %v", vector, k, gotUp[k], w)
			}
		}
	}
	return gotUp
}

func TestObjectActionsReplayTheReferenceScenario(t *testing.T) {
	h, s := newHandler(t)
	ctx := vectorCtx()

	// The referenced template (e11d…) and the one saved and destroyed
	// (7629…) existed before the capture; create them from the vectors'
	// own primitives.
	for _, v := range []string{"call_object_class_action_clustertemplate_get_by_uuid_reply.json",
		"call_object_action_clustertemplate_save_request.json"} {
		m := loadVector(t, v)
		raw := m.Result
		if raw == nil {
			raw = m.Args["objinst"]
		}
		ct, err := objects.DecodeClusterTemplate(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateClusterTemplate(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}

	got, err := replay(t, h, "call_object_action_clustertemplate_create_request.json")
	checkActionReply(t, got, err, "call_object_action_clustertemplate_create_reply.json")

	got, err = replay(t, h, "call_object_action_cluster_create_request.json")
	checkActionReply(t, got, err, "call_object_action_cluster_create_reply.json")

	got, err = replay(t, h, "call_object_action_nodegroup_create_request.json")
	checkActionReply(t, got, err, "call_object_action_nodegroup_create_reply.json")

	got, err = replay(t, h, "call_object_action_cluster_save_request.json")
	checkActionReply(t, got, err, "call_object_action_cluster_save_reply.json")
	c, err := s.GetClusterByUUID(ctx, "f25bb310-48ca-470f-8bf1-31bf6726c090")
	if err != nil {
		t.Fatal(err)
	}
	if c.HealthStatus != objects.Healthy || c.HealthStatusReason["api"] != "ok" {
		t.Errorf("save did not write health: %q %v", c.HealthStatus, c.HealthStatusReason)
	}

	got, err = replay(t, h, "call_object_action_clustertemplate_save_request.json")
	checkActionReply(t, got, err, "call_object_action_clustertemplate_save_reply.json")
	ct, err := s.GetClusterTemplateByUUID(ctx, "76294521-2c0e-4ac6-896d-570fb6b5c701")
	if err != nil {
		t.Fatal(err)
	}
	if ct.Labels["a"] != "b" || objects.Deref(ct.Name) != "interop-ct-renamed-1b3b32d3" {
		t.Errorf("template save not written: %v %v", ct.Labels, objects.Deref(ct.Name))
	}

	got, err = replay(t, h, "call_object_action_clustertemplate_destroy_request.json")
	checkActionReply(t, got, err, "call_object_action_clustertemplate_destroy_reply.json")
	_, err = s.GetClusterTemplateByUUID(ctx, "76294521-2c0e-4ac6-896d-570fb6b5c701")
	wantError(t, err, exception.ModuleMagnum, "ClusterTemplateNotFound")

	// Class actions against the same rows.
	m := loadVector(t, "call_object_class_action_cluster_list_request.json")
	res, err := h.ObjectClassAction(ctx, "Cluster", "list", "1.23", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := jsonOf(t, res).([]any)
	var wantList []map[string]any
	mustUnmarshal(t, loadVector(t, "call_object_class_action_cluster_list_reply.json").Result, &wantList)
	if len(list) != 1 || m.Method != "object_class_action" {
		t.Fatalf("list = %v", list)
	}
	gotPrim := list[0].(map[string]any)
	if gotPrim[objects.KeyVersion] != "1.23" || gotPrim[objects.KeyName] != "Cluster" {
		t.Fatalf("list item header %v", gotPrim)
	}
	if _, ok := gotPrim[objects.KeyChanges]; ok {
		t.Error("a loaded object must carry no changes")
	}
	gotData := gotPrim[objects.KeyData].(map[string]any)
	wantData := wantList[0][objects.KeyData].(map[string]any)
	if !reflect.DeepEqual(keysOf(gotData), keysOf(wantData)) {
		t.Fatalf("list data keys %v, want %v", keysOf(gotData), keysOf(wantData))
	}
	for _, k := range []string{"uuid", "name", "labels", "status", "health_status", "health_status_reason",
		"floating_ip_enabled", "master_lb_enabled", "trustee_password", "stack_id"} {
		if !reflect.DeepEqual(gotData[k], wantData[k]) {
			t.Errorf("list %s = %v, want %v", k, gotData[k], wantData[k])
		}
	}

	got, err = replay(t, h, "call_object_action_cluster_destroy_request.json")
	checkActionReply(t, got, err, "call_object_action_cluster_destroy_reply.json")
	_, err = s.GetClusterByUUID(ctx, "f25bb310-48ca-470f-8bf1-31bf6726c090")
	wantError(t, err, exception.ModuleMagnum, "ClusterNotFound")
}

func TestClassActionNotFoundIsTheOriginalClass(t *testing.T) {
	h, _ := newHandler(t)
	m := loadVector(t, "call_object_class_action_not_found_request.json")
	var args []json.RawMessage
	mustUnmarshal(t, m.Args["args"], &args)
	_, err := h.ObjectClassAction(vectorCtx(), "ClusterTemplate", "get_by_uuid", "1.20", args, nil)
	e := wantError(t, err, exception.ModuleMagnum, "ClusterTemplateNotFound")
	if e.Message != "ClusterTemplate f6312f15-72c1-4218-acd7-251bdece873f could not be found." || e.Code != 404 ||
		e.Kwargs["clustertemplate"] != "f6312f15-72c1-4218-acd7-251bdece873f" {
		t.Errorf("error %q code %d kwargs %v", e.Message, e.Code, e.Kwargs)
	}
}

func TestVersionsOfTheCallerAreHonoured(t *testing.T) {
	h, s := newHandler(t)
	ctx := vectorCtx()
	ct := &objects.ClusterTemplate{Name: objects.Str("t"), Coe: "kubernetes", Driver: objects.Str("capi")}
	if err := s.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	c := &objects.Cluster{Name: objects.Str("c"), ClusterTemplateID: ct.UUID, Status: objects.CreateComplete,
		ProjectID: objects.Str("p")}
	if err := s.CreateCluster(ctx, c); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		method   string
		versions map[string]string
		objver   string
		want     string
		trust    bool
	}{
		{"object_class_action", nil, "1.23", "1.23", true},
		{"object_class_action", nil, "1.21", "1.21", true},
		{"object_class_action_versions", map[string]string{"Cluster": "1.23", "ClusterTemplate": "1.21"}, "", "1.23", true},
		{"object_class_action_versions", map[string]string{"Cluster": "1.24", "ClusterTemplate": "1.21"}, "", "1.24", false},
	} {
		var res any
		var err error
		if tc.versions == nil {
			res, err = h.ObjectClassAction(ctx, "Cluster", "get_by_uuid", tc.objver, raws(t, *c.UUID), nil)
		} else {
			res, err = h.ObjectClassActionVersions(ctx, "Cluster", "get", tc.versions, nil, kw(t, map[string]any{"cluster_id": *c.UUID}))
		}
		if err != nil {
			t.Fatalf("%s %v: %v", tc.method, tc.versions, err)
		}
		p := jsonOf(t, res).(map[string]any)
		if p[objects.KeyVersion] != tc.want {
			t.Errorf("%s: version %v, want %s", tc.method, p[objects.KeyVersion], tc.want)
		}
		_, hasTrust := p[objects.KeyData].(map[string]any)["trust_id"]
		if hasTrust != tc.trust {
			t.Errorf("%s at %s: trust_id present = %v", tc.method, tc.want, hasTrust)
		}
	}

	// Template at 1.20 has no driver; at 1.21 it has.
	for ver, want := range map[string]bool{"1.20": false, "1.21": true} {
		res, err := h.ObjectClassAction(ctx, "ClusterTemplate", "get", ver, raws(t, "t"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, has := jsonOf(t, res).(map[string]any)[objects.KeyData].(map[string]any)["driver"]
		if has != want {
			t.Errorf("ClusterTemplate %s: driver present = %v", ver, has)
		}
	}

	// Newer than we know: IncompatibleObjectVersion, as oslo sends it.
	_, err := h.ObjectClassAction(ctx, "Cluster", "list", "1.25", nil, nil)
	e := wantError(t, err, exception.ModuleOVO, "IncompatibleObjectVersion")
	if e.Kwargs["objname"] != "Cluster" || e.Kwargs["objver"] != "1.25" || e.Kwargs["supported"] != "1.24" {
		t.Errorf("kwargs %v", e.Kwargs)
	}
	_, err = h.ObjectClassActionVersions(ctx, "NodeGroup", "list", map[string]string{"NodeGroup": "1.3"}, raws(t, *c.UUID), nil)
	wantError(t, err, exception.ModuleOVO, "IncompatibleObjectVersion")
	_, err = h.ObjectClassAction(ctx, "Bay", "list", "1.0", nil, nil)
	wantError(t, err, exception.ModuleOVO, "UnsupportedObjectError")

	// Backports.
	prim, _ := objects.Encode(c, "1.24", nil)
	raw, _ := json.Marshal(prim)
	res, err := h.ObjectBackport(ctx, raw, "1.23")
	if err != nil {
		t.Fatal(err)
	}
	if v := res.(map[string]any)[objects.KeyVersion]; v != "1.23" {
		t.Errorf("backport to %v", v)
	}
	res, err = h.ObjectBackportVersions(ctx, raw, map[string]string{"Cluster": "1.23", "ClusterTemplate": "1.20"})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.(map[string]any)[objects.KeyVersion]; v != "1.23" {
		t.Errorf("backport_versions to %v", v)
	}
	_, err = h.ObjectBackport(ctx, raw, "1.30")
	wantError(t, err, exception.ModuleOVO, "IncompatibleObjectVersion")
}
