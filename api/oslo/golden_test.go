package oslo

import (
	"context"
	"encoding/json"
	"github.com/openstack/magnum-conductor/api/pyjson"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/request"
)

// frame is one recorded AMQP message of wire/vectors (copied to
// testdata/vectors).
type frame struct {
	File    string
	Name    string
	BodyRaw string
	Message map[string]any
}

// loadFrames returns every object with a "body_raw" in the vectors.
func loadFrames(t testing.TB) []frame {
	t.Helper()
	files, err := filepath.Glob("testdata/vectors/*.json")
	if err != nil || len(files) != 60 {
		t.Fatalf("want the 60 recorded vectors, got %d (%v)", len(files), err)
	}
	var out []frame
	var walk func(file string, v any)
	walk = func(file string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if b, ok := x["body_raw"].(string); ok {
				m, _ := x["message"].(map[string]any)
				name, _ := x["name"].(string)
				out = append(out, frame{File: filepath.Base(file), Name: name, BodyRaw: b, Message: m})
			}
			for _, c := range x {
				walk(file, c)
			}
		case []any:
			for _, c := range x {
				walk(file, c)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(f, v)
	}
	return out
}

func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var out any
		_ = json.Unmarshal(b, &out)
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		t.Errorf("%s differs:\n got %s\nwant %s", what, gb, wb)
	}
}

func TestGoldenRequestsDecode(t *testing.T) {
	n := 0
	for _, f := range loadFrames(t) {
		if _, ok := f.Message["method"]; !ok {
			continue
		}
		n++
		t.Run(f.File+"/"+f.Name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(f.BodyRaw))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := req.MethodName()
			if m != f.Message["method"] {
				t.Errorf("method %q, want %v", m, f.Message["method"])
			}
			str := func(k string) string { s, _ := f.Message[k].(string); return s }
			if req.MsgID != str("_msg_id") || req.ReplyQ != str("_reply_q") || req.UniqueID != str("_unique_id") {
				t.Errorf("ids %q %q %q", req.MsgID, req.ReplyQ, req.UniqueID)
			}
			if to, ok := f.Message["_timeout"].(float64); ok && req.Timeout != to {
				t.Errorf("_timeout %v, want %v", req.Timeout, to)
			}
			jsonEqual(t, "args", req.Args, f.Message["args"])
			wantCtx := map[string]any{}
			for k, v := range f.Message {
				if strings.HasPrefix(k, "_context_") {
					wantCtx[strings.TrimPrefix(k, "_context_")] = v
				}
			}
			jsonEqual(t, "context", req.Context, wantCtx)
			rc := request.FromWire(req.Context)
			if rc.RequestID != wantCtx["request_id"] {
				t.Errorf("request_id %q, want %v", rc.RequestID, wantCtx["request_id"])
			}
			if len(req.Other) != 0 {
				t.Errorf("unexpected keys %v", req.Other)
			}
		})
	}
	if n < 30 {
		t.Fatalf("only %d request frames", n)
	}
}

// TestGoldenRepliesEncode rebuilds every recorded reply from its result (or
// failure) and compares it with the recording, except for _unique_id and
// the traceback.
func TestGoldenRepliesEncode(t *testing.T) {
	n := 0
	for _, f := range loadFrames(t) {
		if _, ok := f.Message["ending"]; !ok {
			continue
		}
		n++
		t.Run(f.File+"/"+f.Name, func(t *testing.T) {
			msgID, _ := f.Message["_msg_id"].(string)
			ending, _ := f.Message["ending"].(bool)
			var body []byte
			var err error
			switch {
			case !ending:
				body, err = encodeReply(msgID, nil, nil, false)
			case f.Message["failure"] != nil:
				fail, derr := DecodeFailure(f.Message["failure"].(string))
				if derr != nil {
					t.Fatal(derr)
				}
				body, err = buildReply(nil, msgID, nil, fail.Error())
			default:
				body, err = buildReply(nil, msgID, f.Message["result"], nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]any
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatal(err)
			}
			if len(env) != 2 || env["oslo.version"] != "2.0" {
				t.Fatalf("envelope %v", env)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(env["oslo.message"].(string)), &got); err != nil {
				t.Fatal(err)
			}
			if u, _ := got["_unique_id"].(string); len(u) != 32 || u == f.Message["_unique_id"] {
				t.Errorf("_unique_id %q is not a fresh uuid4 hex", u)
			}
			want := map[string]any{}
			for k, v := range f.Message {
				want[k] = v
			}
			got["_unique_id"], want["_unique_id"] = nil, nil
			if gf, ok := got["failure"].(string); ok {
				got["failure"] = failureWithoutTB(t, gf)
				want["failure"] = failureWithoutTB(t, want["failure"].(string))
			}
			jsonEqual(t, "reply", got, want)
			// Key order as the reference writes it.
			inner := env["oslo.message"].(string)
			if !strings.HasPrefix(inner, `{"result": `) || !strings.Contains(inner, `, "ending": `) {
				t.Errorf("reply layout %q", inner[:min(len(inner), 80)])
			}
		})
	}
	if n < 25 {
		t.Fatalf("only %d reply frames", n)
	}
}

