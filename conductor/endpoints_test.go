package conductor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
)

func (e *env) dispatcher() *oslo.Dispatcher {
	e.t.Helper()
	d := oslo.NewDispatcher()
	if err := e.h.Register(d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// dispatchBody decodes a raw AMQP body and dispatches it with its context.
func dispatchBody(t *testing.T, d *oslo.Dispatcher, body []byte) (any, error) {
	t.Helper()
	req, err := oslo.DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx := request.With(context.Background(), request.FromWire(req.Context))
	return d.Dispatch(ctx, req)
}

// body builds a cast body for method with args, in e's request context.
func (e *env) body(method string, args map[string]any) []byte {
	e.t.Helper()
	msg := map[string]any{"method": method, "args": args, "_unique_id": "u1"}
	for k, v := range request.From(e.ctx).ToWire() {
		msg[request.ContextPrefix+k] = v
	}
	inner, err := json.Marshal(msg)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := json.Marshal(map[string]string{"oslo.version": "2.0", "oslo.message": string(inner)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) primitive(o objects.Object) map[string]any {
	e.t.Helper()
	p, err := objects.Encode(o, "", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestRegisterBindsEveryHandlerMethodOnce(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher()
	want := slices.Clone(EndpointMethods())
	slices.Sort(want)
	if got := d.Methods(); !slices.Equal(got, want) {
		t.Errorf("methods %v, want %v", got, want)
	}
	if err := e.h.Register(d); err == nil {
		t.Error("registering twice must fail")
	}
}

func TestRecordedClusterCreateCastIsServed(t *testing.T) {
	e := newEnv(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "cast_cluster_create.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		BodyRaw string `json:"body_raw"`
		Message struct {
			Args struct {
				Cluster json.RawMessage `json:"cluster"`
			} `json:"args"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	c, err := objects.DecodeCluster(v.Message.Args.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	// The template the recorded request names, served by the test driver.
	ct := &objects.ClusterTemplate{UUID: c.ClusterTemplateID, Name: objects.Str("interop"), ProjectID: c.ProjectID,
		ImageID: objects.Str("img"), ClusterDistro: objects.Str("test-os"), Coe: "kubernetes", ServerType: objects.Str("vm")}
	if err := e.store.CreateClusterTemplate(e.ctx, ct); err != nil {
		t.Fatal(err)
	}
	out, err := dispatchBody(t, e.dispatcher(), []byte(v.BodyRaw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := objects.DecodeCluster(out)
	if err != nil {
		t.Fatalf("result is not a Cluster primitive: %v", err)
	}
	if got.ReceivedVersion() != "1.23" {
		t.Errorf("result version %s, want the caller's 1.23", got.ReceivedVersion())
	}
	e.wantStatus(*c.UUID, objects.CreateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.CreateInProgress, "", 2)
	e.wantNotes("INFO magnum.cluster.create/pending status=CREATE_IN_PROGRESS")
}

func TestDispatchedHandlersChangeStatus(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher()
	c := e.seed(e.ct, objects.CreateComplete, 1)
	if _, err := dispatchBody(t, d, e.body("cluster_update", map[string]any{
		"cluster": e.primitive(c), "node_count": 3, "health_status": nil, "health_status_reason": map[string]any{},
		"rollback": false,
	})); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.UpdateInProgress, "")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 3)

	e.setStatus(c, objects.UpdateComplete)
	c = e.cluster(*c.UUID)
	ng := e.nodegroup(c, "default-worker")
	if _, err := dispatchBody(t, d, e.body("cluster_resize", map[string]any{
		"cluster": e.primitive(c), "node_count": 5, "nodes_to_remove": []string{}, "nodegroup": e.primitive(ng),
	})); err != nil {
		t.Fatal(err)
	}
	e.wantNGStatus(c, "default-worker", objects.UpdateInProgress, "", 5)

	if _, err := dispatchBody(t, d, e.body("cluster_delete", map[string]any{"uuid": *c.UUID})); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(*c.UUID, objects.DeleteInProgress, "")
	e.wantNotes("INFO magnum.cluster.update/pending status=CREATE_COMPLETE",
		"INFO magnum.cluster.update/pending status=UPDATE_COMPLETE",
		"INFO magnum.cluster.delete/pending status=UPDATE_IN_PROGRESS")

	res, err := dispatchBody(t, d, e.body("ping_conductor", map[string]any{}))
	if err != nil || res != true {
		t.Errorf("ping: %v %v", res, err)
	}
}

func TestDispatchRejectsBadArguments(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher()
	c := e.seed(e.ct, objects.CreateComplete, 1)
	for name, body := range map[string][]byte{
		"wrong type":     e.body("cluster_update", map[string]any{"cluster": e.primitive(c), "node_count": "three", "health_status": nil, "health_status_reason": nil}),
		"missing arg":    e.body("cluster_update", map[string]any{"cluster": e.primitive(c), "node_count": 3}),
		"not an object":  e.body("cluster_update", map[string]any{"cluster": "x", "node_count": 3, "health_status": nil, "health_status_reason": nil}),
		"wrong object":   e.body("rotate_ca_certificate", map[string]any{"cluster": e.primitive(e.nodegroup(c, "default-worker"))}),
		"unknown kwarg":  e.body("cluster_delete", map[string]any{"uuid": *c.UUID, "force": true}),
		"unknown object": e.body("cluster_delete", map[string]any{"uuid": newUUID()}),
	} {
		if _, err := dispatchBody(t, d, body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
	e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 1)
	e.wantNotes()
}
