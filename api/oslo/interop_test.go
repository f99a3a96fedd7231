package oslo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
)

const python = "/usr/bin/python3"

// pyPeer runs testdata/interop.py and yields its JSON lines.
type pyPeer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any
}

func startPython(t *testing.T, args ...string) *pyPeer {
	t.Helper()
	if _, err := exec.LookPath(python); err != nil {
		t.Fatalf("the Python reference (%s with oslo.messaging and magnum) is required: %v", python, err)
	}
	cmd := exec.Command(python, append([]string{"testdata/interop.py"}, args...)...)
	cmd.WaitDelay = 5 * time.Second // once killed, a child holding its pipes cannot keep Wait (and the cleanup) waiting
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &pyPeer{cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 100)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			} else {
				t.Logf("python: %s", sc.Text())
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return p
}

func (p *pyPeer) next(t *testing.T, timeout time.Duration) map[string]any {
	t.Helper()
	select {
	case m, ok := <-p.lines:
		if !ok {
			t.Fatal("python peer exited early")
		}
		return m
	case <-time.After(timeout):
		t.Fatal("python peer is silent")
	}
	return nil
}

func interopDispatcher(t *testing.T, rec *recorder) *Dispatcher {
	d := liveDispatcher(t, rec, nil)
	if err := d.Handle("not_implemented", Method(func(ctx context.Context, _ NoArgs) (any, error) {
		return nil, exception.NotImplemented("This feature is not yet implemented.")
	})); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/vectors/failure_reply.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures []struct {
			FailureDecoded Failure `json:"failure_decoded"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// raise_vector(value=i) fails as the i-th recorded failure class did.
	if err := d.Handle("raise_vector", Method(func(ctx context.Context, a echoArgs) (any, error) {
		i, _ := a.Value.(float64)
		f := doc.Failures[int(i)].FailureDecoded
		return nil, f.Error()
	})); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("not_supported", Method(func(ctx context.Context, _ NoArgs) (any, error) {
		return nil, exception.NotSupported("Resizing")
	})); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestInteropPythonClientCallsGoServer: oslo.messaging's RPCClient calls and
// casts our server; each failure comes back as the exception Python
// rebuilds.
func TestInteropPythonClientCallsGoServer(t *testing.T) {
	e := newEnv(t)
	rec := newRecorder()
	e.startServer(interopDispatcher(t, rec))
	py := startPython(t, "client", brokerURL, e.opts.ControlExchange, e.topic)
	got := map[string]map[string]any{}
	for len(got) < 13+13 {
		m := py.next(t, 60*time.Second)
		got[m["check"].(string)] = m
	}
	errOf := func(name string) map[string]any {
		m := got[name]
		if m["ok"] != false {
			t.Fatalf("%s: expected an exception, got %v", name, m)
		}
		return m["error"].(map[string]any)
	}
	hasMRO := func(e map[string]any, cls string) bool {
		for _, c := range e["mro"].([]any) {
			if c == cls {
				return true
			}
		}
		return false
	}
	// Every failure class the reference sent is rebuilt by Python exactly
	// as it rebuilt the reference's.
	vb, _ := os.ReadFile("testdata/vectors/failure_reply.json")
	var vdoc struct {
		Failures []struct {
			FailureDecoded Failure `json:"failure_decoded"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(vb, &vdoc); err != nil {
		t.Fatal(err)
	}
	for i, v := range vdoc.Failures {
		f := v.FailureDecoded
		e := errOf(fmt.Sprintf("vector_%d", i))
		switch f.Module {
		case exception.ModuleMagnum:
			if e["type"] != f.Class+"_Remote" || !hasMRO(e, f.Module+"."+f.Class) || e["str"] != f.Message {
				t.Errorf("vector %d %s: %v", i, f.Class, e)
			}
			jsonEqual(t, f.Class+" kwargs", e["kwargs"], f.Kwargs)
		case exception.ModuleBuiltins:
			if e["type"] != f.Class || e["str"] != f.Message {
				t.Errorf("vector %d %s: %v", i, f.Class, e)
			}
		default:
			if e["type"] != "RemoteError" || e["exc_type"] != f.Class || e["value"] != f.Message {
				t.Errorf("vector %d %s: %v", i, f.Class, e)
			}
		}
	}
	if got["ping"]["result"] != true {
		t.Errorf("ping: %v", got["ping"])
	}
	jsonEqual(t, "echo", got["echo"]["result"], map[string]any{"value": map[string]any{"a": []any{1, "é"}},
		"request_id": "req-from-python", "user_id": "py-user"})

	magnum := []struct {
		check, class, str string
		kwargs            map[string]any
	}{
		{"not_found", "ClusterNotFound", "Cluster abc could not be found.", map[string]any{"cluster": "abc", "code": 404}},
		{"plain_error", "MagnumException", "disk on fire", map[string]any{"code": 500}},
		{"boom", "MagnumException", "panic in RPC method: assignment to entry in nil map", map[string]any{"code": 500}},
		{"not_supported", "NotSupported", "Resizing is not supported.", map[string]any{"operation": "Resizing", "code": 400}},
	}
	for _, c := range magnum {
		e := errOf(c.check)
		if e["type"] != c.class+"_Remote" || e["module"] != "magnum.common.exception_Remote" ||
			!hasMRO(e, "magnum.common.exception."+c.class) || e["str"] != c.str {
			t.Errorf("%s: %v", c.check, e)
		}
		jsonEqual(t, c.check+" kwargs", e["kwargs"], c.kwargs)
	}
	for check, want := range map[string]string{"no_such_method": "NoSuchMethod", "version": "UnsupportedVersion"} {
		e := errOf(check)
		if e["type"] != "RemoteError" || e["exc_type"] != want {
			t.Errorf("%s: %v", check, e)
		}
	}
	for check, want := range map[string][2]string{
		"type_error":      {"TypeError", "Handler.ping_conductor() got an unexpected keyword argument 'bogus'"},
		"not_implemented": {"NotImplementedError", "This feature is not yet implemented."},
	} {
		e := errOf(check)
		if e["type"] != want[0] || e["module"] != "builtins" || e["str"] != want[1] {
			t.Errorf("%s: %v", check, e)
		}
	}
	if e := errOf("timeout"); e["type"] != "MessagingTimeout" {
		t.Errorf("timeout: %v", e)
	}
	if got["call_monitor"]["result"] != "slept" {
		t.Errorf("call monitor: %v", got["call_monitor"])
	}
	rec.wait(t, "python-cast")
	rec.wait(t, "python-fanout")
}

// TestInteropGoClientCallsPythonServer: our client against oslo.messaging's
// RPC server; Python's exceptions come back typed.
func TestInteropGoClientCallsPythonServer(t *testing.T) {
	e := newEnv(t)
	py := startPython(t, "server", brokerURL, e.opts.ControlExchange, e.topic)
	e.cleanups = append(e.cleanups, e.topic+".pyserver")
	if m := py.next(t, 30*time.Second); m["ready"] != true {
		t.Fatalf("python server: %v", m)
	}
	c := e.client()
	ctx := userCtx()
	for _, tgt := range []Target{{Topic: e.topic}, {Topic: e.topic, Server: "pyserver"}} {
		res, err := c.Call(ctx, tgt, "echo", map[string]any{"value": []any{1, "x"}, "note": "n"})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(res, &m)
		jsonEqual(t, "echo", m, map[string]any{"value": []any{1, "x"}, "request_id": "req-test", "user_id": "u1", "note": "n"})
	}
	tgt := Target{Topic: e.topic}
	_, err := c.Call(ctx, tgt, "fail_not_supported", nil)
	var ex *exception.Error
	if !errors.As(err, &ex) || ex.Class != "NotSupported" || ex.Code != 400 || ex.Message != "Resizing is not supported." ||
		ex.Kwargs["operation"] != "Resizing" || !errors.Is(err, exception.ClassNotSupported.New(nil)) {
		t.Errorf("NotSupported: %#v", err)
	}
	_, err = c.Call(ctx, tgt, "fail_conflict_message", nil)
	if !errors.As(err, &ex) || ex.Class != "Conflict" || ex.Code != 409 || ex.Message != "Multiple clusters exist with same name." {
		t.Errorf("Conflict: %#v", err)
	}
	_, err = c.Call(ctx, tgt, "fail_value_error", nil)
	if !errors.As(err, &ex) || ex.Module != "builtins" || ex.Class != "ValueError" || ex.Message != "bad value" {
		t.Errorf("ValueError: %#v", err)
	}
	_, err = c.Call(ctx, tgt, "missing", nil)
	if !errors.As(err, &ex) || ex.Module != exception.ModuleDispatcher || ex.Class != "NoSuchMethod" {
		t.Errorf("NoSuchMethod: %#v", err)
	}
	_, err = c.Call(ctx, tgt, "echo", map[string]any{"bogus": 1})
	if !errors.As(err, &ex) || ex.Class != "TypeError" || !strings.Contains(ex.Message, "unexpected keyword argument 'bogus'") {
		t.Errorf("TypeError: %#v", err)
	}
	_, err = c.Call(ctx, tgt, "slow", map[string]any{"seconds": 3}, CallOptions{Timeout: time.Second})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Errorf("timeout: %v", err)
	}
}

