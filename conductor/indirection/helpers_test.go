package indirection

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/db/dbtest"
)

// vectorsDir holds the recorded frames (a copy of the shared reference
// wire/vectors, kept with the transport's tests).
const vectorsDir = "../../api/oslo/testdata/vectors"

// newHandler returns a Handler on a fresh MariaDB database at head.
func newHandler(t *testing.T) (*Handler, *db.Store) {
	t.Helper()
	s := dbtest.MySQLStore(t, db.Options{}, nil)
	return New(s, slog.New(slog.DiscardHandler)), s
}

// vectorCtx is the request context of the vectors' client (admin, all
// tenants, project a1b2…).
func vectorCtx() context.Context {
	return request.With(context.Background(), &request.Context{
		IsAdmin: true, AllTenants: true, ProjectID: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
		UserID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", RequestID: request.NewRequestID(),
	})
}

func projectCtx(project string) context.Context {
	return request.With(context.Background(), &request.Context{ProjectID: project, UserID: "u-" + project})
}

// vectorArgs returns the "args" of a request vector and the "result" of a
// reply vector.
type vectorMessage struct {
	Method string                     `json:"method"`
	Args   map[string]json.RawMessage `json:"args"`
	Result json.RawMessage            `json:"result"`
}

func loadVector(t *testing.T, name string) vectorMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatalf("wire vectors (part of the repository): %v", err)
	}
	var v struct {
		Message vectorMessage `json:"message"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Message
}

// replay runs an object_action request vector against h.
func replay(t *testing.T, h *Handler, name string) (any, error) {
	t.Helper()
	m := loadVector(t, name)
	var method string
	var args []json.RawMessage
	var kwargs map[string]json.RawMessage
	mustUnmarshal(t, m.Args["objmethod"], &method)
	mustUnmarshal(t, m.Args["args"], &args)
	mustUnmarshal(t, m.Args["kwargs"], &kwargs)
	return h.ObjectAction(vectorCtx(), m.Args["objinst"], method, args, kwargs)
}

func mustUnmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
}

// jsonOf marshals v and decodes it again into plain JSON values.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	mustUnmarshal(t, b, &out)
	return out
}

func raws(t *testing.T, vs ...any) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func kw(t *testing.T, m map[string]any) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for k, v := range m {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = b
	}
	return out
}

// wantError checks that err is an *exception.Error of module/class.
func wantError(t *testing.T, err error, module, class string) *exception.Error {
	t.Helper()
	var e *exception.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want %s.%s", err, err, module, class)
	}
	if e.Module != module || e.Class != class {
		t.Fatalf("error %s.%s %q, want %s.%s", e.Module, e.Class, e.Message, module, class)
	}
	return e
}
