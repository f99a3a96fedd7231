package oslo

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/pyjson"
)

// Failure is the JSON that oslo.messaging puts (as a string) in the
// "failure" key of a reply (common.serialize_remote_exception).
type Failure struct {
	Class   string         `json:"class"`
	Module  string         `json:"module"`
	Message string         `json:"message"`
	TB      []string       `json:"tb"`
	Args    []any          `json:"args"`
	Kwargs  map[string]any `json:"kwargs"`
}

// RemoteTraceback is the Cause of an *exception.Error rebuilt from a
// failure: the remote side's traceback lines.
type RemoteTraceback struct {
	Lines []string
}

func (t *RemoteTraceback) Error() string { return strings.Join(t.Lines, "") }

// FailureFromError turns err into the failure a Python peer rebuilds as the
// same exception: Magnum classes get args [message] and their kwargs plus
// "code"; builtins and oslo classes get args [message] and no kwargs. A
// plain Go error becomes MagnumException (500). tb is a Python-style
// traceback without frames (see traceback).
func FailureFromError(err error) *Failure {
	e := exception.Wrap(err)
	f := &Failure{Class: e.Class, Module: e.Module, Message: e.Message, Args: []any{e.Message}, Kwargs: map[string]any{}}
	if f.Module == "" {
		f.Module = exception.ModuleMagnum
	}
	if f.Module == exception.ModuleMagnum {
		for k, v := range e.Kwargs {
			if k == "message" {
				// MagnumException(message=...) keeps it out of self.kwargs.
				continue
			}
			f.Kwargs[k] = jsonSafe(v)
		}
		code := e.Code
		if code == 0 {
			code = 500
		}
		f.Kwargs["code"] = code
	}
	f.TB = traceback(f, err)
	return f
}

// jsonSafe replaces values that encoding/json cannot encode by their
// Python str().
func jsonSafe(v any) any {
	if _, err := json.Marshal(v); err != nil {
		return exception.PyStr(v)
	}
	return v
}

// traceback is the "tb" of a failure: Python's first line (magnum-api's
// NoExceptionTracebackHook cuts a fault string there), the Go cause when it
// says more than the message, and "<module>.<Class>: <message>". It holds
// no stack frames: a Go stack at the reply would only name the server's
// own source files (paths of the build machine) without saying where the
// error arose; the conductor's log has the details.
func traceback(f *Failure, err error) []string {
	tb := []string{"Traceback (most recent call last):\n"}
	var e *exception.Error
	if errors.As(err, &e) && e.Cause != nil {
		if cause := e.Cause.Error(); cause != f.Message {
			tb = append(tb, "  Go cause: "+cause+"\n")
		}
	}
	name := f.Class
	if f.Module != exception.ModuleBuiltins {
		name = f.Module + "." + f.Class
	}
	return append(tb, name+": "+f.Message+"\n")
}

// Encode returns the failure as the JSON string that travels in a reply.
func (f *Failure) Encode() (string, error) {
	b, err := pyjson.Marshal(f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DecodeFailure parses the "failure" string of a reply.
func DecodeFailure(s string) (*Failure, error) {
	var f Failure
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, fmt.Errorf("decoding RPC failure: %w", err)
	}
	return &f, nil
}

// Error rebuilds the failure as a typed Go error: an *exception.Error with
// the remote module, class, message and kwargs ("code" moves to Code), and
// the remote traceback as Cause.
func (f *Failure) Error() *exception.Error {
	e := &exception.Error{Module: f.Module, Class: f.Class, Message: f.Message, Code: 500, Kwargs: map[string]any{}}
	if e.Module == "exceptions" {
		e.Module = exception.ModuleBuiltins
	}
	for k, v := range f.Kwargs {
		if k == "code" {
			switch c := v.(type) {
			case float64:
				e.Code = int(c)
			case int:
				e.Code = c
			}
			continue
		}
		e.Kwargs[k] = v
	}
	if e.Module == exception.ModuleMagnum && len(f.Args) > 0 {
		// MagnumException(message, **kwargs): an explicit message that
		// differs from the class format is kept so that it survives a
		// re-send.
		if m, ok := f.Args[0].(string); ok {
			if c, known := exception.Lookup(e.Class); known && c.New(copyMap(e.Kwargs)).Message != m {
				e.Kwargs["message"] = m
			}
		}
	}
	if len(f.TB) > 0 {
		e.Cause = &RemoteTraceback{Lines: f.TB}
	}
	return e
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Dispatcher failures (oslo_messaging.rpc.dispatcher).
func noSuchMethod(method string) *exception.Error {
	return &exception.Error{Module: exception.ModuleDispatcher, Class: "NoSuchMethod", Code: 500,
		Message: "Endpoint does not support RPC method " + method}
}

func unsupportedVersion(version, method string) *exception.Error {
	msg := "Endpoint does not support RPC version " + version
	if method != "" {
		msg += ". Attempted method: " + method
	}
	return &exception.Error{Module: exception.ModuleDispatcher, Class: "UnsupportedVersion", Code: 500, Message: msg}
}
