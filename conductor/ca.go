package conductor

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/db"
	"github.com/openstack/magnum-conductor/drivers"
	sm "github.com/openstack/magnum-conductor/drivers/statusmachine"
)

// defaultCACertType is the CA sign_certificate uses when the certificate
// names none.
const defaultCACertType = "kubernetes"

// SignCertificate ports ca_conductor.Handler.sign_certificate: sign the
// CSR with the CA the certificate names (Kubernetes by default) and return
// the certificate with pem set. Nothing is stored.
func (h *Handlers) SignCertificate(ctx context.Context, c *objects.Cluster, cert *objects.Certificate) (*objects.Certificate, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	log := h.logger(ctx, "sign_certificate", *c.UUID)
	if cert == nil || cert.CSR == nil || *cert.CSR == "" {
		err := exception.InvalidParameterValue("certificate has no csr")
		log.Error("cannot sign certificate", "error", err)
		return nil, err
	}
	caType := defaultCACertType
	if cert.CACertType != nil && *cert.CACertType != "" {
		caType = *cert.CACertType
	}
	pem, err := h.certs.SignCSR(ctx, c, *cert.CSR, caType)
	if err != nil {
		log.Error("cannot sign certificate", "ca_cert_type", caType, "error", err)
		return nil, err
	}
	cert.PEM = objects.Str(pem)
	return cert, nil
}

// GetCACertificate ports ca_conductor.Handler.get_ca_certificate: return a
// new Certificate (project_id, user_id, cluster_uuid from the cluster) with
// the selected CA's PEM: "etcd", "front_proxy"/"front-proxy", else the
// Kubernetes CA.
func (h *Handlers) GetCACertificate(ctx context.Context, c *objects.Cluster, caCertType *string) (*objects.Certificate, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	log := h.logger(ctx, "get_ca_certificate", *c.UUID)
	pem, err := h.certs.GetCACertificate(ctx, c, objects.Deref(caCertType))
	if err != nil {
		log.Error("cannot read CA certificate", "ca_cert_type", objects.Deref(caCertType), "error", err)
		return nil, err
	}
	return &objects.Certificate{
		ProjectID: c.ProjectID, UserID: c.UserID, ClusterUUID: c.UUID, PEM: objects.Str(pem),
	}, nil
}

// certRefs are the four certificate references of a cluster.
type certRefs struct{ ca, magnum, etcd, frontProxy *string }

func refsOf(c *objects.Cluster) certRefs {
	return certRefs{c.CACertRef, c.MagnumCertRef, c.EtcdCACertRef, c.FrontProxyCACertRef}
}

func (r certRefs) setOn(c *objects.Cluster) {
	c.CACertRef, c.MagnumCertRef, c.EtcdCACertRef, c.FrontProxyCACertRef = r.ca, r.magnum, r.etcd, r.frontProxy
}

// list returns the non-empty references.
func (r certRefs) list() []string {
	var out []string
	for _, p := range []*string{r.ca, r.magnum, r.etcd, r.frontProxy} {
		if p != nil && *p != "" {
			out = append(out, *p)
		}
	}
	return out
}