func failureWithoutTB(t *testing.T, s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	tb, _ := m["tb"].([]any)
	if len(tb) == 0 {
		t.Errorf("failure without traceback: %s", s)
	} else {
		m["tb_last"] = tb[len(tb)-1]
		if first, _ := tb[0].(string); first != "Traceback (most recent call last):\n" {
			t.Errorf("tb starts with %q", first)
		}
	}
	delete(m, "tb")
	return m
}

// TestGoldenFailureRoundTrip decodes each failure class of
// failure_reply.json into a Go error and encodes it again.
func TestGoldenFailureRoundTrip(t *testing.T) {
	b, err := os.ReadFile("testdata/vectors/failure_reply.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures []struct {
			Name           string  `json:"name"`
			FailureDecoded Failure `json:"failure_decoded"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Failures) != 13 {
		t.Fatalf("want 13 failure classes, got %d", len(doc.Failures))
	}
	for _, fc := range doc.Failures {
		t.Run(fc.Name, func(t *testing.T) {
			orig := fc.FailureDecoded
			s, _ := orig.Encode()
			dec, err := DecodeFailure(s)
			if err != nil {
				t.Fatal(err)
			}
			e := dec.Error()
			if e.Class != orig.Class || e.Module != orig.Module || e.Message != orig.Message {
				t.Fatalf("rebuilt %s.%s %q", e.Module, e.Class, e.Message)
			}
			if c, ok := orig.Kwargs["code"].(float64); ok && e.Code != int(c) {
				t.Errorf("code %d, want %v", e.Code, c)
			}
			var rt *RemoteTraceback
			if !asRemoteTB(e, &rt) || len(rt.Lines) != len(orig.TB) {
				t.Errorf("remote traceback not kept")
			}
			if c, known := exception.Lookup(orig.Class); orig.Module == exception.ModuleMagnum && known {
				var target = c.New(nil)
				if !errorsIs(e, target) {
					t.Errorf("errors.Is(%s) false", orig.Class)
				}
			}
			again := FailureFromError(e)
			jsonEqual(t, "args", again.Args, orig.Args)
			jsonEqual(t, "kwargs", again.Kwargs, orig.Kwargs)
			if again.Class != orig.Class || again.Module != orig.Module || again.Message != orig.Message {
				t.Errorf("re-encoded %s.%s %q", again.Module, again.Class, again.Message)
			}
			if got, want := again.TB[len(again.TB)-1], orig.TB[len(orig.TB)-1]; got != want && !strings.HasPrefix(want, got[:len(got)-1]) {
				t.Errorf("tb last line %q, want %q", got, want)
			}
		})
	}
}

// testDispatcher has the methods the reference conductor serves in the
// probes, with the same argument names.
func testDispatcher(t testing.TB) *Dispatcher {
	d := NewDispatcher()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Handle("ping_conductor", Method(func(ctx context.Context, _ NoArgs) (any, error) { return true, nil })))
	type clusterArgs struct {
		Cluster json.RawMessage `json:"cluster"`
	}
	must(d.Handle("rotate_ca_certificate", Method(func(ctx context.Context, a clusterArgs) (any, error) {
		return nil, exception.InvalidParameterValue("Cannot overwrite UUID for an existing Cluster.")
	})))
	must(d.Handle("credential_rotate_never", Method(func(ctx context.Context, a clusterArgs) (any, error) { return nil, nil })))
	type fedArgs struct {
		Federation    json.RawMessage `json:"federation"`
		CreateTimeout *int            `json:"create_timeout"`
	}
	must(d.Handle("federation_create", Method(func(ctx context.Context, a fedArgs) (any, error) {
		return nil, exception.NotImplemented("This feature is not yet implemented.")
	})))
	return d
}

// TestDispatcherFailuresMatchReference replays the hand-built probes and the
// recorded NoSuchMethod / NotImplementedError calls against a dispatcher
// and compares the failures with what the Python conductor sent.
func TestDispatcherFailuresMatchReference(t *testing.T) {
	d := testDispatcher(t)
	ping := func(extra string) string {
		return `{"oslo.version": "2.0", "oslo.message": "{\"method\": \"ping_conductor\", \"args\": {}` + extra +
			`, \"_msg_id\": \"m\", \"_reply_q\": \"reply_x\", \"_unique_id\": \"u\", \"_context_request_id\": \"req-1\"}"}`
	}
	cases := []struct {
		name, body, class, module, message string
	}{
		{"version_2_0", ping(`, \"version\": \"2.0\"`), "UnsupportedVersion", exception.ModuleDispatcher,
			"Endpoint does not support RPC version 2.0. Attempted method: ping_conductor"},
		{"version_1_9", ping(`, \"version\": \"1.9\"`), "UnsupportedVersion", exception.ModuleDispatcher,
			"Endpoint does not support RPC version 1.9. Attempted method: ping_conductor"},
		{"namespace", ping(`, \"namespace\": \"ns\"`), "UnsupportedVersion", exception.ModuleDispatcher,
			"Endpoint does not support RPC version 1.0. Attempted method: ping_conductor"},
		{"private_method", strings.Replace(ping(""), "ping_conductor", "_object_dispatch", 1), "NoSuchMethod",
			exception.ModuleDispatcher, "Endpoint does not support RPC method _object_dispatch"},
		{"unknown_method", strings.Replace(ping(""), "ping_conductor", "no_such_method", 1), "NoSuchMethod",
			exception.ModuleDispatcher, "Endpoint does not support RPC method no_such_method"},
		{"bad_args", strings.Replace(ping(""), `\"args\": {}`, `\"args\": {\"bogus\": 1}`, 1), "TypeError",
			exception.ModuleBuiltins, "Handler.ping_conductor() got an unexpected keyword argument 'bogus'"},
		{"missing_args", strings.Replace(strings.Replace(ping(""), "ping_conductor", "rotate_ca_certificate", 1), `\"args\": {}`, `\"args\": {}`, 1),
			"TypeError", exception.ModuleBuiltins, "Handler.rotate_ca_certificate() missing 1 required positional argument: 'cluster'"},
		{"args_list", strings.Replace(ping(""), `\"args\": {}`, `\"args\": []`, 1), "AttributeError",
			exception.ModuleBuiltins, "'list' object has no attribute 'items'"},
		{"no_method", strings.Replace(ping(""), `\"method\": \"ping_conductor\", `, ``, 1), "TypeError",
			exception.ModuleBuiltins, "attribute name must be string, not 'NoneType'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Dispatch(context.Background(), req)
			f := FailureFromError(err)
			if f.Class != c.class || f.Module != c.module || f.Message != c.message {
				t.Fatalf("got %s.%s %q", f.Module, f.Class, f.Message)
			}
			jsonEqual(t, "args", f.Args, []any{c.message})
			if c.module != exception.ModuleMagnum && len(f.Kwargs) != 0 {
				t.Errorf("kwargs %v, want {}", f.Kwargs)
			}
		})
	}
	// Recorded requests whose recorded reply is a dispatcher or builtin
	// failure: same class, module, message, args and kwargs.
	replies := map[string]map[string]any{}
	frames := loadFrames(t)
	for _, f := range frames {
		if id, ok := f.Message["_msg_id"].(string); ok && f.Message["failure"] != nil {
			replies[id] = failureWithoutTB(t, f.Message["failure"].(string))
		}
	}
	for _, fname := range []string{"call_object_class_action_versions_request.json", "call_credential_rotate_request.json", "call_federation_create_request.json"} {
		for _, f := range frames {
			if f.File != fname {
				continue
			}
			t.Run(fname, func(t *testing.T) {
				req, err := DecodeRequest([]byte(f.BodyRaw))
				if err != nil {
					t.Fatal(err)
				}
				_, err = d.Dispatch(context.Background(), req)
				s, _ := FailureFromError(err).Encode()
				jsonEqual(t, "failure", failureWithoutTB(t, s), replies[req.MsgID])
			})
		}
	}
}

