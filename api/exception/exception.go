// Package exception is the catalogue of Magnum's exception classes
// (magnum.common.exception) and a Go error type that carries one across the
// RPC edge: class, module, HTTP code, message and the constructor kwargs a
// Python peer needs to rebuild it.
package exception

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Python module names that oslo.messaging writes into failures.
const (
	ModuleMagnum     = "magnum.common.exception"
	ModuleBuiltins   = "builtins"
	ModuleDispatcher = "oslo_messaging.rpc.dispatcher"
	ModuleOVO        = "oslo_versionedobjects.exception"
	ModuleOsloDB     = "oslo_db.exception"
)

type classInfo struct {
	Name   string
	Parent string
	Code   int
	Format string
	// Until is the Magnum release that dropped the class ("" if the
	// newest release has it). Such classes stay, for the older peers.
	Until string
}

var byName = func() map[string]classInfo {
	m := make(map[string]classInfo, len(catalogue))
	for _, c := range catalogue {
		m[c.Name] = c
	}
	return m
}()

// Error is an exception that crosses the RPC edge. For Magnum classes,
// Kwargs are the constructor's keyword arguments; "code" is added when the
// failure is serialized, as MagnumException.__init__ does.
type Error struct {
	Module  string
	Class   string
	Code    int
	Message string
	Kwargs  map[string]any
	// Cause is the Go error behind this one, if any. It is logged, never sent.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the Go cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error of the same class or of one of
// its Magnum ancestors, so errors.Is(err, exception.New("ResourceNotFound",
// nil)) matches a ClusterNotFound.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Module != e.Module {
		return false
	}
	return IsSubclass(e.Class, t.Class)
}

// IsSubclass reports whether Magnum class name is cls or one of its
// subclasses.
func IsSubclass(name, cls string) bool {
	for n := name; n != ""; n = byName[n].Parent {
		if n == cls {
			return true
		}
	}
	return false
}

// Known reports whether name is a class of magnum.common.exception.
func Known(name string) bool {
	_, ok := byName[name]
	return ok
}

// New builds the Magnum exception class with kwargs, formatting the message
// as MagnumException.__init__ does. An unknown class name is a programming
// error and yields MagnumException.
func New(class string, kwargs map[string]any) *Error {
	info, ok := byName[class]
	if !ok {
		info = byName["MagnumException"]
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	return &Error{
		Module: ModuleMagnum, Class: info.Name, Code: codeOf(info, kwargs),
		Message: Format(info.Format, kwargs), Kwargs: kwargs,
	}
}

// WithMessage builds the Magnum exception class with an explicit message, as
// Python's Class(message=..., **kwargs) does. The message is still
// %-formatted with kwargs.
func WithMessage(class, message string, kwargs map[string]any) *Error {
	e := New(class, kwargs)
	e.Message = Format(message, e.Kwargs)
	e.Kwargs["message"] = message
	return e
}

func codeOf(info classInfo, kwargs map[string]any) int {
	if c, ok := kwargs["code"]; ok {
		switch v := c.(type) {
		case int:
			return v
		case float64:
			return int(v)
		}
	}
	return info.Code
}

// Builtin builds a Python builtins exception (TypeError, NotImplementedError,
// ValueError, ...) with one positional argument.
func Builtin(class, message string) *Error {
	return &Error{Module: ModuleBuiltins, Class: class, Code: 500, Message: message}
}

// DBConnectionError is oslo.db's DBConnectionError, which the Python
// conductor raises when its database cannot be reached or the connection
// was lost: magnum-api, which rebuilds only magnum.common.exception,
// receives it as oslo_messaging.RemoteError and answers 500, as with the
// Python conductor. cause is the Go error, logged but never sent.
func DBConnectionError(message string, cause error) *Error {
	return &Error{Module: ModuleOsloDB, Class: "DBConnectionError", Code: 500, Message: message, Cause: cause}
}

// Wrap returns err as an *Error: itself if it already is one, otherwise
// MagnumException with err's text as message and err as cause.
func Wrap(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := WithMessage("MagnumException", "%(reason)s", map[string]any{"reason": err.Error()})
	delete(out.Kwargs, "message")
	out.Kwargs = map[string]any{}
	out.Message = err.Error()
	out.Cause = err
	return out
}

var pyFormat = regexp.MustCompile(`%\((\w+)\)([sdirf])|%%`)

// Format applies Python's "%(name)s" formatting of a message with kwargs.
// Like MagnumException, a message whose keys are missing is returned
// unformatted rather than failing.
func Format(format string, kwargs map[string]any) string {
	missing := false
	out := pyFormat.ReplaceAllStringFunc(format, func(m string) string {
		if m == "%%" {
			return "%"
		}
		sub := pyFormat.FindStringSubmatch(m)
		v, ok := kwargs[sub[1]]
		if !ok {
			missing = true
			return m
		}
		switch sub[2] {
		case "d", "i":
			switch n := v.(type) {
			case int:
				return strconv.Itoa(n)
			case int64:
				return strconv.FormatInt(n, 10)
			case float64:
				return strconv.FormatInt(int64(n), 10)
			}
		}
		return PyStr(v)
	})
	if missing {
		return format
	}
	return out
}

// PyStr renders v as Python's str() would for the JSON-compatible values
// that travel in kwargs.
func PyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case error:
		return x.Error()
	default:
		return fmt.Sprint(x)
	}
}
