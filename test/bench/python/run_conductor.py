#!/usr/bin/python3
"""Runs Debian's Python magnum-conductor (15.0.1) as the benchmark's reference.

Three things are changed in the Python process, and only these:

* Magnum 15.0.1 creates a Keystone trustee and trust at the start of
  cluster_create. There is no Keystone on the benchmark machine, so that one
  step is replaced by a no-op (the benchmark output says so).
* Magnum 15.0.1's database layer asks Keystone for the trustee domain's id
  on every query filtered by project (Magnum master no longer does). Here it
  is [trust]/trustee_domain_id, or "magnum-trustees" when that is unset, so
  that users of other domains see their project's rows.
* Magnum 15.0.1 ships Heat drivers only. A minimal out-of-tree driver that
  completes at once (the counterpart of our simulated driver with zero delay)
  is returned for every cluster template.

Everything else (RPC server, object indirection, database, certificates,
notifications, periodic tasks) is the unmodified Python code.

Usage: run_conductor.py --config-file magnum.conf
"""
import sys

from magnum.common import keystone
from magnum.conductor.handlers.common import trust_manager
import magnum.conf
from magnum.drivers.common import driver as driver_mod
from magnum.objects import fields


def _no_trust(osc, cluster):
    return None


trust_manager.create_trustee_and_trust = _no_trust
keystone.KeystoneClientV3.trustee_domain_id = property(
    lambda self: magnum.conf.CONF.trust.trustee_domain_id or
    'magnum-trustees')


class ZeroDelayDriver(driver_mod.Driver):
    """A driver whose every operation completes at once."""

    @property
    def provides(self):
        return [{'server_type': 'vm', 'os': 'simulated', 'coe': 'kubernetes'}]

    def update_cluster_status(self, context, cluster, use_admin_ctx=False):
        # What a backend that finished at once reports on the next sync:
        # every *_IN_PROGRESS becomes *_COMPLETE (the periodic task then
        # destroys a DELETE_COMPLETE cluster, as with the Heat driver).
        if not cluster.status.endswith('_IN_PROGRESS'):
            return
        done = cluster.status.replace('_IN_PROGRESS', '_COMPLETE')
        for ng in cluster.nodegroups:
            if ng.status and ng.status.endswith('_IN_PROGRESS'):
                ng.status = ng.status.replace('_IN_PROGRESS', '_COMPLETE')
                ng.save()
        cluster.status = done
        cluster.save()

    def create_cluster(self, context, cluster, cluster_create_timeout):
        cluster.stack_id = 'zero-delay'
        # magnum-api refuses new nodegroups until the API address is known.
        cluster.api_address = 'https://192.0.2.1:6443'
        cluster.status = fields.ClusterStatus.CREATE_COMPLETE

    def update_cluster(self, context, cluster, scale_manager=None,
                       rollback=False):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def delete_cluster(self, context, cluster):
        cluster.status = fields.ClusterStatus.DELETE_COMPLETE

    def resize_cluster(self, context, cluster, resize_manager, node_count,
                       nodes_to_remove, nodegroup=None):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def upgrade_cluster(self, context, cluster, cluster_template,
                        max_batch_size, nodegroup, scale_manager=None,
                        rollback=False):
        cluster.status = fields.ClusterStatus.UPDATE_COMPLETE

    def rotate_ca_certificate(self, context, cluster):
        # Nothing to roll out: the conductor has made the new CAs, and the
        # next status sync completes the update.
        return None

    def create_federation(self, context, federation):
        raise NotImplementedError()

    def update_federation(self, context, federation):
        raise NotImplementedError()

    def delete_federation(self, context, federation):
        raise NotImplementedError()

    def create_nodegroup(self, context, cluster, nodegroup):
        nodegroup.status = fields.ClusterStatus.CREATE_COMPLETE

    def update_nodegroup(self, context, cluster, nodegroup):
        nodegroup.status = fields.ClusterStatus.UPDATE_COMPLETE

    def delete_nodegroup(self, context, cluster, nodegroup):
        nodegroup.destroy()


def _get_driver(cls, server_type, os, coe, *args, **kwargs):
    return ZeroDelayDriver()


driver_mod.Driver.get_driver = classmethod(_get_driver)

if __name__ == '__main__':
    from magnum.cmd import conductor
    sys.exit(conductor.main())
