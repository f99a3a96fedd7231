package conductor

import (
	"context"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
)

const notImplemented = "This feature is not yet implemented."

// FederationCreate ports federation_conductor.Handler.federation_create,
// which raises NotImplementedError.
func (h *Handlers) FederationCreate(ctx context.Context, f *objects.Federation, createTimeout *int) error {
	h.logger(ctx, "federation_create", "").Info("federation operations are not implemented")
	return exception.NotImplemented(notImplemented)
}

// FederationUpdate ports federation_conductor.Handler.federation_update,
// which raises NotImplementedError.
func (h *Handlers) FederationUpdate(ctx context.Context, f *objects.Federation, rollback bool) error {
	h.logger(ctx, "federation_update", "").Info("federation operations are not implemented")
	return exception.NotImplemented(notImplemented)
}

// FederationDelete ports federation_conductor.Handler.federation_delete,
// which raises NotImplementedError.
func (h *Handlers) FederationDelete(ctx context.Context, uuid string) error {
	h.logger(ctx, "federation_delete", "").Info("federation operations are not implemented")
	return exception.NotImplemented(notImplemented)
}
