package oslo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/pyjson"
)

// Call is one request as a method sees it.
type Call struct {
	// Method is the RPC method name.
	Method string
	// Class is the Python class name used in TypeError messages
	// ("Handler" for every magnum conductor endpoint).
	Class string
	// Args are the keyword arguments in the order they were sent.
	Args []Kwarg
}

// Kwarg is one keyword argument, undecoded.
type Kwarg struct {
	Name  string
	Value json.RawMessage
}

// MethodFunc serves one RPC method. The result must be JSON-marshalable
// (objects already turned into primitives).
type MethodFunc func(ctx context.Context, call *Call) (any, error)

// Dispatcher is the table from oslo method name to handler, with the
// endpoint target version (oslo's default target: version 1.0, no
// namespace).
type Dispatcher struct {
	methods map[string]MethodFunc
	class   string
	major   int
	minor   int
	rev     int
	observe Observer
}

// Observer is told about every request the dispatcher handled: the method
// name (UnknownMethod when the request named no registered method), how
// long the handler ran, and the error it returned.
type Observer func(method string, took time.Duration, err error)

// UnknownMethod is the method name given to an Observer for requests that
// were refused before a registered method was found, so that metrics labels
// stay bounded whatever callers send.
const UnknownMethod = "(unknown)"

// Observe sets the observer. Call it before the server starts.
func (d *Dispatcher) Observe(o Observer) { d.observe = o }

// NewDispatcher returns an empty table for endpoints of version 1.0 with no
// namespace and Python class name "Handler".
func NewDispatcher() *Dispatcher {
	return &Dispatcher{methods: map[string]MethodFunc{}, class: "Handler", major: 1}
}

// Handle registers fn for method. Registering a name twice or a private
// ("_") name is a programming error and returns an error.
func (d *Dispatcher) Handle(method string, fn MethodFunc) error {
	if method == "" || strings.HasPrefix(method, "_") {
		return fmt.Errorf("oslo: method name %q is not allowed", method)
	}
	if _, dup := d.methods[method]; dup {
		return fmt.Errorf("oslo: method %q registered twice", method)
	}
	d.methods[method] = fn
	return nil
}

// PingMethod is the method oslo.messaging's dispatcher adds with
// [DEFAULT] rpc_ping_enabled, for monitoring probes.
const PingMethod = "oslo_rpc_server_ping"

// HandlePing registers PingMethod, which answers "pong" whatever its
// arguments, as oslo's PingEndpoint does.
func (d *Dispatcher) HandlePing() error {
	return d.Handle(PingMethod, func(context.Context, *Call) (any, error) { return "pong", nil })
}

// Methods lists the registered names, sorted.
func (d *Dispatcher) Methods() []string {
	out := make([]string, 0, len(d.methods))
	for m := range d.methods {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// pyTypeName is Python's type(x).__name__ for a JSON value.
func pyTypeName(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "NoneType"
	}
	switch raw[0] {
	case '{':
		return "dict"
	case '[':
		return "list"
	case '"':
		return "str"
	case 't', 'f':
		return "bool"
	case 'n':
		return "NoneType"
	default:
		if bytes.ContainsAny(raw, ".eE") {
			return "float"
		}
		return "int"
	}
}

// parseVersionPart is Python's int() on a version component.
func parseVersionPart(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, exception.Builtin("ValueError", fmt.Sprintf("invalid literal for int() with base 10: '%s'", s))
	}
	return n, nil
}

// compatible is oslo's version_is_compatible(target, requested).
func (d *Dispatcher) compatible(version string) (bool, error) {
	parts := strings.Split(version, ".")
	if len(parts) < 2 {
		return false, exception.Builtin("IndexError", "list index out of range")
	}
	major, err := parseVersionPart(parts[0])
	if err != nil {
		return false, err
	}
	minor, err := parseVersionPart(parts[1])
	if err != nil {
		return false, err
	}
	rev := 0
	if len(parts) > 2 {
		if rev, err = parseVersionPart(parts[2]); err != nil {
			return false, err
		}
	}
	if major != d.major || minor > d.minor || (minor == d.minor && rev > d.rev) {
		return false, nil
	}
	return true, nil
}

// Dispatch runs the request's method as oslo's RPCDispatcher.dispatch does:
// version and namespace first (UnsupportedVersion), then the method
// (NoSuchMethod, private names refused), then the arguments.
func (d *Dispatcher) Dispatch(ctx context.Context, req *Request) (any, error) {
	if d.observe == nil {
		_, res, err := d.dispatch(ctx, req)
		return res, err
	}
	start := time.Now()
	method, res, err := d.dispatch(ctx, req)
	d.observe(method, time.Since(start), err)
	return res, err
}