// RotateCACertificate ports ca_conductor.Handler.rotate_ca_certificate:
// status guard, new CAs and client certificate, driver.rotate_ca_certificate,
// cluster UPDATE_IN_PROGRESS with the new references. Unlike Magnum it
// notifies update/pending before the driver (success comes from the
// periodic sync, as for every update), deletes the old certificates once
// the driver accepted the new ones and they are recorded, and on a driver
// failure keeps the old references and deletes the new certificates (but
// keeps both sets when the driver call was given up on, or the driver
// accepted the new CAs and they could not be recorded yet). A failure sets
// UPDATE_FAILED with the reason and notifies update/failure. The claim's
// status_reason (statusmachine.CARotationClaimed) marks the rotation until
// the new references are recorded, so that one interrupted in between is
// resumed or failed by the status sync (Resume), never completed on a
// back end that was not asked for it.
func (h *Handlers) RotateCACertificate(ctx context.Context, c *objects.Cluster) (*objects.Cluster, error) {
	if err := requireCluster(c); err != nil {
		return nil, err
	}
	uuid := *c.UUID
	log := h.logger(ctx, "rotate_ca_certificate", uuid)
	log.Info("rotating the cluster CAs")
	if !contains(allowUpdateStatus(), c.Status) {
		return nil, h.refuse(ctx, log, ActionUpdate, "Updating", c, c.Status)
	}
	// A driver that cannot roll CAs out, or refuses the cluster
	// (drivers.Admitter), is answered before the claim: the cluster stays
	// as it was (Magnum claims first and leaves a healthy cluster
	// UPDATE_FAILED, which then blocks its upgrades).
	if d, _, _, err := h.opDriver(ctx, log, c); err != nil {
		return nil, err
	} else if _, ok := d.(drivers.CARotator); !ok {
		err := exception.NotSupportedMessage("'rotate_ca_certificate' is not supported by this driver.")
		log.Warn("operation refused", "error", err)
		h.notify.ClusterEvent(ctx, ActionUpdate, OutcomeFailure, c)
		return nil, err
	}
	oldStatus, oldReason := c.Status, c.StatusReason
	if err := h.inTx(ctx, func(ctx context.Context, b *batch) error {
		// The claim's status_reason marks the rotation as not handed to its
		// driver yet, until the new references are recorded: the status
		// sync leaves it alone meanwhile, and resumes it past the bound
		// (statusmachine.CARotationClaimed).
		return h.claimClusterNoted(ctx, b, c, objects.UpdateInProgress, objects.Str(sm.CARotationClaimed),
			allowUpdateStatus())
	}); err != nil {
		if r := asRefusal(err); r != nil {
			return nil, h.refused(ctx, log, ActionUpdate, "Updating", c, r)
		}
		log.Error("cannot claim the cluster", "error", err)
		return nil, err
	}
	claimed := objects.Clone(c)
	old := refsOf(c)
	var fresh *certRefs
	fail := func(err error) (*objects.Cluster, error) {
		log.Error("CA rotation failed", "error", err)
		failed := objects.Clone(claimed)
		if fresh != nil {
			if abandoned(err) {
				// The driver may still be rolling the new CAs out: deleting
				// them could leave the cluster with CAs nobody holds.
				log.Warn("driver call given up on; the new certificates are kept, the old ones stay recorded",
					"new_refs", fresh.list())
			} else {
				cctx, cancel := h.cleanupCtx(ctx)
				h.certs.DeleteRefs(cctx, uuid, fresh.list())
				cancel()
			}
		}
		old.setOn(failed)
		failed.Status = objects.UpdateFailed
		failed.StatusReason = objects.Str(err.Error())
		_ = h.persist(ctx, log, objects.UpdateFailed, func(ctx context.Context, b *batch) error {
			return b.cluster(ctx, failed, db.ClusterCond{Read: claimed, Fields: db.ClusterGuardFields()})
		})
		cctx, cancel := h.cleanupCtx(ctx)
		defer cancel()
		h.notify.ClusterEvent(cctx, ActionUpdate, OutcomeFailure, failed)
		return nil, err
	}
	h.notify.ClusterEvent(ctx, ActionUpdate, OutcomePending, snapshot(c, oldStatus, oldReason))
	d, ct, ngs, err := h.opDriver(ctx, log, c)
	if err != nil {
		return fail(err)
	}
	rot, ok := d.(drivers.CARotator)
	if !ok {
		return fail(exception.NotSupportedMessage("'rotate_ca_certificate' is not supported by this driver."))
	}
	rotated := objects.Clone(c)
	oldList, err := h.certs.RotateForCluster(ctx, rotated)
	if err != nil {
		return fail(err)
	}
	n := refsOf(rotated)
	fresh = &n
	req := clusterRequest(rotated, ct, ngs)
	res, err := h.callDriver(ctx, log, "rotate_ca_certificate", func(ctx context.Context) (drivers.Result, error) {
		return rot.RotateCACertificate(ctx, req)
	})
	if err != nil {
		return fail(err)
	}
	recorded, err := h.recordRotation(ctx, log, claimed, rotated, res, oldList)
	if err != nil {
		return nil, err
	}
	if !recorded {
		return c, nil
	}
	*c = *rotated
	if decided := h.judge(ctx, log, uuid, res.Observation); decided != nil {
		return decided, nil
	}
	return c, nil
}

// recordRotation records the references of the new CAs the driver accepted
// (rotated, with res's stack_id) and clears the claim's marker, while the
// row is as claimed (its status_reason included: a resumption of the same
// rotation that started meanwhile wins, and this set is not recorded), then
// deletes the old certificates. recorded is false when the row changed;
// both sets are then kept.
func (h *Handlers) recordRotation(ctx context.Context, log *slog.Logger, claimed, rotated *objects.Cluster, res drivers.Result, oldList []string) (recorded bool, err error) {
	uuid := objects.Deref(claimed.UUID)
	if res.StackID != "" {
		rotated.StackID = objects.Str(res.StackID)
	}
	rotated.StatusReason = nil
	objects.MarkChanged(rotated, "status_reason")
	// The driver accepted the new CAs: they are the cluster's now, whether
	// or not the row says so yet. The old ones go once it does.
	// landed is set by the callback, which runs before persistThen returns
	// when the save lands at once, or later in persistThen's background
	// retry: never the named result, which the return below also writes.
	var landed atomic.Bool
	if err := h.persistThen(ctx, log, "new certificate references", func(ctx context.Context, b *batch) error {
		return b.cluster(ctx, rotated, db.ClusterCond{Read: claimed, Fields: append(db.ClusterGuardFields(), "status_reason")})
	}, func(ctx context.Context) {
		landed.Store(true)
		h.certs.DeleteRefs(ctx, uuid, oldList)
	}); err != nil {
		log.Error("the driver rotated the CAs but the new references are not recorded yet; both certificate sets are "+
			"kept until they are", "new_refs", refsOf(rotated).list(), "old_refs", oldList, "error", err)
		return false, err
	}
	recorded = landed.Load()
	if !recorded {
		// Another operation, or a resumption of this one, moved the
		// cluster on: the old references may still be the row's.
		log.Warn("the cluster changed during the rotation; both certificate sets are kept",
			"new_refs", refsOf(rotated).list(), "old_refs", oldList)
	}
	return recorded, nil
}
