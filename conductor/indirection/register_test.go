package indirection

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
)

// dispatchVector decodes a request vector's raw AMQP body with api/oslo and
// dispatches it through Register's table, with the vector's own context.
func dispatchVector(t *testing.T, d *oslo.Dispatcher, name string) (any, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatalf("wire vectors (part of the repository): %v", err)
	}
	var v struct {
		BodyRaw string `json:"body_raw"`
	}
	mustUnmarshal(t, b, &v)
	req, err := oslo.DecodeRequest([]byte(v.BodyRaw))
	if err != nil {
		t.Fatal(err)
	}
	ctx := request.With(context.Background(), request.FromWire(req.Context))
	return d.Dispatch(ctx, req)
}

func TestRegisteredMethodsServeTheRecordedRequests(t *testing.T) {
	h, s := newHandler(t)
	d := oslo.NewDispatcher()
	if err := h.Register(d); err != nil {
		t.Fatal(err)
	}
	if got := d.Methods(); len(got) != len(Methods()) {
		t.Fatalf("registered %v", got)
	}
	if err := h.Register(d); err == nil {
		t.Error("registering twice must fail")
	}

	// Not found → the original Magnum class.
	_, err := dispatchVector(t, d, "call_object_class_action_not_found_request.json")
	wantError(t, err, exception.ModuleMagnum, "ClusterTemplateNotFound")

	m := loadVector(t, "call_object_class_action_clustertemplate_get_by_uuid_reply.json")
	ct, err := objects.DecodeClusterTemplate(m.Result)
	if err != nil {
		t.Fatal(err)
	}
	ctx := vectorCtx()
	if err := s.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	res, err := dispatchVector(t, d, "call_object_class_action_clustertemplate_get_by_uuid_request.json")
	if err != nil {
		t.Fatal(err)
	}
	got, want := jsonOf(t, res).(map[string]any), jsonOf(t, m.Result).(map[string]any)
	gd, wd := got[objects.KeyData].(map[string]any), want[objects.KeyData].(map[string]any)
	delete(gd, "id")
	delete(wd, "id")
	delete(gd, "created_at")
	delete(wd, "created_at")
	if got[objects.KeyVersion] != "1.20" || !reflect.DeepEqual(gd, wd) {
		t.Errorf("get_by_uuid through the dispatcher:\n got %v\nwant %v", got, want)
	}

	// The 2026.x method the 15.0.1 conductor lacked is served here.
	res, err = dispatchVector(t, d, "call_object_class_action_versions_request.json")
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := jsonOf(t, res).([]any); !ok || len(l) != 0 {
		t.Errorf("Cluster.list via object_class_action_versions = %v", res)
	}

	// object_action through the dispatcher.
	res, err = dispatchVector(t, d, "call_object_action_cluster_create_request.json")
	checkActionReply(t, res, err, "call_object_action_cluster_create_reply.json")

	// Wrong argument names fail as Python's TypeError.
	req := &oslo.Request{Method: json.RawMessage(`"object_backport"`), Args: json.RawMessage(`{"objinst": {}, "bogus": 1}`)}
	_, err = d.Dispatch(ctx, req)
	wantError(t, err, exception.ModuleBuiltins, "TypeError")
}
