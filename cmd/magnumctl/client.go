package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openstack/magnum-conductor/api/conductorapi"
	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/api/oslo"
	"github.com/openstack/magnum-conductor/api/request"
	"github.com/openstack/magnum-conductor/config"
	"github.com/openstack/magnum-conductor/internal/osloopts"
)

// session is one connection to the conductor topic.
type session struct {
	g      *globals
	api    *conductorapi.API
	client *oslo.Client
	topic  string
	// versionsMethod: the peer serves object_class_action_versions, not
	// object_class_action; peer: the versions it takes where older than
	// magnumctl's (versions.go).
	versionsMethod bool
	peer           map[string]string
}

// mutatingCallLimit bounds the answer to a request that changes something
// (the conductor answers once the driver took the operation up, within
// its driver_call_timeout, 300 s by default); meanwhile oslo's call
// monitor has the conductor report every --timeout/2 that it is at work.
const mutatingCallLimit = 10 * time.Minute

// change is the API for requests that change something: calls that wait
// up to mutatingCallLimit while the conductor reports progress.
func (s *session) change() *conductorapi.API {
	return s.api.WithCallOptions(oslo.CallOptions{Timeout: mutatingCallLimit, CallMonitorTimeout: s.g.timeout})
}

// connect authenticates with Keystone when configured (once per run),
// checks that the broker is reachable and opens a client on the conductor
// topic. Each call is bounded by its own timeout (--timeout, or
// mutatingCallLimit for a change), not by ctx.
func (g *globals) connect(ctx context.Context) (*session, error) {
	cfg, err := config.Load(g.configFiles, g.configDirs)
	if err != nil {
		return nil, err
	}
	// The broker is reached as the conductor reaches it ([oslo_messaging_rabbit]:
	// TLS, quorum and stream queues, queue names).
	opts := osloopts.From(cfg)
	opts.RPCResponseTimeout = g.timeout
	topic := cfg.Conductor.Topic
	if g.transportURL != "" {
		opts.TransportURL = g.transportURL
	}
	if g.exchange != "" {
		opts.ControlExchange = g.exchange
	}
	if g.topic != "" {
		topic = g.topic
	}
	// Calls and casts wait for the broker until --timeout, as oslo's do;
	// a command line tool should rather say at once that it is unreachable.
	rctx, cancel := context.WithTimeout(ctx, g.timeout)
	err = oslo.Reachable(rctx, opts)
	cancel()
	if err != nil {
		return nil, err
	}
	if g.creds != nil && g.ident == nil {
		actx, cancel := context.WithTimeout(ctx, g.timeout)
		g.ident, err = authenticate(actx, g.creds, g.timeout)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	client, err := oslo.NewClient(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	return &session{g: g, api: conductorapi.New(client, topic), client: client, topic: topic}, nil
}

// requestContext attaches the request context magnumctl sends: with
// Keystone auth, magnum-api's for the token (allTenants false keeps an
// admin's request to its own project); without, admin and all tenants,
// unless --project-id makes it a project member's request.
func (g *globals) requestContext(ctx context.Context, allTenants bool) context.Context {
	if g.ident != nil {
		return request.With(ctx, g.ident.context(allTenants))
	}
	rc := &request.Context{
		IsAdmin: g.projectID == "", AllTenants: g.projectID == "",
		ProjectID: g.projectID, UserID: g.userID, Roles: []string{"admin"},
		RequestID: request.NewRequestID(),
	}
	if g.projectID != "" {
		rc.Roles = []string{"member"}
	}
	return request.With(ctx, rc)
}

// isAdmin reports whether requests are made as an admin (Magnum's default
// policy: the admin role).
func (g *globals) isAdmin() bool {
	if g.ident != nil {
		return slices.Contains(g.ident.roles, "admin")
	}
	return g.projectID == ""
}

// projectID and userID are those the request is made for ("" for none).
func (g *globals) requestProject() (projectID, userID string) {
	if g.ident != nil {
		return g.ident.projectID, g.ident.userID
	}
	return g.projectID, g.userID
}

func (s *session) close() { _ = s.client.Close() }

// classAction runs Object.method(args...) in the conductor (what
// magnum-api's objects do through the indirection API).
func classAction[T objects.Object](ctx context.Context, s *session, name, method string, args ...any) (T, error) {
	var zero T
	raw, err := s.objectClassAction(ctx, name, method, args, map[string]any{})
	if err != nil {
		return zero, err
	}
	return objects.DecodeAs[T](raw)
}

// classList is classAction for methods that return a list of objects.
func classList[T objects.Object](ctx context.Context, s *session, name, method string, args []any, kwargs map[string]any) ([]T, error) {
	raw, err := s.objectClassAction(ctx, name, method, args, kwargs)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("decoding %s.%s: %w", name, method, err)
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		o, err := objects.DecodeAs[T](it)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// instanceAction runs o.method() in the conductor and applies the updates
// it returns, as oslo.versionedobjects does for object_action.
func instanceAction[T objects.Object](ctx context.Context, s *session, o T, method string) (T, error) {
	var zero T
	var prim json.RawMessage
	var updates map[string]json.RawMessage
	err := s.send([]objects.Object{o}, func(p []json.RawMessage) (err error) {
		prim = p[0]
		updates, _, err = s.api.ObjectAction(ctx, prim, method, []any{}, map[string]any{})
		return err
	})
	if err != nil {
		return zero, err
	}
	if method == "destroy" {
		return o, nil
	}
	var data map[string]any
	if err := json.Unmarshal(prim, &data); err != nil {
		return zero, err
	}
	fields, _ := data[objects.KeyData].(map[string]any)
	for k, v := range updates {
		if k == "obj_what_changed" {
			continue
		}
		var val any
		if err := json.Unmarshal(v, &val); err != nil {
			return zero, err
		}
		fields[k] = val
	}
	delete(data, objects.KeyChanges)
	return objects.DecodeAs[T](data)
}

// explain turns an error into one line that says what came back and what
// it means for the operator.
func explain(err error) string {
	return oneLine(explainLines(err))
}

// oneLine folds a message onto one line (an exception's message can hold
// newlines).
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// changeMethods are the RPC methods that change something.
var changeMethods = map[string]bool{
	"cluster_create": true, "cluster_update": true, "cluster_delete": true, "cluster_resize": true,
	"cluster_upgrade": true, "nodegroup_create": true, "nodegroup_update": true, "nodegroup_delete": true,
	"credential_rotate": true, "rotate_ca_certificate": true,
}

func explainLines(err error) string {
	var te *oslo.TimeoutError
	if errors.As(err, &te) {
		if changeMethods[te.Method] {
			return err.Error() + " (the conductor did not take the request up in time, or stopped reporting progress: " +
				"it may still carry it out; check with magnumctl cluster show)"
		}
		return err.Error() + " (no conductor answered in time: is magnum-conductor running, and on the same " +
			"transport_url, control_exchange and [conductor]/topic?)"
	}
	var ee *exception.Error
	if errors.As(err, &ee) {
		hint := ""
		switch {
		case exception.IsSubclass(ee.Class, exception.ClassResourceNotFound):
			hint = "nothing with that name or uuid is visible to this project"
		case exception.IsSubclass(ee.Class, exception.ClassNotSupported):
			hint = "the resource's current status or its driver does not allow this operation"
		case exception.IsSubclass(ee.Class, exception.ClassConflict):
			hint = "it conflicts with an existing resource"
		case exception.IsSubclass(ee.Class, exception.ClassInvalid):
			hint = "a parameter was refused"
		case ee.Module == exception.ModuleDispatcher:
			hint = "the conductor does not serve this method or version"
		case ee.Class == "NotImplementedError":
			hint = "the conductor does not implement this feature"
		case ee.Module == exception.ModuleOsloDB && ee.Class == "DBConnectionError":
			hint = "the conductor cannot reach its database"
		}
		line := fmt.Sprintf("%s.%s: %s", ee.Module, ee.Class, ee.Message)
		if hint != "" {
			line += " (" + hint + ")"
		}
		return line
	}
	return err.Error()
}

// session adapts a command body that needs a connection to cobra's RunE:
// it connects, attaches the request context and closes the connection.
func (g *globals) session(fn func(ctx context.Context, s *session, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := g.connect(cmd.Context())
		if err != nil {
			return err
		}
		defer s.close()
		return fn(g.requestContext(cmd.Context(), true), s, cmd, args)
	}
}
