package indirection

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

// action runs object_action on o encoded at its newest version (or ver) and
// returns the updates.
func action(t *testing.T, h *Handler, ctx context.Context, o objects.Object, ver, method string) (map[string]any, error) {
	t.Helper()
	p, err := objects.EncodeWith(o, objects.EncodeOptions{Version: ver, KeepKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(p)
	res, err := h.ObjectAction(ctx, raw, method, nil, nil)
	if err != nil {
		return nil, err
	}
	return jsonOf(t, res.([]any)[0]).(map[string]any), nil
}

func prim(t *testing.T, v any) map[string]any {
	t.Helper()
	p, ok := jsonOf(t, v).(map[string]any)
	if !ok {
		t.Fatalf("not a primitive: %v", v)
	}
	return p
}

func data(t *testing.T, v any) map[string]any {
	t.Helper()
	return prim(t, v)[objects.KeyData].(map[string]any)
}

func TestClusterRemotables(t *testing.T) {
	h, s := newHandler(t)
	ctx := vectorCtx()
	ct := &objects.ClusterTemplate{Name: objects.Str("t"), Coe: "kubernetes"}
	if err := s.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, name := range []string{"a", "b", "b"} {
		c := &objects.Cluster{Name: objects.Str(name), ClusterTemplateID: ct.UUID, ProjectID: objects.Str("p1"),
			Status: objects.CreateComplete}
		up, err := action(t, h, ctx, c, "1.23", "create")
		if err != nil {
			t.Fatal(err)
		}
		if up["uuid"] == nil || up["id"] == nil {
			t.Fatalf("create updates lack uuid/id: %v", up)
		}
		uuids = append(uuids, up["uuid"].(string))
		ng := &objects.NodeGroup{Name: "w", ClusterID: up["uuid"].(string), ProjectID: "p1", Role: "worker", NodeCount: 3}
		if err := s.CreateNodeGroup(ctx, ng); err != nil {
			t.Fatal(err)
		}
	}
	first, err := h.ObjectClassAction(ctx, "Cluster", "get_by_uuid", "1.23", raws(t, uuids[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := data(t, first)["id"]

	for _, tc := range []struct {
		name string
		args []any
		want string // uuid expected, or "" for an error
		err  string
	}{
		{"get", []any{id}, uuids[0], ""},
		{"get", []any{jsonString(id)}, uuids[0], ""},
		{"get", []any{uuids[1]}, uuids[1], ""},
		{"get", []any{"not-an-ident"}, "", "InvalidIdentity"},
		{"get_by_id", []any{id}, uuids[0], ""},
		{"get_by_id", []any{99999}, "", "ClusterNotFound"},
		{"get_by_name", []any{"a"}, uuids[0], ""},
		{"get_by_name", []any{"b"}, "", "Conflict"},
		{"get_by_name", []any{"zz"}, "", "ClusterNotFound"},
	} {
		res, err := h.ObjectClassAction(ctx, "Cluster", tc.name, "1.23", raws(t, tc.args...), nil)
		if tc.err != "" {
			wantError(t, err, exception.ModuleMagnum, tc.err)
			continue
		}
		if err != nil {
			t.Fatalf("%s%v: %v", tc.name, tc.args, err)
		}
		if got := data(t, res)["uuid"]; got != tc.want {
			t.Errorf("%s%v = %v, want %s", tc.name, tc.args, got, tc.want)
		}
	}
	e := func() *exception.Error {
		_, err := h.ObjectClassAction(ctx, "Cluster", "get", "1.23", raws(t, "not-an-ident"), nil)
		return wantError(t, err, exception.ModuleMagnum, "InvalidIdentity")
	}()
	if e.Message != "Expected an uuid or int but received not-an-ident." {
		t.Errorf("InvalidIdentity message %q", e.Message)
	}

	n, err := h.ObjectClassAction(ctx, "Cluster", "get_count_all", "1.23", nil, kw(t, map[string]any{"filters": map[string]any{"name": "b"}}))
	if err != nil || n != int64(2) {
		t.Errorf("get_count_all(name=b) = %v, %v", n, err)
	}
	res, err := h.ObjectClassAction(ctx, "Cluster", "list", "1.23", nil,
		kw(t, map[string]any{"limit": 2, "sort_key": "id", "sort_dir": "desc", "filters": map[string]any{"status": []string{"CREATE_COMPLETE"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if l := jsonOf(t, res).([]any); len(l) != 2 || l[0].(map[string]any)[objects.KeyData].(map[string]any)["uuid"] != uuids[2] {
		t.Errorf("list(limit=2, desc) = %v", l)
	}

	// get_stats is broken in Magnum; here it answers (clusters, nodes).
	res, err = h.ObjectClassAction(ctx, "Cluster", "get_stats", "1.23", nil, kw(t, map[string]any{"project_id": "p1"}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jsonOf(t, res), []any{3.0, 9.0}) {
		t.Errorf("get_stats = %v, want [3 9]", jsonOf(t, res))
	}
	res, err = h.ObjectClassAction(ctx, "Stats", "get_cluster_stats", "1.0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := data(t, res); d["clusters"] != 3.0 || d["nodes"] != 9.0 {
		t.Errorf("Stats = %v", d)
	}

	// Tenant filter: another project sees nothing.
	_, err = h.ObjectClassAction(projectCtx("other"), "Cluster", "get_by_uuid", "1.23", raws(t, uuids[0]), nil)
	wantError(t, err, exception.ModuleMagnum, "ClusterNotFound")

	// refresh copies newer values into the set fields and marks them changed.
	stale, err := objects.DecodeCluster(jsonOf(t, first))
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := s.GetClusterByUUID(ctx, uuids[0])
	fresh.StatusReason = objects.Str("moved on")
	if err := s.SaveCluster(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	up, err := action(t, h, ctx, stale, "1.23", "refresh")
	if err != nil {
		t.Fatal(err)
	}
	if up["status_reason"] != "moved on" || !slices.Contains(anyStrings(up["obj_what_changed"]), "status_reason") {
		t.Errorf("refresh updates %v", up)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func anyStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestNodeGroupRemotables(t *testing.T) {
	h, s := newHandler(t)
	ctx := vectorCtx()
	const cl = "5d12f6fd-a196-4bf0-ae4c-1f639a523a52"
	var worker map[string]any
	for _, ng := range []*objects.NodeGroup{
		{Name: "master", ClusterID: cl, ProjectID: "p", Role: "master", IsDefault: true, NodeCount: 1},
		{Name: "worker", ClusterID: cl, ProjectID: "p", Role: "worker", IsDefault: true, NodeCount: 2,
			NodeLabels: map[string]string{"a": "b"}},
	} {
		up, err := action(t, h, ctx, ng, "1.2", "create")
		if err != nil {
			t.Fatal(err)
		}
		worker = up
	}
	if _, ok := worker["node_taints"]; !ok {
		t.Errorf("a 1.2 create must answer the newly set node_taints: %v", worker)
	}
	if _, ok := worker["node_labels"]; ok {
		t.Errorf("node_labels was sent and did not change: %v", worker)
	}
	// A 1.1 caller never sees node_labels or node_taints.
	up, err := action(t, h, ctx, &objects.NodeGroup{Name: "x", ClusterID: cl, ProjectID: "p", Role: "worker"}, "1.1", "create")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"node_labels", "node_taints"} {
		if _, ok := up[f]; ok {
			t.Errorf("1.1 create answered %s", f)
		}
	}

	for _, tc := range []struct {
		method string
		args   []any
		name   string
	}{
		{"get", []any{cl, "worker"}, "worker"},
		{"get", []any{cl, worker["uuid"]}, "worker"},
		{"get", []any{cl, worker["id"]}, "worker"},
		{"get_by_name", []any{cl, "master"}, "master"},
		{"get_by_uuid", []any{cl, worker["uuid"]}, "worker"},
		{"get_by_id", []any{cl, worker["id"]}, "worker"},
	} {
		res, err := h.ObjectClassAction(ctx, "NodeGroup", tc.method, "1.1", raws(t, tc.args...), nil)
		if err != nil {
			t.Fatalf("%s%v: %v", tc.method, tc.args, err)
		}
		if got := data(t, res)["name"]; got != tc.name {
			t.Errorf("%s%v = %v", tc.method, tc.args, got)
		}
		if _, ok := data(t, res)["node_labels"]; ok {
			t.Errorf("%s at 1.1 carries node_labels", tc.method)
		}
	}
	_, err = h.ObjectClassAction(ctx, "NodeGroup", "get", "1.1", raws(t, cl, "nope"), nil)
	wantError(t, err, exception.ModuleMagnum, "NodeGroupNotFound")

	n, err := h.ObjectClassAction(ctx, "NodeGroup", "get_count_all", "1.1", raws(t, cl), nil)
	if err != nil || n != int64(3) {
		t.Errorf("get_count_all = %v %v", n, err)
	}
	res, err := h.ObjectClassAction(ctx, "NodeGroup", "list", "1.1", raws(t, cl),
		kw(t, map[string]any{"filters": map[string]any{"role": "master", "is_default": true}}))
	if err != nil {
		t.Fatal(err)
	}
	if l := jsonOf(t, res).([]any); len(l) != 1 {
		t.Errorf("list(role=master) = %v", l)
	}
	res, err = h.ObjectClassAction(ctx, "NodeGroup", "update_nodegroup", "1.1", raws(t, cl, "worker", map[string]any{"node_count": 5}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if data(t, res)["node_count"] != 5.0 {
		t.Errorf("update_nodegroup = %v", data(t, res))
	}

	// save and destroy by cluster and uuid.
	ng, _ := s.GetNodeGroupByName(ctx, cl, "worker")
	ng.Status = objects.UpdateInProgress
	up, err = action(t, h, ctx, ng, "1.1", "save")
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 1 || len(up["obj_what_changed"].([]any)) != 0 {
		t.Errorf("save updates %v, want only obj_what_changed: []", up)
	}
	if got, _ := s.GetNodeGroupByName(ctx, cl, "worker"); got.Status != objects.UpdateInProgress {
		t.Error("save not written")
	}
	if _, err := action(t, h, ctx, ng, "1.1", "destroy"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetNodeGroupByName(ctx, cl, "worker")
	wantError(t, err, exception.ModuleMagnum, "NodeGroupNotFound")
}

func TestX509KeyPairKeysTravelOnTheIndirectionPath(t *testing.T) {
	h, _ := newHandler(t)
	ctx := vectorCtx()
	kp := &objects.X509KeyPair{Certificate: objects.Str("CERT"), PrivateKey: objects.Str("KEY"),
		PrivateKeyPassphrase: objects.Str("PASS"), ProjectID: objects.Str("a1b2c3d4e5f60718293a4b5c6d7e8f90")}
	up, err := action(t, h, ctx, kp, "", "create")
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.ObjectClassAction(ctx, "X509KeyPair", "get", "1.2", raws(t, up["uuid"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := data(t, res); d["private_key"] != "KEY" || d["private_key_passphrase"] != "PASS" {
		t.Errorf("get answered %v", d)
	}
	_, err = h.ObjectClassAction(ctx, "X509KeyPair", "get", "1.2", raws(t, "x"), nil)
	wantError(t, err, exception.ModuleMagnum, "InvalidIdentity")
	res, err = h.ObjectClassAction(ctx, "X509KeyPair", "list", "1.2", nil, kw(t, map[string]any{"filters": map[string]any{"project_id": "zzz"}}))
	if err != nil || len(jsonOf(t, res).([]any)) != 0 {
		t.Errorf("list(project zzz) = %v %v", res, err)
	}
}

func TestMagnumServiceQuotaFederationRemotables(t *testing.T) {
	h, s := newHandler(t)
	ctx := vectorCtx()

	res, err := h.ObjectClassAction(ctx, "MagnumService", "get_by_host_and_binary", "1.0", raws(t, "h", "magnum-conductor"), nil)
	if err != nil || res != nil {
		t.Fatalf("absent service = %v, %v; want None", res, err)
	}
	ms := &objects.MagnumService{Host: objects.Str("h"), Binary: objects.Str("magnum-conductor")}
	if _, err := action(t, h, ctx, ms, "", "create"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMagnumServiceByHostAndBinary(ctx, "h", "magnum-conductor")
	if err != nil || got == nil {
		t.Fatal(err)
	}
	up, err := action(t, h, ctx, got, "", "report_state_up")
	if err != nil {
		t.Fatal(err)
	}
	if up["report_count"] != float64(got.ReportCount+1) {
		t.Errorf("report_state_up updates %v", up)
	}
	res, err = h.ObjectClassAction(ctx, "MagnumService", "list", "1.0", nil, nil)
	if err != nil || len(jsonOf(t, res).([]any)) != 1 {
		t.Fatalf("list = %v %v", res, err)
	}

	q := &objects.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 5}
	qup, err := action(t, h, ctx, q, "", "create")
	if err != nil {
		t.Fatal(err)
	}
	res, err = h.ObjectClassAction(ctx, "Quota", "get_quota_by_project_id_resource", "1.0", raws(t, "p1", "Cluster"), nil)
	if err != nil || data(t, res)["hard_limit"] != 5.0 {
		t.Fatalf("get_quota_by_project_id_resource = %v %v", res, err)
	}
	res, err = h.ObjectClassAction(ctx, "Quota", "get_by_id", "1.0", raws(t, qup["id"]), nil)
	if err != nil || data(t, res)["project_id"] != "p1" {
		t.Fatalf("get_by_id = %v %v", res, err)
	}
	// Broken in Magnum (missing dbapi method); works here.
	res, err = h.ObjectClassAction(ctx, "Quota", "quota_get_all_by_project_id", "1.0", raws(t, "p1"), nil)
	if err != nil || len(jsonOf(t, res).([]any)) != 1 {
		t.Fatalf("quota_get_all_by_project_id = %v %v", res, err)
	}
	res, err = h.ObjectClassAction(ctx, "Quota", "update_quota", "1.0", raws(t, "p1", map[string]any{"resource": "Cluster", "hard_limit": 9}), nil)
	if err != nil || data(t, res)["hard_limit"] != 9.0 {
		t.Fatalf("update_quota = %v %v", res, err)
	}
	qo, _ := s.GetQuotaByProjectResource(ctx, "p1", "Cluster")
	if _, err := action(t, h, ctx, qo, "", "delete"); err != nil {
		t.Fatal(err)
	}
	_, err = h.ObjectClassAction(ctx, "Quota", "get_quota_by_project_id_resource", "1.0", raws(t, "p1", "Cluster"), nil)
	wantError(t, err, exception.ModuleMagnum, "QuotaNotFound")

	f := &objects.Federation{Name: objects.Str("fed"), ProjectID: objects.Str("a1b2c3d4e5f60718293a4b5c6d7e8f90"),
		Status: "CREATE_IN_PROGRESS", MemberIDs: []string{}, Properties: map[string]string{"dns-zone": "x."}}
	fup, err := action(t, h, ctx, f, "", "create")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]any{{fup["uuid"]}, {fup["id"]}} {
		res, err := h.ObjectClassAction(ctx, "Federation", "get", "1.0", raws(t, args...), nil)
		if err != nil || data(t, res)["name"] != "fed" {
			t.Fatalf("get%v = %v %v", args, res, err)
		}
	}
	n, err := h.ObjectClassAction(ctx, "Federation", "get_count_all", "1.0", nil, kw(t, map[string]any{"filters": map[string]any{"status": []string{"CREATE_IN_PROGRESS"}}}))
	if err != nil || n != int64(1) {
		t.Errorf("get_count_all = %v %v", n, err)
	}
	fo, _ := s.GetFederationByName(ctx, "fed")
	fo.Status = "CREATE_COMPLETE"
	if _, err := action(t, h, ctx, fo, "", "save"); err != nil {
		t.Fatal(err)
	}
	if _, err := action(t, h, ctx, fo, "", "destroy"); err != nil {
		t.Fatal(err)
	}
	_, err = h.ObjectClassAction(ctx, "Federation", "get_by_name", "1.0", raws(t, "fed"), nil)
	wantError(t, err, exception.ModuleMagnum, "FederationNotFound")
}

func TestPythonErrorsForBadCalls(t *testing.T) {
	h, _ := newHandler(t)
	ctx := vectorCtx()
	for _, tc := range []struct {
		obj, method string
		args        []json.RawMessage
		kwargs      map[string]json.RawMessage
		class, msg  string
	}{
		{"Cluster", "nope", nil, nil, "AttributeError", "type object 'Cluster' has no attribute 'nope'"},
		{"Certificate", "get", nil, nil, "AttributeError", "type object 'Certificate' has no attribute 'get'"},
		{"Cluster", "get_by_uuid", nil, nil, "TypeError", "get_by_uuid() missing 1 required positional argument: 'uuid'"},
		{"Cluster", "get_by_uuid", raws(t, "a", "b"), nil, "TypeError", "get_by_uuid() takes 3 positional arguments but 4 were given"},
		{"Cluster", "list", nil, kw(t, map[string]any{"bogus": 1}), "TypeError", "list() got an unexpected keyword argument 'bogus'"},
		{"NodeGroup", "get", raws(t, "c"), kw(t, map[string]any{"cluster_id": "c"}), "TypeError", "get() got multiple values for argument 'cluster_id'"},
	} {
		_, err := h.ObjectClassAction(ctx, tc.obj, tc.method, "1.0", tc.args, tc.kwargs)
		if tc.obj == "Cluster" || tc.obj == "NodeGroup" {
			_, err = h.ObjectClassAction(ctx, tc.obj, tc.method, objects.NewestVersion(tc.obj), tc.args, tc.kwargs)
		}
		e := wantError(t, err, exception.ModuleBuiltins, tc.class)
		if e.Message != tc.msg {
			t.Errorf("%s.%s: %q, want %q", tc.obj, tc.method, e.Message, tc.msg)
		}
	}
	c := &objects.Cluster{Name: objects.Str("x")}
	_, err := action(t, h, ctx, c, "", "frobnicate")
	if e := wantError(t, err, exception.ModuleBuiltins, "AttributeError"); e.Message != "'Cluster' object has no attribute 'frobnicate'" {
		t.Errorf("message %q", e.Message)
	}
}

func TestUpdatesNeverCarryTheTrusteePassword(t *testing.T) {
	before := &objects.Cluster{ID: 1, UUID: objects.Str("u")}
	before.SetReceivedVersion("1.23")
	objects.ResetChanges(before, "id", "uuid")
	after := objects.Clone(before)
	after.TrusteePassword = objects.Str("s3cret")
	after.TrustID = objects.Str("t")
	up, err := diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := up["trustee_password"]; ok {
		t.Errorf("trustee_password in updates: %v", up)
	}
	if up["trust_id"] != "t" {
		t.Errorf("trust_id missing from updates: %v", up)
	}
	kp := &objects.X509KeyPair{ID: 1}
	kp2 := objects.Clone(kp)
	kp2.PrivateKey = objects.Str("KEY")
	up, _ = diff(kp, kp2)
	if up["private_key"] != "KEY" {
		t.Errorf("x509 private_key must travel on the indirection path: %v", up)
	}
}
