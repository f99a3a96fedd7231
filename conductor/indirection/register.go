package indirection

import (
	"context"
	"encoding/json"

	"github.com/openstack/magnum-conductor/api/oslo"
)

// Keyword arguments of the six methods, named as indirection_api.Handler's
// parameters.
type classActionArgs struct {
	ObjName   string                     `json:"objname"`
	ObjMethod string                     `json:"objmethod"`
	ObjVer    string                     `json:"objver"`
	Args      []json.RawMessage          `json:"args"`
	Kwargs    map[string]json.RawMessage `json:"kwargs"`
}

type classActionVersionsArgs struct {
	ObjName        string                     `json:"objname"`
	ObjMethod      string                     `json:"objmethod"`
	ObjectVersions map[string]string          `json:"object_versions"`
	Args           []json.RawMessage          `json:"args"`
	Kwargs         map[string]json.RawMessage `json:"kwargs"`
}

type actionArgs struct {
	ObjInst   json.RawMessage            `json:"objinst"`
	ObjMethod string                     `json:"objmethod"`
	Args      []json.RawMessage          `json:"args"`
	Kwargs    map[string]json.RawMessage `json:"kwargs"`
}

type backportArgs struct {
	ObjInst       json.RawMessage `json:"objinst"`
	TargetVersion string          `json:"target_version"`
}

type backportVersionsArgs struct {
	ObjInst        json.RawMessage   `json:"objinst"`
	ObjectVersions map[string]string `json:"object_versions"`
}

// Methods lists the RPC methods Register binds.
func Methods() []string {
	return []string{"object_class_action", "object_class_action_versions", "object_action",
		"object_backport", "object_backport_versions"}
}

// Register binds the indirection methods of h into d (the first endpoint of
// Magnum's dispatcher, so these names go here and nowhere else).
func (h *Handler) Register(d *oslo.Dispatcher) error {
	for name, fn := range map[string]oslo.MethodFunc{
		"object_class_action": oslo.Method(func(ctx context.Context, a classActionArgs) (any, error) {
			return h.ObjectClassAction(ctx, a.ObjName, a.ObjMethod, a.ObjVer, a.Args, a.Kwargs)
		}),
		"object_class_action_versions": oslo.Method(func(ctx context.Context, a classActionVersionsArgs) (any, error) {
			return h.ObjectClassActionVersions(ctx, a.ObjName, a.ObjMethod, a.ObjectVersions, a.Args, a.Kwargs)
		}),
		"object_action": oslo.Method(func(ctx context.Context, a actionArgs) (any, error) {
			return h.ObjectAction(ctx, a.ObjInst, a.ObjMethod, a.Args, a.Kwargs)
		}),
		"object_backport": oslo.Method(func(ctx context.Context, a backportArgs) (any, error) {
			return h.ObjectBackport(ctx, a.ObjInst, a.TargetVersion)
		}),
		"object_backport_versions": oslo.Method(func(ctx context.Context, a backportVersionsArgs) (any, error) {
			return h.ObjectBackportVersions(ctx, a.ObjInst, a.ObjectVersions)
		}),
	} {
		if err := d.Handle(name, fn); err != nil {
			return err
		}
	}
	return nil
}