func TestMethodMissingArgumentsMessage(t *testing.T) {
	type args struct {
		Cluster       json.RawMessage `json:"cluster"`
		MasterCount   int             `json:"master_count"`
		NodeCount     int             `json:"node_count"`
		CreateTimeout *int            `json:"create_timeout,omitempty"`
	}
	fn := Method(func(ctx context.Context, a args) (any, error) { return a.NodeCount, nil })
	_, err := fn(context.Background(), &Call{Method: "cluster_create", Class: "Handler"})
	want := "Handler.cluster_create() missing 3 required positional arguments: 'cluster', 'master_count', and 'node_count'"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	res, err := fn(context.Background(), &Call{Method: "cluster_create", Class: "Handler", Args: []Kwarg{
		{"cluster", json.RawMessage(`{}`)}, {"master_count", json.RawMessage(`1`)}, {"node_count", json.RawMessage(`3`)}}})
	if err != nil || res != 3 {
		t.Fatalf("got %v %v", res, err)
	}
	_, err = fn(context.Background(), &Call{Method: "cluster_create", Class: "Handler", Args: []Kwarg{
		{"cluster", json.RawMessage(`{}`)}, {"master_count", json.RawMessage(`"x"`)}, {"node_count", json.RawMessage(`3`)}}})
	var e *exception.Error
	if !asError(err, &e) || e.Class != "TypeError" {
		t.Fatalf("wrong type should be a TypeError, got %v", err)
	}
}