// TestInteropPythonListenerReceivesNotifications: oslo.messaging's
// notification listener receives what our notifier sends.
func TestInteropPythonListenerReceivesNotifications(t *testing.T) {
	e := newEnv(t)
	topic := "notif_" + uuidHex()[:8]
	e.cleanups = append(e.cleanups, topic+".info", topic+".error")
	py := startPython(t, "listener", brokerURL, e.opts.ControlExchange, topic, "2")
	if m := py.next(t, 30*time.Second); m["ready"] != true {
		t.Fatalf("python listener: %v", m)
	}
	e.opts.Notifications.Driver = []string{"messagingv2"}
	e.opts.Notifications.Topics = []string{topic}
	e.opts.Host = "go-conductor"
	n, err := NewNotifier(e.opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	payload := map[string]any{"outcome": "pending", "action": "update"}
	if err := n.Notify(userCtx(), "INFO", "magnum.cluster.update", payload); err != nil {
		t.Fatal(err)
	}
	if err := n.Notify(userCtx(), "ERROR", "magnum.cluster.delete", payload); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		m := py.next(t, 30*time.Second)
		ctxt, _ := m["ctxt"].(map[string]any)
		if m["publisher_id"] != "container-infra.go-conductor" || ctxt["request_id"] != "req-test" ||
			ctxt["auth_token"] != nil || ctxt["global_request_id"] != "req-global" {
			t.Errorf("notification %v", m)
		}
		jsonEqual(t, "payload", m["payload"], payload)
		md, _ := m["metadata"].(map[string]any)
		if ts, _ := md["timestamp"].(string); len(ts) != len("2026-11-29 21:50:15.576717") {
			t.Errorf("metadata %v", md)
		}
		seen[m["priority"].(string)+" "+m["event_type"].(string)] = true
	}
	if !seen["info magnum.cluster.update"] || !seen["error magnum.cluster.delete"] {
		t.Fatalf("seen %v", seen)
	}
}
