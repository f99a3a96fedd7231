package conductor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/objects"
	"github.com/openstack/magnum-conductor/drivers"
)

// A driver that refuses an operation before anything changes
// (drivers.Admitter, as the Cluster API driver does for a cluster another
// driver created) leaves the rows as they were: no claim, no status
// change, no notification, no driver call; the caller gets the driver's
// error as it is.
func TestAdmitRefusalChangesNothing(t *testing.T) {
	refusal := exception.NotSupportedMessage("cluster not managed by this driver")
	refusal.Cause = drivers.ErrNotManaged
	ops := map[string]func(e *env, c *objects.Cluster) error{
		"cluster_delete": func(e *env, c *objects.Cluster) error { return e.h.ClusterDelete(e.ctx, *c.UUID) },
		"cluster_update": func(e *env, c *objects.Cluster) error {
			_, err := e.h.ClusterUpdate(e.ctx, c, 4, c.HealthStatus, c.HealthStatusReason, false)
			return err
		},
		"cluster_resize": func(e *env, c *objects.Cluster) error {
			_, err := e.h.ClusterResize(e.ctx, c, 3, nil, e.nodegroup(c, "default-worker"))
			return err
		},
		"cluster_upgrade": func(e *env, c *objects.Cluster) error {
			_, err := e.h.ClusterUpgrade(e.ctx, c, e.template("test-os"), 1, e.nodegroup(c, "default-worker"), false)
			return err
		},
		"nodegroup_create": func(e *env, c *objects.Cluster) error {
			_, err := e.h.NodeGroupCreate(e.ctx, c, e.apiNodeGroup(c, "gpus"))
			return err
		},
		"nodegroup_update": func(e *env, c *objects.Cluster) error {
			ng := e.nodegroup(c, "default-worker")
			ng.MaxNodeCount = objects.Int(9)
			_, err := e.h.NodeGroupUpdate(e.ctx, c, ng)
			return err
		},
		"nodegroup_delete": func(e *env, c *objects.Cluster) error {
			return e.h.NodeGroupDelete(e.ctx, c, e.nodegroup(c, "default-worker"))
		},
		"credential_rotate":     func(e *env, c *objects.Cluster) error { return e.h.CredentialRotate(e.ctx, c) },
		"rotate_ca_certificate": func(e *env, c *objects.Cluster) error { _, err := e.h.RotateCACertificate(e.ctx, c); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			c := e.seed(e.ct, objects.CreateComplete, 2)
			e.drv.admitErr = refusal
			err := op(e, c)
			if !errors.Is(err, drivers.ErrNotManaged) {
				t.Fatalf("error %v, want the driver's refusal", err)
			}
			wantClass(t, err, "NotSupported", "cluster not managed by this driver")
			e.wantStatus(*c.UUID, objects.CreateComplete, "seeded")
			e.wantNGStatus(c, "default-worker", objects.CreateComplete, "", 2)
			e.wantNotes()
			if calls := e.drv.Calls(); len(calls) != 0 {
				t.Errorf("driver calls %v, want none", calls)
			}
			row := e.cluster(*c.UUID)
			if fmt.Sprint(row.UpdatedAt) != fmt.Sprint(c.UpdatedAt) {
				t.Errorf("cluster row written: updated_at %v, was %v", row.UpdatedAt, c.UpdatedAt)
			}

			// Admitted, the same operation goes ahead (the refusal was
			// the driver's, not the guard's).
			e.drv.admitErr = nil
			if err := op(e, e.cluster(*c.UUID)); err != nil {
				t.Fatalf("admitted: %v", err)
			}
			if calls := e.drv.Calls(); len(calls) == 0 {
				t.Error("admitted: no driver call")
			}
		})
	}
}