func TestUndecodableMessages(t *testing.T) {
	cases := map[string]struct {
		body      string
		canReply  bool
		wantClass string
	}{
		"not json":       {body: "\x00\x01garbage", canReply: false},
		"json array":     {body: `[1,2]`, canReply: false},
		"inner not json": {body: `{"oslo.version": "2.0", "oslo.message": "{nope"}`, canReply: false},
		"envelope 3.0": {body: `{"oslo.version": "3.0", "oslo.message": "{\"method\": \"ping_conductor\", \"_msg_id\": \"m\", \"_reply_q\": \"reply_q\"}"}`,
			canReply: true, wantClass: "UnsupportedRpcEnvelopeVersion"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(c.body))
			if err == nil || req != nil {
				t.Fatalf("decoded %v", req)
			}
			var de *DecodeError
			if !asDecodeError(err, &de) {
				t.Fatalf("error %T", err)
			}
			replyable := de.Request != nil && de.Request.MsgID != "" && de.Failure != nil
			if replyable != c.canReply {
				t.Fatalf("replyable %v", replyable)
			}
			if c.canReply && de.Failure.Class != c.wantClass {
				t.Fatalf("class %s", de.Failure.Class)
			}
		})
	}
	// No envelope: the body is the message itself.
	req, err := DecodeRequest([]byte(`{"method": "ping_conductor", "args": {}, "_unique_id": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := req.MethodName(); m != "ping_conductor" || req.UniqueID != "x" {
		t.Fatalf("got %+v", req)
	}
}

// TestGoldenReplyBytes checks that simple replies are byte-identical to
// the reference except for the fresh _unique_id.
func TestGoldenReplyBytes(t *testing.T) {
	for _, f := range loadFrames(t) {
		if f.File != "call_ping_reply.json" && f.File != "call_monitor_heartbeat.json" {
			continue
		}
		if f.Message["failure"] != nil || f.Message["ending"] == nil {
			continue
		}
		msgID := f.Message["_msg_id"].(string)
		body, err := encodeReply(msgID, json.RawMessage(mustJSON(t, f.Message["result"])), nil, f.Message["ending"].(bool))
		if err != nil {
			t.Fatal(err)
		}
		var env map[string]string
		_ = json.Unmarshal(body, &env)
		var got map[string]any
		_ = json.Unmarshal([]byte(env["oslo.message"]), &got)
		want := strings.Replace(f.BodyRaw, f.Message["_unique_id"].(string), got["_unique_id"].(string), 1)
		if string(body) != want {
			t.Errorf("%s:\n got %s\nwant %s", f.Name, body, want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenClientRequestsMatchReference encodes each recorded request with
// our client encoder (same method, args and context) and compares it with
// what magnum-api sent: byte for byte, apart from the fresh _unique_id.
func TestGoldenClientRequestsMatchReference(t *testing.T) {
	n := 0
	for _, f := range loadFrames(t) {
		method, ok := f.Message["method"].(string)
		if !ok || f.File == "raw_probes.json" || f.File == "call_monitor_heartbeat.json" {
			continue
		}
		n++
		t.Run(f.File, func(t *testing.T) {
			req, err := DecodeRequest([]byte(f.BodyRaw))
			if err != nil {
				t.Fatal(err)
			}
			ctx := request.With(context.Background(), request.FromWire(req.Context))
			var cm time.Duration
			if req.Timeout > 0 {
				cm = time.Duration(req.Timeout) * time.Second
			}
			body, err := encodeRequest(ctx, Target{Topic: "magnum-conductor"}, method, req.Args, req.MsgID, req.ReplyQ, cm)
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]string
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(env["oslo.message"]), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{}
			for k, v := range f.Message {
				want[k] = v
			}
			got["_unique_id"], want["_unique_id"] = nil, nil
			jsonEqual(t, "request", got, want)
			// Byte for byte, apart from the fresh _unique_id.
			var ids struct {
				UniqueID string `json:"_unique_id"`
			}
			_ = json.Unmarshal([]byte(env["oslo.message"]), &ids)
			var refIDs struct {
				UniqueID string `json:"_unique_id"`
			}
			_ = json.Unmarshal([]byte(f.Message2(t)), &refIDs)
			if want := strings.Replace(f.BodyRaw, refIDs.UniqueID, ids.UniqueID, 1); string(body) != want {
				t.Errorf("bytes differ:\n got %.300s\nwant %.300s", body, want)
			}
			// Same key order as the reference.
			if g, w := keyOrder(t, env["oslo.message"]), keyOrder(t, f.Message2(t)); strings.Join(g, ",") != strings.Join(w, ",") {
				t.Errorf("key order\n got %v\nwant %v", g, w)
			}
		})
	}
	if n < 25 {
		t.Fatalf("only %d requests", n)
	}
}

// Message2 returns the inner message text of the frame.
func (f frame) Message2(t *testing.T) string {
	var env map[string]string
	if err := json.Unmarshal([]byte(f.BodyRaw), &env); err != nil {
		t.Fatal(err)
	}
	return env["oslo.message"]
}

func keyOrder(t *testing.T, obj string) []string {
	dec := json.NewDecoder(strings.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for dec.More() {
		tok, _ := dec.Token()
		out = append(out, tok.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	return out
}

// TestGoldenReplyBytesRawResult: every recorded successful reply, its
// result handed over as the bytes Python laid out (a pyjson.Raw, or the
// *pyjson.Buffer the indirection API hands over object primitives in), is
// rebuilt byte for byte apart from the fresh _unique_id.
func TestGoldenReplyBytesRawResult(t *testing.T) {
	n := 0
	for _, f := range loadFrames(t) {
		if f.Message["failure"] != nil || f.Message["ending"] == nil || !strings.HasPrefix(f.BodyRaw, envelopePrefix) {
			continue
		}
		msg, err := unwrapEnvelope([]byte(f.BodyRaw))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		// As a Raw, as a pooled Buffer written into a used buffer (the
		// server's reply path), and as a Buffer holding the result already
		// escaped (the indirection API's objects).
		buf := &pyjson.Buffer{B: append([]byte(nil), msg["result"]...)}
		escaped := &pyjson.Buffer{B: pyjson.AppendStringBody(nil, string(msg["result"])), Escaped: true}
		used := []byte("an earlier reply, longer than nothing")
		for i, res := range []any{pyjson.Raw(msg["result"]), buf, escaped} {
			body, err := appendReply(used[:min(i, 1)*len(used)], f.Message["_msg_id"].(string), res, nil, f.Message["ending"].(bool))
			if err != nil {
				t.Fatal(err)
			}
			got, err := unwrapEnvelope(body)
			if err != nil {
				t.Fatalf("%s: our reply does not decode: %v", f.Name, err)
			}
			var uid string
			_ = json.Unmarshal(got["_unique_id"], &uid)
			want := strings.Replace(f.BodyRaw, f.Message["_unique_id"].(string), uid, 1)
			if string(body) != want {
				t.Errorf("%s (%T):\n got %s\nwant %s", f.Name, res, body, want)
			}
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d recorded replies checked", n)
	}
}
