package conductor

import (
	"context"
	"errors"
	"fmt"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// CredentialRotate ports credential_conductor.Handler.credential_rotate:
// status guard (ALLOWED_CLUSTER_STATES), then driver.rotate_credential. A
// driver without credential rotation answers NotSupported("Credential
// rotation is not supported by driver."). The conductor changes no status.
func (h *Handlers) CredentialRotate(ctx context.Context, c *objects.Cluster) error {
	if err := requireCluster(c); err != nil {
		return err
	}
	log := h.logger(ctx, "credential_rotate", *c.UUID)
	if !contains(allowedNodeGroupStates(), c.Status) {
		// Magnum prints its module name here; name the operation instead.
		err := exception.NotSupported(fmt.Sprintf("credential_rotate when cluster status is \"%s\"", c.Status))
		log.Warn("operation refused", "status", c.Status, "error", err)
		return err
	}
	d, ct, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return err
	}
	unsupported := exception.NotSupportedMessage("Credential rotation is not supported by driver.")
	rot, ok := d.(drivers.CredentialRotator)
	if !ok {
		log.Warn("credential rotation refused", "error", unsupported)
		return unsupported
	}
	req := clusterRequest(c, ct, ngs)
	err = h.callDriverNoResult(ctx, log, "rotate_credential", func(ctx context.Context) error {
		return rot.RotateCredential(ctx, req)
	})
	if errors.Is(err, exception.NotImplemented("")) {
		err = unsupported
	}
	if err != nil {
		log.Error("credential rotation failed", "error", err)
		return err
	}
	return nil
}