// dispatch does Dispatch's work and also returns the registered method it
// ran, or UnknownMethod.
func (d *Dispatcher) dispatch(ctx context.Context, req *Request) (string, any, error) {
	version := "1.0"
	if req.Version != nil {
		if err := json.Unmarshal(req.Version, &version); err != nil {
			return UnknownMethod, nil, exception.Builtin("AttributeError",
				fmt.Sprintf("'%s' object has no attribute 'split'", pyTypeName(req.Version)))
		}
	}
	method, isStr := req.MethodName()
	display := method
	if !isStr {
		display = "None"
		if len(req.Method) > 0 {
			display = string(req.Method)
		}
	}
	ok, err := d.compatible(version)
	if err != nil {
		return UnknownMethod, nil, err
	}
	if !ok || req.Namespace != nil {
		return UnknownMethod, nil, unsupportedVersion(version, display)
	}
	if !isStr {
		return UnknownMethod, nil, exception.Builtin("TypeError",
			fmt.Sprintf("attribute name must be string, not '%s'", pyTypeName(req.Method)))
	}
	fn, found := d.methods[method]
	if !found || strings.HasPrefix(method, "_") {
		return UnknownMethod, nil, noSuchMethod(method)
	}
	args, err := decodeKwargs(req.Args)
	if err != nil {
		return method, nil, err
	}
	res, err := fn(ctx, &Call{Method: method, Class: d.class, Args: args})
	return method, res, err
}

// decodeKwargs reads the args object keeping the order of its keys. Args
// that are not an object fail as oslo's "args.items()" does.
func decodeKwargs(raw json.RawMessage) ([]Kwarg, error) {
	if raw == nil {
		return nil, nil
	}
	if t := pyTypeName(raw); t != "dict" {
		return nil, exception.Builtin("AttributeError", fmt.Sprintf("'%s' object has no attribute 'items'", t))
	}
	if string(bytes.TrimSpace(raw)) == "{}" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, exception.Builtin("ValueError", "malformed args: "+err.Error())
	}
	var out []Kwarg
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, exception.Builtin("ValueError", "malformed args: "+err.Error())
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, exception.Builtin("ValueError", "malformed args: "+err.Error())
		}
		out = append(out, Kwarg{Name: name, Value: v})
	}
	return out, nil
}

// argSpec describes the keyword arguments of a Method's struct type.
type argSpec struct {
	names    []string // declared order
	required map[string]bool
}

func specOf(t reflect.Type) (argSpec, error) {
	spec := argSpec{required: map[string]bool{}}
	if t == nil || t.Kind() != reflect.Struct {
		return spec, fmt.Errorf("oslo.Method: argument type %v is not a struct", t)
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		spec.names = append(spec.names, name)
		optional := strings.Contains(","+opts+",", ",omitempty,") || f.Tag.Get("oslo") == "optional"
		if !optional {
			spec.required[name] = true
		}
	}
	return spec, nil
}

// pyList joins names as CPython does in "missing N required positional
// arguments: 'a', 'b', and 'c'".
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	switch len(q) {
	case 1:
		return q[0]
	case 2:
		return q[0] + " and " + q[1]
	default:
		return strings.Join(q[:len(q)-1], ", ") + ", and " + q[len(q)-1]
	}
}

// NoArgs is the argument type of methods without keyword arguments.
type NoArgs struct{}

// Method adapts a typed handler to the dispatch table. T is a struct whose
// json tags name the keyword arguments; a tag with ",omitempty" (or
// `oslo:"optional"`) marks an argument with a Python default. Object
// arguments should be json.RawMessage fields. Unknown and missing names fail
// with Python's TypeError messages, e.g.
// "Handler.ping_conductor() got an unexpected keyword argument 'bogus'".
//
// T's tags are read once, here; dispatch itself is a map lookup and a
// json.Unmarshal.
func Method[T any](fn func(ctx context.Context, args T) (any, error)) MethodFunc {
	var zero T
	spec, specErr := specOf(reflect.TypeOf(zero))
	known := map[string]bool{}
	for _, n := range spec.names {
		known[n] = true
	}
	return func(ctx context.Context, call *Call) (any, error) {
		if specErr != nil {
			return nil, exception.Builtin("TypeError", specErr.Error())
		}
		qual := call.Class + "." + call.Method + "()"
		seen := map[string]bool{}
		var ob orderedObject
		for _, kw := range call.Args {
			if !known[kw.Name] {
				return nil, exception.Builtin("TypeError",
					fmt.Sprintf("%s got an unexpected keyword argument '%s'", qual, kw.Name))
			}
			seen[kw.Name] = true
			// The value is a member of the decoded (valid) message: copied
			// as it is, only to be unmarshaled below.
			ob.add(kw.Name, pyjson.Raw(kw.Value))
		}
		body, err := ob.bytes()
		if err != nil {
			return nil, exception.Builtin("TypeError", err.Error())
		}
		var missing []string
		for _, n := range spec.names {
			if spec.required[n] && !seen[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 1 {
			return nil, exception.Builtin("TypeError",
				fmt.Sprintf("%s missing 1 required positional argument: %s", qual, pyList(missing)))
		} else if len(missing) > 1 {
			return nil, exception.Builtin("TypeError",
				fmt.Sprintf("%s missing %d required positional arguments: %s", qual, len(missing), pyList(missing)))
		}
		var args T
		if len(call.Args) == 0 {
			return fn(ctx, args) // what unmarshaling {} would give
		}
		if err := json.Unmarshal(body, &args); err != nil {
			return nil, exception.Builtin("TypeError", fmt.Sprintf("%s bad argument: %v", qual, err))
		}
		return fn(ctx, args)
	}
}
